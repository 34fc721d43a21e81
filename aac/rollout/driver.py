"""The one episode driver: training rollouts, `Trainer.evaluate` and `aac.eval` all play episodes here.

Continuous batching: up to `max_live` episodes are in flight, and a finished episode's slot is
refilled from the queue at once, so a long episode never holds a whole wave of short ones back.
Turns are streamed to the engine (`Engine.submit` / `collect`): on a streaming engine an episode's
next turn starts as soon as its own reply is back, not when the slowest reply of the batch is.
One seeding rule for every caller: turn `t` of the episode with key `k` samples with seed `turn_seed(seed, k, t)`, so a replay with the
same keys draws the same tokens whatever else shares its batch.
Sandbox calls do not block each other: an input turn's call runs in a thread, so one that loops
until its timeout holds its own episode only (`call_wait_s`).

The driver owns no model and no reward: it returns what happened (`PlayedEpisode`) and counts its
engine calls and idle slots (`DriverStats`), which the continuous-batching benchmark compares.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from aac.engines import Engine, GenRequest, GenResult, Sampling
from aac.env.grammar import header_arity, turn_grammar
from aac.env.instance import Instance
from aac.env.observation import Observation
from aac.env.protocol import Caller, Episode, ProtocolConfig, StepRecord
from aac.env.teacher import PromptTransform, plain
from aac.phase import PHASE_NAMES, Phase

if TYPE_CHECKING:
    from aac.config import EvalConfig, RolloutConfig

MAX_TURNS = 4096  # turns per episode the seeding rule keeps distinct
# how long a round's next batch waits for the sandbox calls of its input turns: a call that ends
# sooner keeps its episode in the batch (a lockstep engine then runs one generate, not two); a
# slower one (a function looping until its timeout) holds only its own episode
CALL_WAIT_S = 1.0


def turn_seed(seed: int, key: int, turn: int) -> int:
    """The sampling seed of turn `turn` of episode `key` in a run seeded `seed` (below 2**63, which
    torch and vLLM generators take)."""
    if not 0 <= turn < MAX_TURNS:
        raise ValueError(f"turn {turn} outside [0, {MAX_TURNS}): raise MAX_TURNS with the step limit")
    return ((seed * 1_000_003 + key) * MAX_TURNS + turn) % 2**63


def phase_budgets(section: RolloutConfig | EvalConfig) -> dict[str, int]:
    """`section.max_tokens_per_phase` (`rollout.*` or `eval.*`) as a plain dict ({} when unset)."""
    return {str(k): int(v) for k, v in (getattr(section, "max_tokens_per_phase", None) or {}).items()}


def phase_stops(section: RolloutConfig | EvalConfig) -> dict[str, tuple[str, ...]]:
    """`section.stop_per_phase` as a plain dict of tuples ({} when unset)."""
    return {str(k): tuple(str(s) for s in v) for k, v in (getattr(section, "stop_per_phase", None) or {}).items()}


@dataclass(frozen=True)
class SamplingSpec:
    """How the actor samples: temperature 0 is greedy (and then top_p and seeds do not apply).

    `max_tokens_per_phase` replaces `max_tokens` for the phases it names (an input needs a few tokens,
    a reflection more). `stop_per_phase` ends a phase's reply at the first of its strings, kept in the
    reply (e.g. an input line at its newline): nothing after the answer is generated."""

    temperature: float
    top_p: float
    max_tokens: int
    logprobs: bool = False
    max_tokens_per_phase: Mapping[str, int] = field(default_factory=dict)
    stop_per_phase: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        phases = set(PHASE_NAMES)
        for phase, n in self.max_tokens_per_phase.items():
            if phase not in phases or int(n) < 1:
                raise ValueError(f"max_tokens_per_phase: {phase}={n!r} needs a phase of {', '.join(sorted(phases))} "
                                 "and a budget >= 1")
        for phase, stops in self.stop_per_phase.items():
            if phase not in phases or not stops or not all(stops):
                raise ValueError(f"stop_per_phase: {phase}={stops!r} needs a phase of {', '.join(sorted(phases))} "
                                 "and non-empty strings")

    @classmethod
    def from_config(cls, section: RolloutConfig | EvalConfig, top_p: float, logprobs: bool = False) -> SamplingSpec:
        """From `rollout.*` or `eval.*`: temperature, max_tokens_per_turn, max_tokens_per_phase,
        stop_per_phase."""
        return cls(section.temperature, top_p, section.max_tokens_per_turn, logprobs, phase_budgets(section),
                   phase_stops(section))

    def for_turn(self, seed: int, key: int, turn: int, phase: str | None = None) -> Sampling:
        greedy = self.temperature == 0
        stop = self.stop_per_phase.get(phase)
        return Sampling(temperature=self.temperature, top_p=1.0 if greedy else self.top_p,
                        max_tokens=self.max_tokens_per_phase.get(phase, self.max_tokens),
                        seed=None if greedy else turn_seed(seed, key, turn), logprobs=self.logprobs,
                        stop=list(stop) if stop else None, include_stop=bool(stop))


@dataclass
class EpisodeSpec:
    """One episode to play: `key` is unique within a run (it seeds the episode's turns)."""

    key: int
    instance: Instance
    group: int = 0


@dataclass
class PlayedTurn:
    step: StepRecord
    result: GenResult
    # what the actor saw when it wrote this turn: the hypothesis and every observation so far
    hypothesis: str
    observations: list[Observation]


@dataclass
class PlayedEpisode:
    spec: EpisodeSpec
    episode: Episode
    turns: list[PlayedTurn]
    elapsed_s: float

    @property
    def generated_tokens(self) -> int:
        return sum(len(t.result.token_ids) for t in self.turns)

    @property
    def engine_errors(self) -> int:
        return sum(t.result.finish_reason == "error" for t in self.turns)


@dataclass
class DriverStats:
    engine_calls: int = 0
    requests: int = 0
    idle_slots: int = 0  # summed over calls: slots (max_live) minus the requests in flight
    generation_s: float = 0.0
    generated_tokens: int = 0
    per_call: list[int] = field(default_factory=list)  # requests in flight per engine call (collect)

    @property
    def idle_slots_per_call(self) -> float:
        return self.idle_slots / self.engine_calls if self.engine_calls else 0.0


@dataclass
class _Live:
    spec: EpisodeSpec
    episode: Episode
    started: float
    turns: list[PlayedTurn] = field(default_factory=list)


@dataclass
class _Stepping:
    """A reply being stepped into its episode: `step` gives the StepRecord (or the caller's exception)."""

    live: _Live
    reply: GenResult
    # what the actor saw when it wrote the reply
    hypothesis: str
    observations: list[Observation]
    step: Future


class EpisodeDriver:
    """Plays episodes of one protocol against one engine (and adapter) with continuous batching.

    `prompt_for` (a teacher's, aac/env/teacher.py) rewrites each turn's chat before it is sent; the
    episode's own records keep the protocol's prompt."""

    def __init__(self, engine: Engine, protocol: ProtocolConfig, caller: Caller, sampling: SamplingSpec, *,
                 adapter: str | None = None, seed: int = 0, max_live: int | None = None,
                 prompt_for: PromptTransform = plain, call_wait_s: float | None = CALL_WAIT_S):
        if max_live is not None and max_live < 1:
            raise ValueError(f"max_live must be >= 1 or None (all at once), got {max_live}")
        if call_wait_s is not None and call_wait_s < 0:
            raise ValueError(f"call_wait_s must be >= 0 or None (wait for every call), got {call_wait_s}")
        self.engine, self.protocol, self.caller = engine, protocol, caller
        self.sampling, self.adapter, self.seed, self.max_live = sampling, adapter, seed, max_live
        self.prompt_for, self.call_wait_s = prompt_for, call_wait_s

    def _sampling(self, lv: _Live) -> Sampling:
        """The sampling of `lv`'s next turn: its seed, and its phase's grammar under constrained_format."""
        s = self.sampling.for_turn(self.seed, lv.spec.key, len(lv.turns), lv.episode.phase.value)
        if not self.protocol.constrained_format:
            return s
        # the grammar starts after the answer cue the prompt already holds
        return replace(s, grammar=turn_grammar(lv.episode.phase, header_arity(lv.spec.instance.header),
                                               prefix=lv.episode.prefill, literals=self.protocol.input_literals))

    def play(self, specs: Iterable[EpisodeSpec],
             on_done: Callable[[list[PlayedEpisode]], None] | None = None) -> tuple[list[PlayedEpisode], DriverStats]:
        """Play every episode to its end; `on_done` gets each round's finished episodes at once (so a
        killed run loses only those in flight). Returns the episodes in the order of `specs`.

        Turns go to the engine as a stream (`Engine.submit` / `collect`): an episode's next turn is
        sent as soon as its reply is back and stepped, while the others still decode. On an engine that
        streams (vLLM) a step of the batch waits for no reply but its own; on one that does not, each
        collect is one generate over every live episode (lockstep).

        An input turn's step calls the sandbox: each such step runs in a thread of its own, so the
        calls of different episodes run at once (as many as the caller serves: a pool's `workers`).
        The episodes whose calls end within `call_wait_s` of their round join its next batch (None: wait
        for every call, as one at a time would); a slower call holds only its own episode, which goes
        on with the first round after its call ends. Timing never changes tokens: turn seeds follow
        the seeding rule."""
        queue = deque(specs)
        order = {id(s): i for i, s in enumerate(queue)}
        slots = self.max_live or len(queue)
        done: list[PlayedEpisode] = []
        with ThreadPoolExecutor(max(slots, 1), thread_name_prefix="aac-episode-call") as calls:
            playing = _Playing(self, queue, slots, calls)
            playing.submit(playing.admit([]))
            while playing.live:
                playing.collect()
                finished, going_on = playing.take_stepped()
                playing.submit(playing.admit(going_on))
                if finished:
                    done += finished
                    if on_done is not None:
                        on_done(finished)
        done.sort(key=lambda p: order[id(p.spec)])
        return done, playing.stats


class _Playing:
    """The state of one call of `EpisodeDriver.play`, changed only by its rounds' steps: `collect` the
    replies the engine has done (each starts stepping into its episode), `take_stepped` the steps that
    ended, `admit` queued episodes to the slots left free, `submit` the next turns."""

    def __init__(self, driver: EpisodeDriver, queue: deque[EpisodeSpec], slots: int, calls: ThreadPoolExecutor):
        self.driver, self.queue, self.slots, self.calls = driver, queue, slots, calls
        self.pending: dict[Any, _Live] = {}  # ticket -> the episode whose turn it is
        self.stepping: list[_Stepping] = []  # replies being stepped (input turns: calls running), oldest first
        self.stats = DriverStats()

    @property
    def live(self) -> bool:
        """Whether an episode is still at the engine or being stepped."""
        return bool(self.pending or self.stepping)

    def admit(self, going_on: list[_Live]) -> list[_Live]:
        """`going_on` and new episodes for the slots that the live ones leave free."""
        live, new = len(self.pending) + len(going_on) + len(self.stepping), []
        while self.queue and live + len(new) < self.slots:
            spec = self.queue.popleft()
            new.append(_Live(spec, Episode(spec.instance, self.driver.protocol, self.driver.caller), time.perf_counter()))
        return going_on + new

    def submit(self, lives: list[_Live]) -> None:
        """Send the next turn of each of `lives` to the engine."""
        d, t0 = self.driver, time.perf_counter()
        # an episode is known by its key within this call's seed: its turns stay on one engine replica
        requests = [GenRequest(d.prompt_for(lv.spec.instance, lv.episode.prompt()), d._sampling(lv), d.adapter,
                               episode=(d.seed, lv.spec.key)) for lv in lives]
        self.pending.update(zip(d.engine.submit(requests), lives))
        self.stats.generation_s += time.perf_counter() - t0

    def collect(self) -> None:
        """Collect the replies the engine has done and start stepping each into its episode, then wait up to
        `call_wait_s` for their calls; with no turn at the engine, wait until the first call ends."""
        if not self.pending:  # every live episode waits for its call
            wait([s.step for s in self.stepping], return_when=FIRST_COMPLETED)
            return
        in_flight, stats = len(self.pending), self.stats
        t0 = time.perf_counter()
        got = self.driver.engine.collect(list(self.pending))
        stats.generation_s += time.perf_counter() - t0
        stats.engine_calls += 1
        stats.requests += len(got)
        stats.idle_slots += self.slots - in_flight
        stats.per_call.append(in_flight)
        started = [self._start_step(self.pending.pop(ticket), res) for ticket, res in got]
        stats.generated_tokens += sum(len(res.token_ids) for _, res in got)
        self.stepping += started
        wait([s.step for s in started], timeout=self.driver.call_wait_s)

    def _start_step(self, lv: _Live, reply: GenResult) -> _Stepping:
        """Step `lv`'s episode with `reply`: an input turn (a sandbox call) in a thread, the others here."""
        stepping = _Stepping(lv, reply, lv.episode.hypothesis, lv.episode.observations, Future())
        if lv.episode.phase is Phase.INPUT:
            stepping.step = self.calls.submit(lv.episode.step, reply.text)
        else:
            stepping.step.set_result(lv.episode.step(reply.text))
        return stepping

    def take_stepped(self) -> tuple[list[PlayedEpisode], list[_Live]]:
        """Add each ended step's turn to its episode, oldest first: the episodes that finished, and those going on."""
        finished, going_on, still = [], [], []
        for s in self.stepping:
            if not s.step.done():
                still.append(s)
                continue
            lv = s.live
            lv.turns.append(PlayedTurn(s.step.result(), s.reply, s.hypothesis, s.observations))
            if lv.episode.done:
                finished.append(PlayedEpisode(lv.spec, lv.episode, lv.turns, time.perf_counter() - lv.started))
            else:
                going_on.append(lv)
        self.stepping = still
        return finished, going_on
