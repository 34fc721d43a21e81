"""Playing the actor over a split: interactive episodes (the shared protocol) or one in-context turn.

Prompts and reply parsing come from `aac.env.protocol` only, so training and evaluation can never
drift apart. Episodes run in lockstep batches (one engine call per turn for every live episode);
each finished episode is handed to `on_done` at once, so a killed run loses at most the ones in flight.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from aac.engines.base import GenRequest, Sampling
from aac.env.instance import Instance
from aac.env.prompts import INITIAL_HYPOTHESIS, example_repr
from aac.env.protocol import Episode, ProtocolConfig, StepRecord, in_context_prompt, parse_description

OnDone = Callable[[list[dict]], None]


@dataclass
class ActorSpec:
    """How the actor generates: the engine, its adapter (None: the base model) and sampling."""

    engine: Any
    adapter: str | None
    max_tokens: int
    temperature: float = 0.0
    seed: int = 0

    def sampling(self, key: int) -> Sampling:
        greedy = self.temperature == 0
        return Sampling(temperature=self.temperature, max_tokens=self.max_tokens,
                        seed=None if greedy else self.seed * 1_000_003 + key)

    def generate(self, chats: list[list[dict]], keys: list[int]) -> list[Any]:
        return self.engine.generate([GenRequest(messages=c, sampling=self.sampling(k), adapter=self.adapter)
                                     for c, k in zip(chats, keys)])


def _step_dict(step: StepRecord) -> dict:
    call = step.call
    return {
        "index": step.index, "phase": step.phase.value, "response": step.response, "parse_ok": step.parse_ok,
        "parsed": step.parsed, "decision": step.decision, "hypothesis": step.hypothesis, "done": step.done,
        "call": None if call is None else {"output_repr": call.output_repr, "error": call.error,
                                           "duration_s": round(call.duration_s, 4)},
    }


def interactive_record(episode: Episode, *, elapsed_s: float, gen_tokens: int, engine_errors: int = 0) -> dict:
    summary = episode.summary()
    steps = list(episode.steps)
    inst = episode.instance
    description = summary["description"]
    return {
        "uid": inst.uid, "source": inst.source, "mode": "interactive",
        # an episode that never formed a hypothesis predicted nothing (scored 1 without asking the judge)
        "description": "" if description == INITIAL_HYPOTHESIS else description,
        "num_queries": summary["num_queries"],
        "concluded": bool(summary["concluded"]), "timed_out": bool(summary["timed_out"]),
        "turns": len(steps), "format_errors": sum(not s.parse_ok for s in steps),
        "observations": [[o.input, o.output_repr, o.error] for o in episode.observations],
        "steps": [_step_dict(s) for s in steps],
        "gen_tokens": gen_tokens, "engine_errors": engine_errors, "elapsed_s": round(elapsed_s, 3),
    }


def in_context_record(inst: Instance, result: Any, *, elapsed_s: float, max_chars: int = 300) -> dict:
    reply = result.text
    description = parse_description(reply)
    return {
        "uid": inst.uid, "source": inst.source, "mode": "in_context",
        "description": description, "num_queries": 0, "concluded": True, "timed_out": False,
        "turns": 1, "format_errors": int(not description),
        "observations": [[inp, example_repr(out, max_chars), None] for inp, out in inst.train_examples],
        "steps": [{"index": 0, "phase": "in_context", "response": reply, "parse_ok": bool(description),
                   "parsed": description}],
        "gen_tokens": len(result.token_ids), "engine_errors": int(result.finish_reason == "error"),
        "elapsed_s": round(elapsed_s, 3),
    }


def run_in_context(instances: Sequence[Instance], actor: ActorSpec, *, batch_size: int, on_done: OnDone,
                   progress: Callable[[int], None] = lambda n: None) -> None:
    for start in range(0, len(instances), batch_size):
        chunk = instances[start: start + batch_size]
        t0 = time.perf_counter()
        results = actor.generate([in_context_prompt(i) for i in chunk], list(range(start, start + len(chunk))))
        dt = (time.perf_counter() - t0) / len(chunk)
        on_done([in_context_record(i, r, elapsed_s=dt) for i, r in zip(chunk, results)])
        progress(len(chunk))


@dataclass
class _Live:
    key: int
    episode: Episode
    started: float
    tokens: int = 0
    errors: int = 0


def run_interactive(instances: Sequence[Instance], actor: ActorSpec, protocol: ProtocolConfig, caller: Any, *,
                    batch_size: int, on_done: OnDone, progress: Callable[[int], None] = lambda n: None) -> None:
    """Continuous batching: up to `batch_size` episodes live; a finished one is replaced at once."""
    queue = deque(enumerate(instances))
    live: list[_Live] = []
    while queue or live:
        while queue and len(live) < batch_size:
            key, inst = queue.popleft()
            live.append(_Live(key, Episode(inst, protocol, caller), time.perf_counter()))
        turn_keys = [lv.key * 4096 + len(lv.episode.steps) for lv in live]  # distinct seeds per turn
        results = actor.generate([lv.episode.prompt() for lv in live], turn_keys)
        finished = []
        for lv, res in zip(live, results):
            lv.episode.step(res.text)
            lv.tokens += len(res.token_ids)
            lv.errors += res.finish_reason == "error"
            if lv.episode.done:
                finished.append(interactive_record(lv.episode, elapsed_s=time.perf_counter() - lv.started,
                                                   gen_tokens=lv.tokens, engine_errors=lv.errors))
        live = [lv for lv in live if not lv.episode.done]
        if finished:
            on_done(finished)
            progress(len(finished))
