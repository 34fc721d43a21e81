"""Rollout workers: play a step's groups through the episode driver, then score every turn.

A worker holds a sandbox pool and a critic (built where the worker lives, by `aac.assembly`) and
reaches the actor's engine as a collaborator handed to it. Every
critic judgment of its share of the step goes to the critic in one batch after the episodes end
(rewards do not change an episode, so nothing is lost by waiting). What comes back is plain data
(`RolloutBatch`): per turn the prompt and generated token ids, the sampling log-probs, the step
record's essentials, the reward and the adapter version; the critic's counters for this call only.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Optional

from aac.config import RewardConfig, RolloutConfig
from aac.engines import Engine
from aac.env.protocol import ProtocolConfig
from aac.phase import Phase
from aac.rewards.schedule import episode_rewards, format_penalties
from aac.rollout.driver import EpisodeDriver, EpisodeSpec, PlayedEpisode, SamplingSpec
from aac.rollout.judgments import score_each, turn_judgments
from aac.rollout.record import interactive_record

if TYPE_CHECKING:
    from aac.critic import Critic
    from aac.sandbox import SandboxPool

log = logging.getLogger(__name__)


@dataclass
class ScoredTurn:
    """One actor generation: what the learner trains on, and what the logs show."""

    phase: Phase
    prompt_ids: list[int]
    token_ids: list[int]
    logprobs: list[float]
    adapter_version: Optional[int]
    parse_ok: bool
    reward: float = 0.0
    format_penalty: float = 0.0  # the part of `reward` that is its format penalty (0 or -p_parse)
    judged: Optional[str] = None  # the critic judgment this turn's reward reads (None: none)
    score: Optional[float] = None  # its score (None also when the critic gave none: masked)
    words: int = 0


@dataclass
class ScoredEpisode:
    key: int  # the episode's key in its rollout call (it seeded the episode's turns)
    uid: str
    group: int
    turns: list[ScoredTurn]
    num_queries: int
    concluded: bool
    timed_out: bool
    description: str
    record: dict = field(default_factory=dict)  # the eval harness's record of the episode (aac.eval's form)

    @property
    def total_reward(self) -> float:
        return sum(t.reward for t in self.turns)


@dataclass
class RolloutBatch:
    episodes: list[ScoredEpisode]
    timings: dict[str, float] = field(default_factory=dict)  # generation / critic / sandbox seconds
    critic_counts: dict[str, float] = field(default_factory=dict)  # this batch's counters (see critic.health)
    generated_tokens: int = 0
    engine_calls: int = 0
    idle_slots: int = 0
    # episodes each engine replica played (rollout.num_engines > 1; empty for one engine)
    replica_episodes: dict[int, int] = field(default_factory=dict)

    @classmethod
    def merge(cls, batches: list[RolloutBatch]) -> RolloutBatch:
        """One batch from several workers' (run side by side): episodes in key order, counts summed,
        each timing the longest worker's, the critic's counters with their rates recomputed."""
        from aac.critic import with_rates

        merged = cls(episodes=sorted((ep for b in batches for ep in b.episodes), key=lambda e: e.key))
        for b in batches:
            merged.generated_tokens += b.generated_tokens
            merged.engine_calls += b.engine_calls
            merged.idle_slots += b.idle_slots
            for i, n in b.replica_episodes.items():
                merged.replica_episodes[i] = merged.replica_episodes.get(i, 0) + n
            for k, v in b.timings.items():
                merged.timings[k] = max(merged.timings.get(k, 0.0), v)
            for k, v in b.critic_counts.items():
                merged.critic_counts[k] = merged.critic_counts.get(k, 0) + v
        merged.critic_counts = with_rates(merged.critic_counts) if merged.critic_counts else {}
        return merged


class _TimedCaller:
    """The sandbox caller handed to episodes; it adds up the wall time spent in calls (the driver
    runs calls of different episodes at once, from threads: their times add up)."""

    def __init__(self, pool: SandboxPool, spread_list: bool):
        self.pool, self.spread_list = pool, spread_list
        self.seconds = 0.0
        self._lock = threading.Lock()

    def __call__(self, source: str, input_str: str, timeout_s: float):
        t0 = time.perf_counter()
        try:
            return self.pool.call(source, input_str, timeout_s=timeout_s, spread_list=self.spread_list)
        finally:
            with self._lock:
                self.seconds += time.perf_counter() - t0


class _Judging:
    """The critic's judgments of a worker's played episodes. With `overlap` (`rollout.critic_overlap`)
    each collect's finished episodes go to the critic at once, each batch in a thread of its own, while the
    others still play (one thread ran the batches one after another: on a latency-bound engine the last ones
    waited after the play); without it every judgment goes in one batch after the last episode (better
    batches, none of the critic's time hidden). `busy_s`: wall seconds with a judgment batch running."""

    def __init__(self, critic: Critic, rewards: RewardConfig, *, overlap: bool, episodes: int):
        self.critic, self.rewards = critic, rewards
        self.busy_s, self._running, self._since = 0.0, 0, 0.0
        self._busy = threading.Lock()
        # a batch per send at most, and a send per episode at most: threads start as batches come
        self._pool = ThreadPoolExecutor(max(1, episodes), thread_name_prefix="critic") if overlap else None
        self._sent: dict[int, tuple[list[Any], Future, int]] = {}  # key -> judgments, their batch, offset

    def _score(self, judgments: list[Any]) -> list[Optional[float]]:
        with self._busy:
            if not self._running:
                self._since = time.perf_counter()
            self._running += 1
        try:
            return score_each(self.critic, judgments)
        finally:
            with self._busy:
                self._running -= 1
                if not self._running:
                    self.busy_s += time.perf_counter() - self._since

    def _asks(self, played: list[PlayedEpisode]) -> list[list[Any]]:
        return [turn_judgments(p.spec.instance, p.turns, self.rewards) for p in played]

    def send(self, finished: list[PlayedEpisode]) -> None:
        """The driver's `on_done`: judge these episodes now (with overlap)."""
        if self._pool is None:
            return
        asks = self._asks(finished)
        batch = self._pool.submit(self._score, [j for per_episode in asks for j in per_episode])
        offset = 0
        for p, js in zip(finished, asks):
            self._sent[p.spec.key] = (js, batch, offset)
            offset += len(js)

    def scores(self, played: list[PlayedEpisode]) -> list[tuple[list[Any], list[Optional[float]]]]:
        """Per episode, its judgments (None where a turn needs none) and their scores."""
        if self._pool is None:
            asks = self._asks(played)
            flat = iter(self._score([j for per_episode in asks for j in per_episode]))
            return [(js, [next(flat) for _ in js]) for js in asks]
        try:
            return [(js, batch.result()[offset:offset + len(js)])
                    for js, batch, offset in (self._sent[p.spec.key] for p in played)]
        finally:
            self._pool.shutdown()


class RolloutWorker:
    """`run` plays groups of episodes against the actor's engine and scores them with the critic.

    Its sections: `rollout` (sampling, live episodes) and `rewards`; its collaborators: the protocol,
    the actor's engine, its sandbox pool (calls follow the env's argument rule, `spread_list`) and its
    critic (both built where the worker lives: `aac.assembly`)."""

    def __init__(self, rollout: RolloutConfig, rewards: RewardConfig, protocol: ProtocolConfig, actor_engine: Engine,
                 pool: SandboxPool, critic: Critic, *, spread_list: bool):
        self.rollout, self.rewards, self.protocol = rollout, rewards, protocol
        self.engine, self.pool, self.critic, self.spread_list = actor_engine, pool, critic, spread_list

    def close(self) -> None:
        self.critic.close()
        self.pool.close()

    def run(self, specs: list[EpisodeSpec], *, adapter: Optional[str], seed: int,
            sampling: Optional[SamplingSpec] = None, protocol: Optional[ProtocolConfig] = None) -> RolloutBatch:
        """Play each episode to its end (continuous batching), then score every turn.

        `sampling` and `protocol` replace the training ones (held-out evaluation plays the eval setting)."""
        r, started = self.rollout, time.perf_counter()
        self.pool.keep_warm(len({s.instance.code for s in specs}))  # every live function stays warm
        caller = _TimedCaller(self.pool, self.spread_list)
        sampling = sampling or SamplingSpec.from_config(r, r.top_p, logprobs=True)
        driver = EpisodeDriver(self.engine, protocol or self.protocol, caller, sampling, adapter=adapter,
                               seed=seed, max_live=r.max_live_episodes)
        before = self.critic.counts()
        judge = _Judging(self.critic, self.rewards, overlap=bool(r.critic_overlap), episodes=len(specs))
        played, stats = driver.play(specs, on_done=judge.send)
        t0 = time.perf_counter()
        out = [self._result(p, js, scores) for p, (js, scores) in zip(played, judge.scores(played))]
        t_critic = time.perf_counter() - t0  # what the step waits for the critic once the episodes are played
        after = self.critic.counts()
        return RolloutBatch(
            episodes=out,
            timings={"generation": stats.generation_s, "critic": t_critic, "critic_busy": judge.busy_s,
                     "sandbox": caller.seconds,
                     # the rollout's own seconds (played and scored), whenever the driver waited for it
                     "played": time.perf_counter() - started},
            critic_counts={k: after[k] - before.get(k, 0) for k in after},
            generated_tokens=stats.generated_tokens, engine_calls=stats.engine_calls, idle_slots=stats.idle_slots,
            replica_episodes=dict(Counter(p.turns[0].result.replica for p in played
                                          if p.turns and p.turns[0].result.replica is not None)),
        )

    def _result(self, played: PlayedEpisode, judgments: list[Any], step_scores: list[Optional[float]]) -> ScoredEpisode:
        steps = [t.step for t in played.turns]
        rewards = episode_rewards(steps, step_scores, self.rewards)
        penalties = format_penalties(steps, self.rewards)
        turns = [
            ScoredTurn(phase=t.step.phase, prompt_ids=list(t.result.prompt_ids), token_ids=list(t.result.token_ids),
                 logprobs=list(t.result.logprobs or []), adapter_version=t.result.adapter_version,
                 parse_ok=t.step.parse_ok, reward=reward, format_penalty=penalty,
                 judged=j.kind if j is not None else None, score=score, words=len(t.step.text.split()))
            for t, j, reward, penalty, score in zip(played.turns, judgments, rewards, penalties, step_scores)
        ]
        ep = played.episode
        return ScoredEpisode(key=played.spec.key, uid=ep.instance.uid, group=played.spec.group, turns=turns, num_queries=ep.num_queries,
                             concluded=ep.concluded, timed_out=ep.timed_out, description=ep.hypothesis,
                             record=interactive_record(played))
