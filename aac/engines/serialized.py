"""An engine that cannot serve threads at once (`Engine.concurrent` false: the HF engine), shared by
threads (the episode driver and a critic overlapping it, in-process or in an engine host's Ray
actor): one call at a time, in the order they came (a plain lock lets the driver's next collect win
every time, and the critic would wait for the last episode)."""

from __future__ import annotations

import threading
from typing import Any, Optional

from aac.engines.base import Engine, GenRequest, GenResult, TokenLogprobs


class _FifoLock:
    def __init__(self) -> None:
        self._turn = threading.Condition()
        self._next = self._serving = 0

    def __enter__(self) -> None:
        with self._turn:
            ticket, self._next = self._next, self._next + 1
            self._turn.wait_for(lambda: self._serving == ticket)

    def __exit__(self, *exc: object) -> None:
        with self._turn:
            self._serving += 1
            self._turn.notify_all()


def shared(engine: Engine) -> Engine:
    """`engine`, ready for calls from several threads at once."""
    return engine if engine.concurrent else SerializedEngine(engine)


class SerializedEngine(Engine):
    concurrent = True  # safe from several threads: it takes them in turn (`shared` wraps it no further)

    def __init__(self, engine: Engine):
        self.engine = engine
        self._lock = _FifoLock()

    def __getattr__(self, name: str) -> Any:  # tokenizer, eos_ids, stats, ...: the engine's own
        if name == "engine":
            raise AttributeError(name)
        return getattr(self.engine, name)

    def generate(self, requests: list[GenRequest]) -> list[GenResult]:
        with self._lock:
            return self.engine.generate(requests)

    def submit(self, requests: list[GenRequest]) -> list[Any]:
        with self._lock:
            return self.engine.submit(requests)

    def collect(self, tickets: list[object]) -> list[tuple[Any, GenResult]]:
        with self._lock:
            return self.engine.collect(tickets)

    def load_adapter(self, name: str, path: str, version: int) -> None:
        with self._lock:
            self.engine.load_adapter(name, path, version)

    def adapter_version(self, name: str) -> Optional[int]:
        return self.engine.adapter_version(name)

    def score(self, prompt_ids: list[int], completion_ids: list[int], adapter: Optional[str]) -> list[float]:
        with self._lock:
            return self.engine.score(prompt_ids, completion_ids, adapter)

    def next_token_logprobs(self, requests: list[GenRequest], candidates: list[str]) -> list[TokenLogprobs]:
        with self._lock:
            return self.engine.next_token_logprobs(requests, candidates)

    def close(self) -> None:
        self.engine.close()
