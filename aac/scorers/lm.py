"""Asking an engine a batch of chats for text: the one thing the judge and the coder need."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from aac.engines.base import Engine, GenRequest, Sampling
from aac.errors import UserError


class EngineFailure(UserError, RuntimeError):
    """The judge's or coder's engine could not answer (after its own retries)."""

    what = "engine failed"


# a batch of chats in, one reply per chat out; tests pass canned replies through the same type
Completer = Callable[[list[list[dict]]], list[str]]


@dataclass
class EngineCompleter:
    """Greedy (by default) replies from an `aac.rollout` engine; `adapter=None` is the base model."""

    engine: Engine
    max_tokens: int
    temperature: float = 0.0
    seed: int = 0
    adapter: str | None = None

    def __call__(self, chats: list[list[dict]]) -> list[str]:
        if not chats:
            return []
        sampling = Sampling(temperature=self.temperature, max_tokens=self.max_tokens, seed=self.seed)
        results = self.engine.generate([GenRequest(messages=c, sampling=sampling, adapter=self.adapter)
                                        for c in chats])
        failed = [r for r in results if r.finish_reason == "error"]
        if failed:  # a judge/coder outage must not be stored as real scores: stop, resume later
            raise EngineFailure(f"{len(failed)} of {len(results)} requests failed: {failed[0].error}")
        return [r.text for r in results]
