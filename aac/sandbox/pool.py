"""Call an untrusted `test_func` on a model's input (SPEC §3), isolated and fast.

The source and the inputs are untrusted. Each source gets warm worker processes (kept per source,
least recently used evicted) that talk JSON over pipes: no pickle, so a hostile worker can only
send data, which is bounded and validated. Workers run with the strongest isolation the machine
allows (`_isolate.py`: namespaces as root, user namespaces, Landlock, or rlimits only),
cannot create processes or threads, and are killed (SIGKILL via pidfd, then their process group)
and replaced on a timeout, a crash, a bad reply, or a state they cannot restore.

Calls run in the warm worker itself, not in a fork per call (a fork costs ~30x a warm call): the
source is re-executed in fresh globals per call, like the release's fresh process, and the worker
restores what a hostile call may change (see `_worker.py`).

Errors are results, one line each: the function's own exception (`"ValueError: ..."`),
`"InputParseError: ..."`, `"TimeoutError: call exceeded 10.0 s"`, `"SandboxError: the worker died
by SIGSEGV: ..."` (a crash, `os._exit`, the CPU limit) or `"OutputError: ..."` (an unprintable result).

    with SandboxPool(workers=2) as pool:
        result = pool.call(source, "(3, 'ab')", timeout_s=10.0)
        result.ok, result.output, result.output_repr, result.normalized, result.error

`run_function(source, input_str)` uses one shared pool per process.
"""

from __future__ import annotations

import atexit
import fcntl
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aac.sandbox._protocol as proto
from aac.sandbox._isolate import MODES, NOBODY

log = logging.getLogger(__name__)

_WORKER_SCRIPT = str(Path(__file__).with_name("_worker.py"))
_MAX_ERROR_CHARS = 1000


@dataclass(frozen=True)
class CallResult:
    """One call's result. `output` is the value when it is small and made of literal types
    (tuples stay tuples), else None; `output_repr` is the bounded text a model sees ("None" on
    an error); `normalized` is `values.normalize(output)` (None on an error; a digest dict for very
    large outputs) and is what comparisons use; `duration_s` is the function's own run time, or
    the wall time until a timed-out or crashed call was stopped."""

    output: Any
    error: str | None
    duration_s: float
    output_repr: str
    normalized: Any

    @property
    def ok(self) -> bool:
        return self.error is None


def _error_result(error: str, duration_s: float) -> CallResult:
    return CallResult(output=None, error=error[:_MAX_ERROR_CHARS], duration_s=duration_s, output_repr="None",
                      normalized=None)


class SandboxUnavailable(RuntimeError):
    """No worker can be started with the requested isolation on this machine."""


class _SpawnError(Exception):
    pass


def _pipe() -> tuple[int, int]:
    """A close-on-exec pipe whose ends are >= 3 (never a stdio number in the child)."""
    r, w = os.pipe()
    fds = []
    for fd in (r, w):
        if fd < 3:
            new = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
            os.close(fd)
            fd = new
        fds.append(fd)
    return fds[0], fds[1]


def _describe_exit(code: int | None) -> str:
    if code is None:
        return "stopped responding"
    if code >= 128:
        sig = code - 128
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = f"signal {sig}"
        reason = {"SIGXCPU": ": CPU time limit", "SIGKILL": ": killed (CPU or memory limit, or by itself)",
                  "SIGSEGV": ": segmentation fault", "SIGABRT": ": aborted", "SIGBUS": ": bus error"}.get(name, "")
        return f"died by {name}{reason}"
    return f"exited with code {code}"


@dataclass(frozen=True)
class _Options:
    memory_mb: int
    cpu_time_s: float
    max_output_chars: int
    max_input_chars: int
    max_input_depth: int
    tmp_mb: int
    fsize_mb: int
    nofile: int
    spawn_timeout_s: float


