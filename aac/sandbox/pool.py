"""Call an untrusted `test_func` on a model's input (docs/method.md §3), isolated and fast: the pool's policy.

The pool holds one zygote (`processes.py`) and decides which children live: children stay warm
per source, least recently used evicted, as many as `keep_warm(n)` asks for (the live episodes'
functions) within `max_warm` and `warm_memory_mb`; up to `workers` calls run at once, from any
threads. A child that timed out, crashed, replied nonsense or cannot restore its state is
replaced.

Calls run in the warm child itself, not in a fork per call (a fork costs ~30x a warm call): the
source is re-executed in fresh globals per call, like the release's fresh process, and the child
restores what a hostile call may change (see `_worker.py`).

Errors are results, one line each, with their kind (`result.py`): the function's own exception
(`"ValueError: ..."`), `"InputParseError: ..."`, `"TimeoutError: call exceeded 10.0 s"`,
`"SandboxError: the worker died by SIGSEGV: ..."` (a crash, `os._exit`, the CPU limit) or
`"OutputError: ..."` (an unprintable result).

    with SandboxPool(workers=2) as pool:
        pool.keep_warm(16)  # e.g. 16 episodes in flight, each on its own function
        result = pool.call(source, "(3, 'ab')", timeout_s=10.0)
        result.ok, result.kind, result.output, result.output_repr, result.normalized, result.error

`run_function(source, input_str)` uses one shared pool per process.
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
import weakref
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import aac.sandbox._protocol as proto
from aac.sandbox._isolate import MODES
from aac.sandbox.processes import NAMESPACED, Child, Options, SpawnError, Zygote
from aac.sandbox.result import CallKind, CallResult, SandboxUnavailable, error_result

log = logging.getLogger(__name__)

_AUTO_MODE: dict[int, str] = {}  # euid -> the mode auto-detection found, per process
_LOGGED: set[str] = set()
_POOLS: weakref.WeakSet = weakref.WeakSet()
# the counter a call that ends its child adds to ("retired": the child asked to go, e.g. out of memory)
_RETIRED_BY = {CallKind.TIMEOUT: "timeouts", CallKind.CRASHED: "crashes", CallKind.UNAVAILABLE: "crashes"}


# imported once by the zygote for every child: what HumanEval/PAU sources import (a child pays
# for the others itself)
DEFAULT_PRELOAD = ("typing", "collections", "itertools", "functools", "math", "re", "string", "heapq", "bisect",
                   "operator", "copy", "random", "statistics", "fractions", "decimal", "hashlib", "datetime")


class SandboxPool:
    """Warm, isolated workers for calling untrusted functions (thread-safe).

    One zygote per pool, already inside the isolation, forks a child per new source in about a
    millisecond; children stay warm per source (least recently used evicted) while the pool holds
    at most `warm_limit` of them and `warm_memory_mb` of their own memory.

    `workers`: calls that run at once (one child each). `keep_warm(n)`: the number of sources in
    use at once (live episodes' functions); until it is called, 4 x workers. `max_warm`: a cap on
    warm children whatever `keep_warm` says (None: no cap). `warm_memory_mb`: the bound on the
    memory the warm children hold alone (private pages, then their peak RSS growth).
    `memory_mb`: address-space limit per child. `cpu_time_s`: CPU seconds one call may use
    (RLIMIT_CPU, besides the wall timeout). `preload`: modules the zygote imports for its children.
    `spare_children`: children forked and isolated ahead of demand and kept here (namespace
    modes; ~2 MiB each, not counted in `warm_memory_mb`), so a new source waits for neither.
    `isolation`: "auto" (the strongest available) or one of `MODES`, then required.
    """

    def __init__(self, workers: int = 2, memory_mb: int = 512, *, cpu_time_s: float = 30.0,
                 max_output_chars: int = 2000, max_input_chars: int = 10000, max_input_depth: int = 50,
                 max_warm: int | None = None, warm_memory_mb: int = 2048, tmp_mb: int = 64, fsize_mb: int = 16,
                 nofile: int = 256, isolation: str = "auto", spawn_timeout_s: float = 30.0,
                 preload: tuple[str, ...] | list[str] = DEFAULT_PRELOAD, spare_children: int = 2):
        if workers < 1:
            raise ValueError(f"workers must be >= 1, got {workers}")
        if isolation != "auto" and isolation not in MODES:
            raise ValueError(f"isolation must be 'auto' or one of {', '.join(MODES)}; got {isolation!r}")
        if memory_mb < 64:
            raise ValueError(f"memory_mb must be >= 64, got {memory_mb}")
        if max_warm is not None and max_warm < 1:
            raise ValueError(f"max_warm must be >= 1 or None, got {max_warm}")
        if warm_memory_mb < 1:
            raise ValueError(f"warm_memory_mb must be >= 1, got {warm_memory_mb}")
        if type(spare_children) is not int or spare_children < 0:
            raise ValueError(f"spare_children must be an int >= 0, got {spare_children!r}")
        self.workers = workers
        self.max_warm = max_warm
        self.warm_memory_mb = warm_memory_mb
        self._expected = 4 * workers
        self._opts = Options(memory_mb=memory_mb, cpu_time_s=cpu_time_s, max_output_chars=max_output_chars,
                              max_input_chars=max_input_chars, max_input_depth=max_input_depth, tmp_mb=tmp_mb,
                              fsize_mb=fsize_mb, nofile=nofile, spawn_timeout_s=spawn_timeout_s,
                              preload=tuple(preload), spare_children=spare_children)
        self._requested = isolation
        self._mode: str | None = None if isolation == "auto" else isolation
        self._details: dict = {}
        self._cond = threading.Condition()
        self._detect_lock = threading.Lock()  # starts of the zygote
        self._zygote: list[Zygote] = []  # the live one, if any (a list: the finalizer shares it)
        self._idle: dict[str | None, list[Child]] = {}
        self._lru: OrderedDict[Child, None] = OrderedDict()  # idle children, oldest first
        self._all: set[Child] = set()
        self._warm_kib = 0  # memory_kib of every child in _all
        self._busy = 0
        self._closed = False
        self._executor: ThreadPoolExecutor | None = None
        self._pid = os.getpid()
        self.owner = f"{self._pid}:{id(self):x}"  # in each process's command line, to find them with ps
        self._stats = {"calls": 0, "spawned": 0, "timeouts": 0, "crashes": 0, "retired": 0, "evicted": 0,
                       "zygotes": 0}
        self._finalizer = weakref.finalize(self, SandboxPool._kill_all, self._all, self._zygote)
        _POOLS.add(self)

    @classmethod
    def from_config(cls, cfg: object, **overrides: Any) -> SandboxPool:
        """From an `aac.config.SandboxConfig` (fields it lacks keep their defaults)."""
        keys = ("workers", "memory_mb", "cpu_time_s", "max_output_chars", "max_input_chars", "max_input_depth",
                "max_warm", "warm_memory_mb", "tmp_mb", "fsize_mb", "nofile", "isolation", "preload",
                "spare_children")
        kwargs = {k: getattr(cfg, k) for k in keys if getattr(cfg, k, None) is not None}
        if "preload" in kwargs:
            kwargs["preload"] = tuple(kwargs["preload"])
        kwargs.update(overrides)
        return cls(**kwargs)

    # ------------------------------------------------------------ public API

    def keep_warm(self, functions: int) -> None:
        """Size the pool for `functions` sources in use at once: training, the distinct functions of
        a step's live episodes; evaluation, its batch size. Up to that many children stay warm (at
        least `workers`, at most `max_warm`, and within `warm_memory_mb`); extra idle ones go now."""
        if type(functions) is not int or functions < 0:
            raise ValueError(f"keep_warm needs a number of functions >= 0, got {functions!r}")
        with self._cond:
            self._expected = functions
            evict = self._shrink(0)
        for child in evict:
            child.kill()

    @property
    def warm_limit(self) -> int:
        """How many children the pool keeps warm now (see `keep_warm`)."""
        limit = max(self._expected, self.workers)
        return limit if self.max_warm is None else min(limit, max(self.max_warm, self.workers))

    @property
    def max_input_chars(self) -> int:
        """The longest input a call takes (a longer one is refused unshipped)."""
        return self._opts.max_input_chars

    @property
    def isolation(self) -> str:
        """The isolation mode children run under (starts the zygote and a child if none ran yet)."""
        if self._mode is None or not self._details:
            self._release(*self._acquire(None), True)
        return self._mode

    @property
    def isolation_details(self) -> dict:
        """What the isolation covers, as the zygote and the first child reported it."""
        self.isolation  # noqa: B018 - starts a child if needed
        return dict(self._details)

    @property
    def stats(self) -> dict:
        """Counters: calls, spawned (children), zygotes, timeouts, crashes, retired, evicted; plus
        live children, the memory they hold alone (MiB) and the warm limit."""
        with self._cond:
            return {**self._stats, "live": len(self._all), "warm_mb": self._warm_kib / 1024,
                    "warm_limit": self.warm_limit}

    def live_pids(self) -> list[int]:
        """Process ids of this pool's live processes: the zygote's supervisor and the zygote, the
        children, then the spare children."""
        with self._cond:
            zygotes = [z for z in self._zygote if z.alive()]
            children = [pid for w in self._all for pid in w.pids()]
        return ([pid for z in zygotes for pid in z.pids()] + children
                + [pid for z in zygotes for pid in z.spare_pids()])

    def call(self, source: str, input_str: str, *, timeout_s: float = 10.0, spread_list: bool = True) -> CallResult:
        """Call `test_func` of `source` on the arguments `input_str` stands for (docs/method.md §3)."""
        self._check_usable()
        if not isinstance(source, str):
            raise TypeError(f"source must be a str, got {type(source).__name__}")
        if not timeout_s > 0:
            raise ValueError(f"timeout_s must be > 0, got {timeout_s}")
        if not isinstance(input_str, str):
            return error_result(CallKind.BAD_INPUT,
                                f"InputParseError: input must be a str, got {type(input_str).__name__}", 0.0)
        if len(input_str) > self._opts.max_input_chars:  # don't ship it; the child re-checks the rest
            return error_result(CallKind.BAD_INPUT, f"InputParseError: input has {len(input_str)} characters, more "
                                f"than the limit of {self._opts.max_input_chars}", 0.0)
        try:
            child, evicted = self._acquire(source)
        except SpawnError as exc:
            return error_result(CallKind.UNAVAILABLE, f"SandboxError: could not start a worker ({exc})", 0.0)
        result, keep = None, False
        try:
            result, keep = child.call(input_str, timeout_s, spread_list)
        finally:
            self._release(child, evicted, keep, result)
        return result

    def call_many(self, calls: list[tuple[str, str]], *, timeout_s: float = 10.0,
                  spread_list: bool = True) -> list[CallResult]:
        """Results of `call` for each (source, input_str), in order; up to `workers` run at once."""
        calls = list(calls)
        if len(calls) <= 1 or self.workers == 1:
            return [self.call(s, i, timeout_s=timeout_s, spread_list=spread_list) for s, i in calls]
        with self._cond:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(self.workers, thread_name_prefix="aac-sandbox")
            executor = self._executor
        return list(executor.map(lambda c: self.call(c[0], c[1], timeout_s=timeout_s, spread_list=spread_list),
                                 calls))

    def close(self) -> None:
        """Kill every process (calls still running finish first, then the zygote goes with them)."""
        with self._cond:
            self._closed = True
            idle = list(self._lru)
            self._lru.clear()
            self._idle.clear()
            executor, self._executor = self._executor, None
        for w in idle:
            w.kill()
            with self._cond:
                self._forget(w)
        if executor is not None:
            executor.shutdown(wait=True)
        self._kill_zygote_if_done()

    def __enter__(self) -> SandboxPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------ children

    def _check_usable(self) -> None:
        if self._pid != os.getpid():
            raise RuntimeError("SandboxPool was created in another process; create a new pool after fork")
        if self._closed:
            raise RuntimeError("SandboxPool is closed")

    def _forget(self, child: Child) -> None:
        """Drop a child from the books (under the lock)."""
        if child in self._all:
            self._all.discard(child)
            self._warm_kib -= child.counted_kib

    def _shrink(self, incoming: int) -> list[Child]:
        """Idle children to evict (oldest first) so that `incoming` more fit the warm limit and the
        memory bound (under the lock; the caller kills them)."""
        evict = []
        budget = self.warm_memory_mb * 1024
        while self._lru and (len(self._all) + incoming > self.warm_limit or self._warm_kib > budget):
            victim = self._lru.popitem(last=False)[0]
            self._idle[victim.source].remove(victim)
            if not self._idle[victim.source]:
                del self._idle[victim.source]
            self._forget(victim)
            evict.append(victim)
            self._stats["evicted"] += 1
        return evict

    def _acquire(self, source: str | None) -> tuple[Child, list[Child]]:
        """An idle child for `source` (loading it into a fresh one if needed), waiting for a slot;
        and the children evicted for it, being killed: `_release` waits for them after the call,
        so their exits (namespace teardown takes milliseconds) overlap it."""
        evict: list[Child] = []
        with self._cond:
            while self._busy >= self.workers:
                self._cond.wait()
            self._check_usable()
            self._busy += 1
            child = self._pop_idle(source, evict)
            if child is None and source is not None:
                child = self._pop_idle(None, evict)  # a started child with nothing loaded yet
            for w in evict:
                self._forget(w)
            if child is None:
                evict += self._shrink(1)
        for w in evict:
            w.terminate()
        if child is None:
            try:
                child = self._spawn()
            except BaseException:
                with self._cond:
                    self._busy -= 1
                    self._cond.notify()
                for w in evict:
                    w.kill()
                raise
        try:
            if source is None:
                child.ready()
            elif child.source is None:
                child.load(source)
        except (OSError, proto.FrameTimeout, SpawnError) as exc:
            self._release(child, evict, False)
            raise SpawnError(f"could not load the source: {exc}") from None
        return child, evict

    def _pop_idle(self, source: str | None, dead: list[Child]) -> Child | None:
        """The most recently used idle child for `source`; ones that died while idle go to `dead`."""
        idle = self._idle.get(source)
        while idle:
            child = idle.pop()
            del self._lru[child]
            if child.alive():
                break
            dead.append(child)
            self._stats["crashes"] += 1
        else:
            child = None
        if not idle:
            self._idle.pop(source, None)
        return child

    def _release(self, child: Child, evicted: list[Child], keep: bool, result: CallResult | None = None) -> None:
        zygote, refill, child.refill = child.zygote, child.refill, False
        evict: list[Child] = []
        with self._cond:
            self._busy -= 1
            if result is not None:
                self._stats["calls"] += 1
                if not keep:
                    self._stats[_RETIRED_BY.get(result.kind, "retired")] += 1
            if keep and not self._closed and not child.closed:
                self._idle.setdefault(child.source, []).append(child)
                self._lru[child] = None
                if child in self._all:
                    self._warm_kib += child.memory_kib - child.counted_kib
                child.counted_kib = child.memory_kib
                evict = self._shrink(0)
                child = None
            else:
                self._forget(child)
            self._cond.notify()
        if refill:  # with the worker slot free: other callers need not wait for the zygote
            zygote.settle()
        for w in [*evicted, *evict]:
            w.kill()
        if child is not None:
            child.kill()
            if self._closed:
                self._kill_zygote_if_done()

    def _kill_zygote_if_done(self) -> None:
        with self._cond:
            if not self._closed or self._busy:
                return
            zygotes, self._zygote[:] = list(self._zygote), []
        for z in zygotes:
            z.kill()

    def _spawn(self) -> Child:
        for attempt in range(2):  # once more on failure: a busy machine, a transient error, a dead zygote
            with self._detect_lock:
                zygote = self._zygote[0] if self._zygote and self._zygote[0].alive() else None
                if zygote is None:
                    return self._start_zygote()
            try:
                return self._new_child(zygote)
            except SpawnError:
                if attempt:
                    raise
        raise AssertionError("unreachable")

    def _start_zygote(self) -> Child:
        """Start the zygote (under `_detect_lock`; the first time, trying modes strongest first)
        and fork its first child, which proves the mode works."""
        for z in self._zygote:
            z.kill()
        self._zygote.clear()
        if self._mode is not None:
            modes = [self._mode]
        else:
            cached = _AUTO_MODE.get(os.geteuid())
            modes = [cached] if cached else [m for m in MODES if m != "namespaces" or os.geteuid() == 0]
        failures = []
        for mode in modes:
            zygote = None
            try:
                zygote = Zygote(self._opts, mode, self.owner)
                with self._cond:
                    self._stats["zygotes"] += 1
                child = self._new_child(zygote)
            except SpawnError as exc:
                if zygote is not None:
                    zygote.kill()
                failures.append(f"{mode}: {exc}")
                continue
            try:
                child.ready()
            except SpawnError as exc:
                child.kill()
                zygote.kill()
                with self._cond:
                    self._forget(child)
                failures.append(f"{mode}: {exc}")
                continue
            self._zygote.append(zygote)
            if not self._details:
                if self._requested == "auto":
                    _AUTO_MODE[os.geteuid()] = mode
                self._mode, self._details = mode, {**zygote.details, **child.details}
                self._log_isolation(mode, self._details, failures)
            return child
        if len(modes) == 1 and self._details:
            raise SpawnError("; ".join(failures))  # worked before: report it like any failed start
        raise SandboxUnavailable("no sandbox worker could start: " + "; ".join(failures))

    def _new_child(self, zygote: Zygote) -> Child:
        child = Child(zygote)
        with self._cond:
            self._all.add(child)
            self._stats["spawned"] += 1
        return child

    @staticmethod
    def _log_isolation(mode: str, details: dict, failures: list[str]) -> None:
        if mode in _LOGGED:
            return
        _LOGGED.add(mode)
        skipped = f" (unavailable: {'; '.join(failures)})" if failures else ""
        weak = mode not in NAMESPACED or "unreadable_import_paths" in details
        level = logging.WARNING if weak else logging.INFO
        log.log(level, "sandbox isolation: %s%s; %s", mode, skipped, details)

    @staticmethod
    def _kill_all(children: set[Child], zygotes: list[Zygote]) -> None:
        for z in list(zygotes):
            z.kill()
        zygotes.clear()
        for w in list(children):
            w.kill()
        children.clear()

    def _forget_after_fork(self) -> None:
        for w in list(self._all):
            w.forget()
        for z in self._zygote:
            z.forget()
        self._zygote.clear()
        self._all.clear()
        self._lru.clear()
        self._idle.clear()
        self._warm_kib = 0
        self._cond = threading.Condition()
        self._executor = None


def _after_fork_in_child() -> None:
    for pool in list(_POOLS):
        pool._forget_after_fork()


os.register_at_fork(after_in_child=_after_fork_in_child)

_default_pool: SandboxPool | None = None
_default_lock = threading.Lock()


def default_pool() -> SandboxPool:
    """The process-wide pool `run_function` uses (closed at exit)."""
    global _default_pool
    with _default_lock:
        if _default_pool is None or _default_pool._closed or _default_pool._pid != os.getpid():
            _default_pool = SandboxPool()
            atexit.register(_default_pool.close)
        return _default_pool


def run_function(source: str, input_str: str, *, timeout_s: float = 10.0, spread_list: bool = True) -> CallResult:
    """Call `test_func` of `source` on `input_str` in the shared sandbox pool (see `SandboxPool.call`)."""
    return default_pool().call(source, input_str, timeout_s=timeout_s, spread_list=spread_list)
