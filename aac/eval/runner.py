"""Playing the actor over a split: interactive episodes (the shared protocol) or one in-context turn.

Prompts and reply parsing come from `aac.env.protocol` only, and interactive episodes are played by
the one episode driver (`aac.rollout.driver`, continuous batching) that training uses, so training and
evaluation can never drift apart. Each finished episode is handed to `on_done` at once, so a killed
run loses at most the ones in flight. An episode's key is its instance's index in the whole split, so
a resumed run samples exactly what an uninterrupted one would.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from aac.engines import Engine, GenRequest
from aac.env.domains import get_domain
from aac.env.instance import Instance
from aac.env.protocol import Caller, Episode, ProtocolConfig, in_context_prompt, parse_description  # noqa: F401
from aac.env.teacher import PromptTransform, plain
from aac.rollout.driver import EpisodeDriver, EpisodeSpec, PlayedEpisode, SamplingSpec
from aac.rollout.record import interactive_record

OnDone = Callable[[list[dict]], None]
Progress = Callable[..., None]  # progress(units done, **counts): aac.progress.bar's advance


@dataclass
class ActorSpec:
    """How the actor generates: the engine, its adapter (None: the base model), sampling, and the
    teacher's rewrite of each prompt (aac/env/teacher.py; `plain`: the protocol's prompts)."""

    engine: Any
    adapter: str | None
    max_tokens: int
    temperature: float = 0.0
    seed: int = 0
    top_p: float = 1.0
    prompt_for: PromptTransform = plain
    max_tokens_per_phase: dict[str, int] | None = None  # interactive turns: budgets that replace max_tokens
    stop_per_phase: dict[str, tuple[str, ...]] | None = None  # interactive turns: stop strings kept in the reply

    @property
    def sampling(self) -> SamplingSpec:
        return SamplingSpec(self.temperature, self.top_p, self.max_tokens,
                            max_tokens_per_phase=dict(self.max_tokens_per_phase or {}),
                            stop_per_phase=dict(self.stop_per_phase or {}))

    def generate(self, chats: list[list[dict]], keys: list[int]) -> list[Any]:
        """One turn per chat; `keys` are the episodes' keys (the driver's seeding rule, turn 0)."""
        return self.engine.generate([GenRequest(messages=c, sampling=self.sampling.for_turn(self.seed, k, 0),
                                                adapter=self.adapter) for c, k in zip(chats, keys)])


def in_context_record(inst: Instance, result: Any, *, elapsed_s: float, max_chars: int = 300) -> dict:
    reply = result.text
    description = parse_description(reply)
    return {
        "uid": inst.uid, "source": inst.source, "mode": "in_context",
        "description": description, "num_queries": 0, "concluded": True, "timed_out": False,
        "turns": 1, "format_errors": int(not description),
        "observations": [[o.input, o.output_repr, o.error] for o in get_domain(inst.domain).context(inst, max_chars)],
        "steps": [{"index": 0, "phase": "in_context", "response": reply, "parse_ok": bool(description),
                   "parsed": description}],
        "gen_tokens": len(result.token_ids), "engine_errors": int(result.finish_reason == "error"),
        "elapsed_s": round(elapsed_s, 3),
    }


def run_in_context(specs: Sequence[EpisodeSpec], actor: ActorSpec, *, batch_size: int, on_done: OnDone,
                   progress: Progress = lambda n, **counts: None) -> None:
    for start in range(0, len(specs), batch_size):
        chunk = specs[start: start + batch_size]
        t0 = time.perf_counter()
        prompts = [get_domain(s.instance.domain).in_context_prompt(s.instance) for s in chunk]
        results = actor.generate([actor.prompt_for(s.instance, p) for s, p in zip(chunk, prompts)],
                                 [s.key for s in chunk])
        dt = (time.perf_counter() - t0) / len(chunk)
        on_done([in_context_record(s.instance, r, elapsed_s=dt) for s, r in zip(chunk, results)])
        progress(len(chunk), turns=len(chunk), tokens=sum(len(r.token_ids) for r in results))


class _Metered:
    """The actor's engine as the driver sees it, reporting the turns and tokens of every collect to
    `progress` (progress lines while episodes are still playing)."""

    def __init__(self, engine: Engine, progress: Progress):
        self.engine, self.progress = engine, progress

    def submit(self, requests: list[GenRequest]) -> list[Any]:
        return self.engine.submit(requests)

    def collect(self, tickets: list[object]) -> list[tuple[Any, Any]]:
        got = self.engine.collect(tickets)
        self.progress(0, turns=len(got), tokens=sum(len(r.token_ids) for _, r in got))
        return got


def run_interactive(specs: Sequence[EpisodeSpec], actor: ActorSpec, protocol: ProtocolConfig, caller: Caller, *,
                    batch_size: int, on_done: OnDone, progress: Progress = lambda n, **counts: None) -> None:
    """The episode driver with `batch_size` episodes live; each finished one is recorded at once.
    `progress(episodes, **counts)` hears of finished episodes and, as they come, turns, tokens and calls."""
    def done(played: list[PlayedEpisode]) -> None:
        on_done([interactive_record(p) for p in played])
        progress(len(played))

    def call(source: str, input_str: str, timeout_s: float) -> Any:
        progress(0, calls=1)
        return caller(source, input_str, timeout_s)

    driver = EpisodeDriver(_Metered(actor.engine, progress), protocol, call, actor.sampling, adapter=actor.adapter,
                           seed=actor.seed, max_live=batch_size, prompt_for=actor.prompt_for)
    driver.play(specs, on_done=done)