class _Worker:
    """One warm worker process pair (supervisor + worker), bound to one source once loaded."""

    def __init__(self, opts: _Options, mode: str, owner: str):
        self.opts = opts
        self.owner = owner
        self.mode = mode
        self.source: str | None = None
        self.pid = 0
        self.pidfd = -1
        self.details: dict = {}
        self.closed = False
        self.seq = 0
        self.tmp_dir: str | None = None
        self.proc: subprocess.Popen | None = None
        self.req_w = self.resp_r = self.life_w = -1
        try:
            self._start()
        except OSError as exc:  # no pipes, fds or memory for a process right now
            self.kill()
            raise _SpawnError(str(exc)) from None
        except BaseException:
            self.kill()
            raise

    def _start(self) -> None:
        opts = self.opts
        namespaced = self.mode in ("namespaces", "userns")
        if not namespaced:
            self.tmp_dir = tempfile.mkdtemp(prefix="aac-sandbox-")
            if os.geteuid() == 0:
                os.chown(self.tmp_dir, NOBODY, NOBODY)
        home = "/tmp" if namespaced else self.tmp_dir
        life_r, self.life_w = _pipe()
        req_r, self.req_w = _pipe()
        self.resp_r, resp_w = _pipe()
        cfg = {"owner": self.owner, "mode": self.mode, "life_fd": life_r, "req_fd": req_r, "resp_fd": resp_w, "tmp_dir": home,
               "memory_mb": opts.memory_mb, "cpu_s": opts.cpu_time_s, "tmp_mb": opts.tmp_mb,
               "fsize_mb": opts.fsize_mb, "nofile": opts.nofile,
               "sys_path": [p for p in sys.path if p and os.path.isabs(p) and os.path.exists(p)]}
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": home, "TMPDIR": home, "LANG": "C.UTF-8",
               "PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1", "OMP_NUM_THREADS": "1",
               "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-S", "-B", _WORKER_SCRIPT, json.dumps(cfg)],
                pass_fds=(life_r, req_r, resp_w), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL, start_new_session=True, env=env, cwd="/")
        finally:
            for fd in (life_r, req_r, resp_w):
                os.close(fd)
        os.set_blocking(self.req_w, False)
        self.reader = proto.FrameReader(self.resp_r)
        deadline = time.monotonic() + opts.spawn_timeout_s
        while True:
            try:
                msg = self.reader.read(deadline)
            except proto.FrameTimeout:
                raise _SpawnError(f"no answer within {opts.spawn_timeout_s} s") from None
            except proto.ProtocolError as exc:
                raise _SpawnError(str(exc)) from None
            if msg is None:
                raise _SpawnError(f"worker {_describe_exit(self._exit_code())} while starting")
            op = msg.get("op")
            if op == "spawned" and type(msg.get("pid")) is int and msg["pid"] > 0 and not self.pid:
                self.pid = msg["pid"]
                try:
                    self.pidfd = os.pidfd_open(self.pid)
                except (AttributeError, OSError):
                    self.pidfd = -1
            elif op == "fatal":
                raise _SpawnError(str(msg.get("error"))[:500])
            elif op == "hello" and self.pid:
                self.details = msg.get("details") if type(msg.get("details")) is dict else {}
                return
            else:
                raise _SpawnError(f"unexpected message {str(msg)[:200]}")

    def load(self, source: str) -> None:
        self.source = source
        proto.write_frame(self.req_w, proto.encode_frame({"op": "load", "source": source}),
                          time.monotonic() + self.opts.spawn_timeout_s)

    def _exit_code(self, wait_s: float = 1.0) -> int | None:
        try:
            return self.proc.wait(timeout=wait_s)
        except subprocess.TimeoutExpired:
            return None

    def call(self, input_str: str, timeout_s: float, spread_list: bool) -> tuple[CallResult, bool]:
        """Run one call; returns the result and whether this worker may serve more calls."""
        opts = self.opts
        self.seq += 1
        request = proto.encode_frame({
            "op": "call", "id": self.seq, "input": input_str, "spread_list": spread_list,
            "max_chars": opts.max_input_chars, "max_depth": opts.max_input_depth, "max_repr": opts.max_output_chars})
        start = time.monotonic()
        deadline = start + timeout_s
        try:
            proto.write_frame(self.req_w, request, deadline)
            resp = self.reader.read(deadline)
        except proto.FrameTimeout:
            self.kill()
            return _error_result(f"TimeoutError: call exceeded {float(timeout_s)} s", time.monotonic() - start), False
        except proto.ProtocolError as exc:
            self.kill()
            return _error_result(f"SandboxError: invalid reply from the worker ({exc})",
                                 time.monotonic() - start), False
        except OSError:  # a broken pipe: the worker is gone
            resp = None
        if resp is None:
            reason = _describe_exit(self._exit_code())
            self.kill()
            return _error_result(f"SandboxError: the worker {reason} during the call",
                                 time.monotonic() - start), False
        try:
            result, retire = self._result(resp, time.monotonic() - start)
        except (KeyError, TypeError, ValueError) as exc:
            self.kill()
            return _error_result(f"SandboxError: invalid reply from the worker ({exc})",
                                 time.monotonic() - start), False
        if retire or self.reader.buf:  # leftover bytes: something else wrote to the pipe
            self.kill()
            return result, False
        return result, True

    def _result(self, resp: dict, elapsed: float) -> tuple[CallResult, bool]:
        if resp["id"] != self.seq:
            raise ValueError("reply to another request")
        duration = resp["dur"]
        if type(duration) not in (int, float) or not 0 <= duration <= elapsed + 1:
            duration = elapsed
        retire = resp.get("retire") is not None
        error = resp.get("error")
        if error is not None:
            return _error_result(str(error), float(duration)), retire
        text = resp["repr"]
        if type(text) is not str:
            raise TypeError("repr is not a string")
        output = None
        if "plain" in resp:
            try:
                output = proto.decode_plain(resp["plain"])
            except ValueError:
                output = None
        return CallResult(output=output, error=None, duration_s=float(duration),
                          output_repr=text[: self.opts.max_output_chars], normalized=resp["norm"]), retire

    def alive(self) -> bool:
        return not self.closed and self.proc is not None and self.proc.poll() is None

    def pids(self) -> list[int]:
        return [p for p in (self.proc.pid if self.proc else 0, self.pid) if p]

    def kill(self) -> None:
        """Kill the worker and its supervisor, reap them, and remove the private temp dir."""
        if self.closed:
            return
        self.closed = True
        if self.pidfd >= 0:
            try:
                signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)
            except OSError:
                pass
        for fd in (self.life_w, self.req_w, self.resp_r, self.pidfd):
            if fd >= 0:
                os.close(fd)  # the lifeline's end of file also makes the supervisor kill the worker
        if self.proc is not None:
            if self._exit_code(2.0) is None:
                self._killpg()
                self.proc.wait()
            self._killpg()  # anything that escaped into the group
        if self.tmp_dir:
            shutil.rmtree(self.tmp_dir, ignore_errors=True)

    def _killpg(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except OSError:
            pass

    def forget(self) -> None:
        """In a forked child: drop this process's copies of the pipes, leave the worker alone."""
        self.closed = True
        for fd in (self.life_w, self.req_w, self.resp_r, self.pidfd):
            if fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass


_AUTO_MODE: dict[int, str] = {}  # euid -> the mode auto-detection found, per process
_LOGGED: set[str] = set()
_POOLS: weakref.WeakSet = weakref.WeakSet()


class SandboxPool:
    """Warm, isolated worker processes for calling untrusted functions (thread-safe).

    `workers`: calls that run at once (one process each). `max_warm`: worker processes kept
    (default 4 x workers; least recently used evicted). `memory_mb`: address-space limit per
    worker. `cpu_time_s`: CPU seconds one call may use (RLIMIT_CPU, besides the wall timeout).
    `isolation`: "auto" (the strongest available) or one of `MODES`, then required.
    """

    def __init__(self, workers: int = 2, memory_mb: int = 512, *, cpu_time_s: float = 30.0,
                 max_output_chars: int = 2000, max_input_chars: int = 10000, max_input_depth: int = 50,
                 max_warm: int | None = None, tmp_mb: int = 64, fsize_mb: int = 16, nofile: int = 256,
                 isolation: str = "auto", spawn_timeout_s: float = 30.0):
        if workers < 1:
            raise ValueError(f"workers must be >= 1, got {workers}")
        if isolation != "auto" and isolation not in MODES:
            raise ValueError(f"isolation must be 'auto' or one of {', '.join(MODES)}; got {isolation!r}")
        if memory_mb < 64:
            raise ValueError(f"memory_mb must be >= 64, got {memory_mb}")
        self.workers = workers
        self.max_warm = max(max_warm if max_warm is not None else 4 * workers, workers)
        self._opts = _Options(memory_mb=memory_mb, cpu_time_s=cpu_time_s, max_output_chars=max_output_chars,
                              max_input_chars=max_input_chars, max_input_depth=max_input_depth, tmp_mb=tmp_mb,
                              fsize_mb=fsize_mb, nofile=nofile, spawn_timeout_s=spawn_timeout_s)
        self._requested = isolation
        self._mode: str | None = None if isolation == "auto" else isolation
        self._details: dict = {}
        self._cond = threading.Condition()
        self._detect_lock = threading.Lock()
        self._idle: dict[str | None, list[_Worker]] = {}
        self._lru: OrderedDict[_Worker, None] = OrderedDict()  # idle workers, oldest first
        self._all: set[_Worker] = set()
        self._busy = 0
        self._closed = False
        self._executor: ThreadPoolExecutor | None = None
        self._pid = os.getpid()
        self.owner = f"{self._pid}:{id(self):x}"  # in each worker's command line, to find them with ps
        self._stats = {"calls": 0, "spawned": 0, "timeouts": 0, "crashes": 0, "retired": 0, "evicted": 0}
        self._finalizer = weakref.finalize(self, SandboxPool._kill_all, self._all)
        _POOLS.add(self)

    @classmethod
    def from_config(cls, cfg: Any, **overrides: Any) -> SandboxPool:
        """From an `aac.config.SandboxConfig` (fields it lacks keep their defaults)."""
        keys = ("workers", "memory_mb", "cpu_time_s", "max_output_chars", "max_input_chars", "max_input_depth",
                "max_warm", "tmp_mb", "fsize_mb", "nofile", "isolation")
        kwargs = {k: getattr(cfg, k) for k in keys if getattr(cfg, k, None) is not None}
        kwargs.update(overrides)
        return cls(**kwargs)

    # ------------------------------------------------------------ public API

    @property
    def isolation(self) -> str:
        """The isolation mode workers run under (starts one worker to find out if none ran yet)."""
        if self._mode is None or not self._details:
            self._release(self._acquire(None), True)
        return self._mode

    @property
    def isolation_details(self) -> dict:
        """What the isolation covers, as the first worker reported it."""
        self.isolation  # noqa: B018 - starts a worker if needed
        return dict(self._details)

    @property
    def stats(self) -> dict:
        """Counters: calls, spawned, timeouts, crashes, retired, evicted; plus live worker processes."""
        with self._cond:
            return {**self._stats, "live": len(self._all)}

    def live_pids(self) -> list[int]:
        """Process ids of this pool's live workers and their supervisors."""
        with self._cond:
            return [pid for w in self._all for pid in w.pids()]

    def call(self, source: str, input_str: str, *, timeout_s: float = 10.0, spread_list: bool = True) -> CallResult:
        """Call `test_func` of `source` on the arguments `input_str` stands for (SPEC §3)."""
        self._check_usable()
        if not isinstance(source, str):
            raise TypeError(f"source must be a str, got {type(source).__name__}")
        if not timeout_s > 0:
            raise ValueError(f"timeout_s must be > 0, got {timeout_s}")
        if not isinstance(input_str, str):
            return _error_result(f"InputParseError: input must be a str, got {type(input_str).__name__}", 0.0)
        if len(input_str) > self._opts.max_input_chars:  # don't ship it; the worker re-checks the rest
            return _error_result(f"InputParseError: input has {len(input_str)} characters, more than the limit "
                                 f"of {self._opts.max_input_chars}", 0.0)
        try:
            worker = self._acquire(source)
        except _SpawnError as exc:
            return _error_result(f"SandboxError: could not start a worker ({exc})", 0.0)
        result, keep = None, False
        try:
            result, keep = worker.call(input_str, timeout_s, spread_list)
        finally:
            self._release(worker, keep, result)
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
        """Kill every worker (calls still running finish first and then their worker is killed)."""
        with self._cond:
            self._closed = True
            idle = list(self._lru)
            self._lru.clear()
            self._idle.clear()
            executor, self._executor = self._executor, None
        for w in idle:
            w.kill()
            with self._cond:
                self._all.discard(w)
        if executor is not None:
            executor.shutdown(wait=True)

    def __enter__(self) -> SandboxPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------ workers

    def _check_usable(self) -> None:
        if self._pid != os.getpid():
            raise RuntimeError("SandboxPool was created in another process; create a new pool after fork")
        if self._closed:
            raise RuntimeError("SandboxPool is closed")

    def _acquire(self, source: str | None) -> _Worker:
        """An idle worker for `source` (loading it into a fresh one if needed); waits for a slot."""
        evict: list[_Worker] = []
        with self._cond:
            while self._busy >= self.workers:
                self._cond.wait()
            self._check_usable()
            self._busy += 1
            worker = self._pop_idle(source, evict)
            if worker is None and source is not None:
                worker = self._pop_idle(None, evict)  # a started worker with nothing loaded yet
            if worker is None:
                while len(self._all) - len(evict) + 1 > self.max_warm and self._lru:
                    victim = self._lru.popitem(last=False)[0]
                    self._idle[victim.source].remove(victim)
                    evict.append(victim)
                    self._stats["evicted"] += 1
            for w in evict:
                self._all.discard(w)
        for w in evict:
            w.kill()
        if worker is None:
            try:
                worker = self._spawn()
            except BaseException:
                with self._cond:
                    self._busy -= 1
                    self._cond.notify()
                raise
        if source is not None and worker.source is None:
            try:
                worker.load(source)
            except (OSError, proto.FrameTimeout) as exc:
                self._release(worker, False)
                raise _SpawnError(f"could not load the source: {exc}") from None
        return worker

    def _pop_idle(self, source: str | None, dead: list[_Worker]) -> _Worker | None:
        """The most recently used idle worker for `source`; ones that died while idle go to `dead`."""
        idle = self._idle.get(source)
        while idle:
            worker = idle.pop()
            del self._lru[worker]
            if worker.alive():
                break
            dead.append(worker)
            self._stats["crashes"] += 1
        else:
            worker = None
        if not idle:
            self._idle.pop(source, None)
        return worker

    def _release(self, worker: _Worker, keep: bool, result: CallResult | None = None) -> None:
        with self._cond:
            self._busy -= 1
            if result is not None:
                self._stats["calls"] += 1
                if not keep:
                    error = result.error or ""
                    kind = ("timeouts" if error.startswith("TimeoutError: call exceeded")
                            else "crashes" if error.startswith("SandboxError") else "retired")
                    self._stats[kind] += 1
            if keep and not self._closed and not worker.closed:
                self._idle.setdefault(worker.source, []).append(worker)
                self._lru[worker] = None
                worker = None
            else:
                self._all.discard(worker)
            self._cond.notify()
        if worker is not None:
            worker.kill()

    def _spawn(self) -> _Worker:
        if self._mode is not None and self._details:
            try:
                return self._new_worker(self._mode)
            except _SpawnError:
                return self._new_worker(self._mode)  # once more: a busy machine, a transient error
        with self._detect_lock:
            if self._mode is not None and self._details:
                return self._new_worker(self._mode)
            if self._mode is not None:
                modes = [self._mode]
            else:
                cached = _AUTO_MODE.get(os.geteuid())
                modes = [cached] if cached else [m for m in MODES if m != "namespaces" or os.geteuid() == 0]
            failures = []
            for mode in modes:
                try:
                    worker = self._new_worker(mode)
                except _SpawnError as exc:
                    failures.append(f"{mode}: {exc}")
                    continue
                if self._requested == "auto":
                    _AUTO_MODE[os.geteuid()] = mode
                self._mode, self._details = mode, worker.details
                self._log_isolation(mode, worker.details, failures)
                return worker
            raise SandboxUnavailable("no sandbox worker could start: " + "; ".join(failures))

    def _new_worker(self, mode: str) -> _Worker:
        worker = _Worker(self._opts, mode, self.owner)
        with self._cond:
            self._all.add(worker)
            self._stats["spawned"] += 1
        return worker

    @staticmethod
    def _log_isolation(mode: str, details: dict, failures: list[str]) -> None:
        if mode in _LOGGED:
            return
        _LOGGED.add(mode)
        skipped = f" (unavailable: {'; '.join(failures)})" if failures else ""
        weak = mode not in ("namespaces", "userns") or "unreadable_import_paths" in details
        level = logging.WARNING if weak else logging.INFO
        log.log(level, "sandbox isolation: %s%s; %s", mode, skipped, details)

    @staticmethod
    def _kill_all(workers: set[_Worker]) -> None:
        for w in list(workers):
            w.kill()
        workers.clear()

    def _forget_after_fork(self) -> None:
        for w in list(self._all):
            w.forget()
        self._all.clear()
        self._lru.clear()
        self._idle.clear()
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
