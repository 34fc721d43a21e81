"""Rollout workers: drive many episodes at once and return scored trajectories.

A worker holds a sandbox pool and a critic. Every turn of every live episode goes to the
engine in one batch; every critic judgment of the whole group goes in one batch at the end.
What comes back is plain data (`RolloutBatch`): per turn the prompt and generated token ids,
the sampling log-probs, the step record's essentials, the reward and the adapter version.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any, Optional

from aac.engines.base import Engine, GenRequest, Sampling
from aac.env.protocol import Episode, Phase, ProtocolConfig, StepRecord
from aac.rewards.schedule import episode_rewards, judgment_kind

log = logging.getLogger(__name__)


@dataclass
class Turn:
    """One actor generation: what the learner trains on, and what the logs show."""

    phase: str
    prompt_ids: list[int]
    token_ids: list[int]
    logprobs: list[float]
    adapter_version: Optional[int]
    parse_ok: bool
    reward: float = 0.0
    score: Optional[float] = None  # the critic's judgment, when the step asked for one
    words: int = 0


@dataclass
class EpisodeResult:
    uid: str
    group: int
    turns: list[Turn]
    num_queries: int
    concluded: bool
    timed_out: bool
    description: str

    @property
    def total_reward(self) -> float:
        return sum(t.reward for t in self.turns)


@dataclass
class RolloutBatch:
    episodes: list[EpisodeResult]
    timings: dict[str, float] = field(default_factory=dict)  # generation / critic / sandbox seconds
    critic_health: dict[str, Any] = field(default_factory=dict)
    generated_tokens: int = 0


class _TimedCaller:
    """The sandbox caller handed to episodes; it adds up the wall time spent in calls."""

    def __init__(self, pool):
        self.pool = pool
        self.seconds = 0.0

    def __call__(self, source: str, input_str: str, timeout_s: float):
        t0 = time.perf_counter()
        try:
            return self.pool.call(source, input_str, timeout_s=timeout_s)
        finally:
            self.seconds += time.perf_counter() - t0


class RolloutWorker:
    """Holds sandboxes and a critic; `run` plays groups of episodes against one engine."""

    def __init__(self, cfg: Any, engine: Engine):
        from aac.critic import PrivilegedCritic
        from aac.sandbox.pool import SandboxPool

        self.cfg = cfg
        self.engine = engine
        self.pool = SandboxPool.from_config(cfg.env.sandbox)
        self.critic = PrivilegedCritic(engine, cfg.critic)
        self.protocol = ProtocolConfig.from_env(cfg.env)

    def close(self) -> None:
        self.pool.close()

    def run(
        self,
        groups: list[list[Any]],
        *,
        adapter: Optional[str],
        adapter_version: Optional[int],
        seed: int,
        greedy: bool = False,
    ) -> RolloutBatch:
        """Play each group's episodes (one instance per episode) to the end, then score them."""
        r = self.cfg.rollout
        caller = _TimedCaller(self.pool)
        episodes: list[tuple[int, Episode]] = [
            (g, Episode(inst, self.protocol, caller)) for g, group in enumerate(groups) for inst in group
        ]
        turns: list[list[Turn]] = [[] for _ in episodes]
        pending: list[list[tuple[StepRecord, Any]]] = [[] for _ in episodes]  # step, judgment
        t_gen, n_tokens, rounds = 0.0, 0, 0
        while True:
            live = [i for i, (_, ep) in enumerate(episodes) if not ep.done]
            if not live:
                break
            requests = []
            for i in live:
                sampling = Sampling(
                    temperature=0.0 if greedy else r.temperature,
                    top_p=1.0 if greedy else r.top_p,
                    max_tokens=r.max_tokens_per_turn,
                    seed=None if greedy else seed * 1_000_003 + i * 1009 + rounds,
                    logprobs=True,
                )
                requests.append(GenRequest(episodes[i][1].prompt(), sampling, adapter))
            t0 = time.perf_counter()
            results = self.engine.generate(requests)
            t_gen += time.perf_counter() - t0
            rounds += 1
            for i, res in zip(live, results):
                ep = episodes[i][1]
                context = _judgment_context(ep)
                step = ep.step(res.text)
                n_tokens += len(res.token_ids)
                turns[i].append(
                    Turn(
                        phase=step.phase.value,
                        prompt_ids=list(res.prompt_ids),
                        token_ids=list(res.token_ids),
                        logprobs=list(res.logprobs or []),
                        adapter_version=res.adapter_version,
                        parse_ok=step.parse_ok,
                        words=len(step.text.split()),
                    )
                )
                kind = judgment_kind(step, self.cfg.rewards)
                pending[i].append((step, self._judgment(kind, ep, step, context) if kind else None))

        t0 = time.perf_counter()
        judgments = [j for steps in pending for _, j in steps if j is not None]
        scores = iter(self.critic.score(judgments) if judgments else [])
        t_critic = time.perf_counter() - t0

        out = []
        for i, (g, ep) in enumerate(episodes):
            step_scores = [next(scores) if j is not None else None for _, j in pending[i]]
            rewards = episode_rewards([s for s, _ in pending[i]], step_scores, self.cfg.rewards)
            for turn, reward, score in zip(turns[i], rewards, step_scores):
                turn.reward, turn.score = reward, score
            summary = ep.summary()
            out.append(
                EpisodeResult(
                    uid=ep.instance.uid,
                    group=g,
                    turns=turns[i],
                    num_queries=summary["num_queries"],
                    concluded=summary["concluded"],
                    timed_out=summary["timed_out"],
                    description=summary["description"],
                )
            )
        return RolloutBatch(
            episodes=out,
            timings={"generation": t_gen, "critic": t_critic, "sandbox": caller.seconds},
            critic_health=dict(self.critic.health),
            generated_tokens=n_tokens,
        )

    @staticmethod
    def _judgment(kind: str, ep: Episode, step: StepRecord, context: tuple[str, list]):
        from aac.critic import Judgment

        hypothesis, observations = context
        if step.phase == Phase.REFLECT:  # judge the revised hypothesis against what was seen
            hypothesis, observations = step.hypothesis, list(ep.observations)
        return Judgment(kind=kind, instance=ep.instance, hypothesis=hypothesis,
                        observations=observations, text=step.parsed or step.text)


def _judgment_context(ep: Episode) -> tuple[str, list]:
    """The hypothesis and observations the actor saw when it wrote this turn."""
    return ep.hypothesis, list(ep.observations)
