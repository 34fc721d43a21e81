"""Engine replicas: several copies of one model (`rollout.num_engines`, each its own Ray actor with its
own GPUs) behind one `Engine`, so the episode driver, the critic and the sync use them as one.

- **Routing**: a request of a new episode (`GenRequest.episode`) goes to the replica with the least
  outstanding load, the `max_tokens` of the requests it has in flight from this proxy (what it may
  still generate); the episode's later turns follow it, since that replica's prefix cache holds the
  prompt they share. A request of no episode (the critic's, a score) goes to the least loaded one.
- **Streaming**: `collect` waits on every replica holding wanted tickets at once (one collect in flight
  per replica, in a thread) and returns whatever is done first; the rest is kept for the next call. An
  engine host serves calls at once (aac/engines/remote.py), so a turn sent to a replica whose collect
  is in flight starts at once.
- **Adapters**: `load_adapter` loads into every replica before it returns; `adapter_version` is the
  oldest any replica serves, and `replicas()` lists them for the per-replica sync check.
- Each result names its replica (`GenResult.replica`), so a run can count the episodes each served.

Load is what this proxy sent: each rollout worker holds its own copy and balances its own episodes
(the workers' shares are equal, so the replicas' totals are too)."""

from __future__ import annotations

import itertools
import threading
from collections import OrderedDict, defaultdict
from collections.abc import Hashable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import replace
from typing import Any, Optional

from aac.engines.base import Engine, EngineError, GenRequest, GenResult, TokenLogprobs

MAX_HOMES = 65_536  # episodes whose replica is remembered (the oldest are forgotten first)


class EngineReplicas(Engine):
    kind = "replicas"

    def __init__(self, replicas: list[Engine]):
        super().__init__()
        self._replicas = list(replicas)
        self._reset()

    def _reset(self) -> None:
        """The routing state, fresh (also in each process a copy of this proxy is sent to)."""
        n = len(self._replicas)
        self._lock = threading.Lock()
        self._load = [0] * n  # max_tokens of the requests in flight, per replica
        self._home: OrderedDict[Hashable, int] = OrderedDict()  # episode -> its replica
        self._tickets: dict[int, tuple[int, Any, int]] = {}  # ticket -> (replica, its ticket there, load)
        self._ours: dict[tuple[int, Any], int] = {}  # (replica, its ticket) -> ticket
        self._counter = itertools.count()
        self._collecting: dict[int, Future] = {}  # replica -> its collect in flight
        self._done: dict[int, GenResult] = {}  # collected, not yet handed back
        # a collect in flight per replica, and room beside them for the critic's calls
        self._pool = ThreadPoolExecutor(2 * n, thread_name_prefix="aac-replica")

    def __getstate__(self) -> dict[str, Any]:
        return {"_replicas": self._replicas, "stats": self.stats}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._reset()

    def replicas(self) -> list[Engine]:
        return list(self._replicas)

    def _route(self, request: GenRequest) -> int:
        """The replica for `request` (its load counted from now on)."""
        with self._lock:
            i = self._home.get(request.episode) if request.episode is not None else None
            if i is None:
                i = min(range(len(self._replicas)), key=self._load.__getitem__)
                if request.episode is not None:
                    self._home[request.episode] = i
                    if len(self._home) > MAX_HOMES:
                        self._home.popitem(last=False)
            else:
                self._home.move_to_end(request.episode)
            self._load[i] += request.sampling.max_tokens
            return i

    def _release(self, i: int, load: int) -> None:
        with self._lock:
            self._load[i] -= load

    def _spread(self, requests: list[GenRequest]) -> dict[int, list[int]]:
        """Request indices per replica."""
        out: dict[int, list[int]] = defaultdict(list)
        for k, r in enumerate(requests):
            out[self._route(r)].append(k)
        return out

    def _fan(self, requests: list[Any], call: Any) -> list[Any]:
        """`call(replica, its requests)` on every replica at once; the results in request order."""
        spread = self._spread(requests)
        futures = {i: self._pool.submit(call, self._replicas[i], [requests[k] for k in ks]) for i, ks in spread.items()}
        out: list[Any] = [None] * len(requests)
        for i, ks in spread.items():
            try:
                for k, res in zip(ks, futures[i].result()):
                    out[k] = replace(res, replica=i) if isinstance(res, GenResult) else res
            finally:
                self._release(i, sum(requests[k].sampling.max_tokens for k in ks))
        return out

    def generate(self, requests: list[GenRequest]) -> list[GenResult]:
        return self._fan(requests, lambda engine, share: engine.generate(share))

    def next_token_logprobs(self, requests: list[GenRequest], candidates: list[str]) -> list[TokenLogprobs]:
        return self._fan(requests, lambda engine, share: engine.next_token_logprobs(share, candidates))

    def submit(self, requests: list[GenRequest]) -> list[Any]:
        spread = self._spread(requests)
        tickets: list[Any] = [None] * len(requests)
        for i, ks in spread.items():
            for k, theirs in zip(ks, self._replicas[i].submit([requests[k] for k in ks])):
                tickets[k] = next(self._counter)
                self._tickets[tickets[k]] = (i, theirs, requests[k].sampling.max_tokens)
                self._ours[(i, theirs)] = tickets[k]
        return tickets

    def collect(self, tickets: list[object]) -> list[tuple[Any, GenResult]]:
        unknown = [t for t in tickets if t not in self._tickets]
        if unknown:
            raise EngineError(f"collect: {len(unknown)} ticket(s) were never submitted or already collected")
        wanted: dict[int, list[Any]] = defaultdict(list)
        for t in tickets:
            if t not in self._done:
                i, theirs, _ = self._tickets[t]
                wanted[i].append(theirs)
        for i, theirs in wanted.items():
            if i not in self._collecting:
                self._collecting[i] = self._pool.submit(self._replicas[i].collect, theirs)
        if not any(t in self._done for t in tickets):
            wait([self._collecting[i] for i in wanted], return_when=FIRST_COMPLETED)
        for i, future in list(self._collecting.items()):
            if future.done():
                del self._collecting[i]
                for theirs, res in future.result():
                    ours = self._ours.pop((i, theirs))
                    self._release(i, self._tickets[ours][2])
                    self._done[ours] = replace(res, replica=i)
        out = [(t, self._done.pop(t)) for t in tickets if t in self._done]
        for t, _ in out:
            del self._tickets[t]
        return out

    def load_adapter(self, name: str, path: str, version: int) -> None:
        list(self._pool.map(lambda e: e.load_adapter(name, path, version), self._replicas))

    def adapter_version(self, name: str) -> Optional[int]:
        versions = list(self._pool.map(lambda e: e.adapter_version(name), self._replicas))
        return None if None in versions else min(versions)

    def score(self, prompt_ids: list[int], completion_ids: list[int], adapter: Optional[str]) -> list[float]:
        with self._lock:
            i = min(range(len(self._replicas)), key=self._load.__getitem__)
        return self._replicas[i].score(prompt_ids, completion_ids, adapter)

    def close(self) -> None:
        self._pool.shutdown(wait=False)
        for engine in self._replicas:
            engine.close()
