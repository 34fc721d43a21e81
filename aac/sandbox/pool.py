"""Call an untrusted `test_func` on a model's input (docs/method.md §3), isolated and fast.

The source and the inputs are untrusted. Each pool has one zygote, a process already inside the
strongest isolation the machine allows (`_isolate.py`: namespaces as root, user namespaces,
Landlock, or rlimits only) with the interpreter and its imports loaded; it forks a child per new
source in milliseconds (its own mount, PID and IPC namespaces, private /tmp, uid nobody, rlimits;
no processes or threads of its own). Children stay warm per source, least recently used evicted,
as many as `keep_warm(n)` asks for (the live episodes' functions) within `max_warm` and
`warm_memory_mb`. They talk JSON over pipes: no pickle, so a hostile child can only send data,
which is bounded and validated; a child is killed (SIGKILL via pidfd) and replaced on a timeout, a
crash, a bad reply, or a state it cannot restore. The zygote and the supervisors are trusted
code and never run a source.

Calls run in the warm child itself, not in a fork per call (a fork costs ~30x a warm call): the
source is re-executed in fresh globals per call, like the release's fresh process, and the child
restores what a hostile call may change (see `_worker.py`).

Errors are results, one line each: the function's own exception (`"ValueError: ..."`),
`"InputParseError: ..."`, `"TimeoutError: call exceeded 10.0 s"`, `"SandboxError: the worker died
by SIGSEGV: ..."` (a crash, `os._exit`, the CPU limit) or `"OutputError: ..."` (an unprintable result).

    with SandboxPool(workers=2) as pool:
        pool.keep_warm(16)  # e.g. 16 episodes in flight, each on its own function
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
import select
import shutil
import signal
import socket
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


def error_result(error: str, duration_s: float) -> CallResult:
    """A call that gave no value: `error` (one line, clipped), nothing to show or compare."""
    return CallResult(output=None, error=error[:_MAX_ERROR_CHARS], duration_s=duration_s, output_repr="None",
                      normalized=None)


class SandboxUnavailable(RuntimeError):
    """No worker can be started with the requested isolation on this machine."""


class _SpawnError(Exception):
    pass


def _above_stdio(fd: int) -> int:
    """`fd`, moved to a number >= 3 if needed (never a stdio number in a child), close-on-exec."""
    if fd < 3:
        new = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
        os.close(fd)
        return new
    return fd


def _pipe() -> tuple[int, int]:
    r, w = os.pipe()
    return _above_stdio(r), _above_stdio(w)


def _socketpair() -> tuple[int, int]:
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    return _above_stdio(ours.detach()), _above_stdio(theirs.detach())


def _pidfd_pid(pidfd: int) -> int:
    """The pid (in this process's namespace) a pidfd refers to; 0 when it has exited."""
    try:
        with open(f"/proc/self/fdinfo/{pidfd}") as fh:
            for line in fh:
                if line.startswith("Pid:"):
                    return max(int(line.split()[1]), 0)
    except (OSError, ValueError):
        pass
    return 0


def _exited(pidfd: int) -> bool:
    """Whether the process of `pidfd` has exited (a pidfd reads then)."""
    poller = select.poll()
    poller.register(pidfd, select.POLLIN)
    return bool(poller.poll(0))


def _signal_pidfd(pidfd: int) -> None:
    if pidfd >= 0:
        try:
            signal.pidfd_send_signal(pidfd, signal.SIGKILL)
        except OSError:
            pass


def _close(*fds: int) -> None:
    for fd in fds:
        if fd >= 0:
            try:
                os.close(fd)
            except OSError:
                pass


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


def _private_kib(pid: int) -> int | None:
    """Memory only this process holds (private pages, KiB): what killing it frees."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as fh:
            return sum(int(line.split()[1]) for line in fh if line.startswith(("Private_Clean:", "Private_Dirty:")))
    except (OSError, ValueError, IndexError):
        return None


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
    preload: tuple[str, ...]
    spare_children: int


_NAMESPACED = ("namespaces", "userns")


class _Zygote:
    """The pool's fork server: the zygote's supervisor (started here), the zygote (already
    inside the isolation, imports loaded) and the control socket that asks it for children.
    In namespace modes a child needs nothing from the parent before it starts (its /tmp is its
    own tmpfs), so `spare_children` of them are kept here, forked and isolated ahead of demand:
    a new function's call takes one at once and asks the zygote for its replacement, which is
    forked while that call runs; the reply is collected before the call returns (`settle`), so
    the pool's processes are what `live_pids` says whenever a call has returned."""

    def __init__(self, opts: _Options, mode: str, owner: str):
        self.opts, self.mode, self.owner = opts, mode, owner
        self.details: dict = {}
        self.closed = False
        self.proc: subprocess.Popen | None = None
        self.pid, self.pidfd, self.ctl, self.life_w = 0, -1, -1, -1
        self.lock = threading.Lock()  # the control socket: requests and their replies, in order
        self.child_private_kib: int | None = None  # its first child's own pages (see `_Child._account`)
        self.seq = 0  # the last request sent
        self.answered = 0  # the last request whose reply has come
        self.target = opts.spare_children if mode in _NAMESPACED else 0
        self.spares: list[list[int]] = []  # the fds of each spare child (as `fork` returns them), oldest first
        try:
            self._start()
        except (OSError, proto.ProtocolError) as exc:
            self.kill()
            raise _SpawnError(str(exc)) from None
        except BaseException:
            self.kill()
            raise

    def _start(self) -> None:
        opts = self.opts
        home = "/tmp" if self.mode in _NAMESPACED else tempfile.gettempdir()
        life_r, self.life_w = _pipe()
        self.ctl, theirs = _socketpair()
        cfg = {"owner": self.owner, "mode": self.mode, "life_fd": life_r, "ctl_fd": theirs,
               "memory_mb": opts.memory_mb, "cpu_s": opts.cpu_time_s, "tmp_mb": opts.tmp_mb,
               "fsize_mb": opts.fsize_mb, "nofile": opts.nofile, "preload": list(opts.preload),
               "sys_path": [p for p in sys.path if p and os.path.isabs(p) and os.path.exists(p)]}
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": home, "TMPDIR": home, "LANG": "C.UTF-8",
               "PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1", "OMP_NUM_THREADS": "1",
               "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-S", "-B", _WORKER_SCRIPT, json.dumps(cfg)],
                pass_fds=(life_r, theirs), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL, start_new_session=True, env=env, cwd="/")
        finally:
            _close(life_r, theirs)
        deadline = time.monotonic() + opts.spawn_timeout_s
        while True:
            try:
                msg, fds = proto.recv_message(self.ctl, 0, deadline)
            except proto.FrameTimeout:
                raise _SpawnError(f"no answer within {opts.spawn_timeout_s} s") from None
            _close(*fds)
            if msg is None:
                raise _SpawnError(f"zygote {_describe_exit(self._exit_code())} while starting")
            op = msg.get("op")
            if op == "spawned" and type(msg.get("pid")) is int and msg["pid"] > 0 and not self.pid:
                self.pid = msg["pid"]
                self.pidfd = os.pidfd_open(self.pid)
            elif op == "fatal":
                raise _SpawnError(str(msg.get("error"))[:500])
            elif op == "hello" and self.pid:
                self.details = msg.get("details") if type(msg.get("details")) is dict else {}
                self._request(self.target)
                return
            else:
                raise _SpawnError(f"unexpected message {str(msg)[:200]}")

    def _exit_code(self, wait_s: float = 1.0) -> int | None:
        try:
            return self.proc.wait(timeout=wait_s)
        except subprocess.TimeoutExpired:
            return None

    def fork(self, tmp_dir: str | None, deadline: float) -> tuple[list[int], bool]:
        """A new child: ([request pipe, response pipe, its control socket, its pidfd], whether the
        call that uses it must `settle` before it returns: a spare's replacement is on its way)."""
        with self.lock:
            if self.closed:
                raise _SpawnError("the zygote is gone")
            try:
                if self.target:
                    while True:
                        fds = self._take_spare(deadline)
                        if not _exited(fds[3]):
                            break
                        _close(*fds)  # died while waiting (an out-of-memory kill): the zygote reaped it
                    self._request(self.target - len(self.spares) - (self.seq - self.answered))
                    return fds, True
                self._request(1, tmp_dir)
                msg, fds = self._reply(deadline)
            except (OSError, proto.FrameTimeout, proto.ProtocolError) as exc:
                self.kill()  # a reply may still come: the next request would read it
                raise _SpawnError(f"the zygote did not answer ({type(exc).__name__}: {exc})") from None
        if msg.get("op") == "forked":
            return fds, False
        raise _SpawnError(str(msg.get("error") or f"unexpected message {str(msg)[:200]}")[:500])

    def settle(self) -> None:
        """Collect the children requested so far (forked while the call that asked for them ran,
        so this seldom waits)."""
        with self.lock:
            if self.closed:
                return
            try:
                self._collect(time.monotonic() + self.opts.spawn_timeout_s)
            except (OSError, proto.FrameTimeout, proto.ProtocolError):
                self.kill()  # as in `fork`: a late reply would answer the next request

    def _request(self, n: int, tmp_dir: str | None = None) -> None:
        """Ask for `n` children (under the lock; the replies come in order)."""
        for _ in range(n):
            self.seq += 1
            proto.send_message(self.ctl, {"op": "fork", "id": self.seq, "tmp": tmp_dir})

    def _reply(self, deadline: float) -> tuple[dict, list[int]]:
        """The next reply: ("forked" and its 4 fds) or a failure (under the lock)."""
        msg, fds = proto.recv_message(self.ctl, 4, deadline)
        if msg is None:
            raise proto.ProtocolError("the zygote exited")
        if msg.get("id") != self.answered + 1 or (msg.get("op") == "forked") != (len(fds) == 4):
            _close(*fds)
            raise proto.ProtocolError(f"unexpected message {str(msg)[:200]}")
        self.answered += 1
        return msg, fds

    def _collect(self, deadline: float) -> None:
        """Every outstanding reply, each child it brings into `spares` (under the lock)."""
        while self.answered < self.seq:
            msg, fds = self._reply(deadline)
            if msg.get("op") == "forked":
                self.spares.append(fds)

    def _take_spare(self, deadline: float) -> list[int]:
        """The oldest spare, waiting for one requested if none is here (under the lock)."""
        while not self.spares:
            if self.answered == self.seq:
                self._request(1)
            msg, fds = self._reply(deadline)
            if msg.get("op") == "forked":
                self.spares.append(fds)
            elif self.answered == self.seq:  # the last one asked for failed (no memory or processes)
                raise _SpawnError(str(msg.get("error") or f"unexpected message {str(msg)[:200]}")[:500])
        return self.spares.pop(0)

    def alive(self) -> bool:
        return not self.closed and self.proc is not None and self.proc.poll() is None

    def pids(self) -> list[int]:
        return [p for p in (self.proc.pid if self.proc else 0, self.pid) if p]

    def spare_pids(self) -> list[int]:
        """Process ids of the children forked ahead of demand (not handed out yet)."""
        self.settle()
        with self.lock:
            return [p for p in (_pidfd_pid(fds[3]) for fds in self.spares) if p]

    def kill(self) -> None:
        """Kill the zygote (PID 1 of the pool's namespaces: every child dies with it) and its supervisor."""
        if self.closed:
            return
        self.closed = True
        _signal_pidfd(self.pidfd)
        _close(self.life_w, self.ctl, self.pidfd)  # the lifeline's end also makes the supervisor kill it
        self._drop_spares()
        if self.proc is not None:
            if self._exit_code(2.0) is None:
                self._killpg()
                self.proc.wait()
            self._killpg()  # anything that escaped into the group

    def _killpg(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except OSError:
            pass

    def forget(self) -> None:
        """In a forked copy of the parent: drop the fds, leave the processes alone."""
        self.closed = True
        _close(self.life_w, self.ctl, self.pidfd)
        self._drop_spares()

    def _drop_spares(self) -> None:
        spares, self.spares = self.spares, []
        for fds in spares:
            _close(*fds)


class _Child:
    """One warm child, forked (and supervised) by the zygote, bound to one source once loaded."""

    def __init__(self, zygote: _Zygote):
        self.opts, self.zygote = zygote.opts, zygote
        self.source: str | None = None
        self.details: dict = {}
        self.closed = False
        self.seq = 0
        self.calls = 0
        self.tmp_dir: str | None = None
        self._pid = 0  # see `pid`
        self.started = False  # its hello has come
        self.refill = False  # the zygote's children to settle after this child's first call (see `_Zygote.fork`)
        self.req_w = self.resp_r = self.ctl = self.pidfd = -1
        self.memory_kib = 0  # what this child holds alone (see `_account`)
        self.counted_kib = 0  # the part of it the pool has counted
        self._private0 = self._rss0 = 0
        try:
            self._start(zygote)
        except (OSError, proto.ProtocolError) as exc:  # no pipes, fds or memory for a process right now
            self.kill()
            raise _SpawnError(str(exc)) from None
        except BaseException:
            self.kill()
            raise

    def _start(self, zygote: _Zygote) -> None:
        if zygote.mode not in _NAMESPACED:
            self.tmp_dir = tempfile.mkdtemp(prefix="aac-sandbox-")
            if os.geteuid() == 0:
                os.chown(self.tmp_dir, NOBODY, NOBODY)
        (self.req_w, self.resp_r, self.ctl, self.pidfd), self.refill = zygote.fork(
            self.tmp_dir, time.monotonic() + self.opts.spawn_timeout_s)
        self._exited = select.poll()
        self._exited.register(self.pidfd, select.POLLIN)
        os.set_blocking(self.req_w, False)
        self.reader = proto.FrameReader(self.resp_r)

    def ready(self) -> None:
        """Wait until the child runs (its hello). The first requests may be written before (they
        wait in the pipe while it sets itself up)."""
        if self.started:
            return
        deadline = time.monotonic() + self.opts.spawn_timeout_s
        try:
            msg = self.reader.read(deadline)
        except proto.FrameTimeout:
            raise _SpawnError(f"no answer within {self.opts.spawn_timeout_s} s") from None
        except (OSError, proto.ProtocolError) as exc:
            raise _SpawnError(str(exc)) from None
        if msg is None:
            raise _SpawnError(f"child {_describe_exit(self._exit_code())} while starting")
        if msg.get("op") == "fatal":
            raise _SpawnError(str(msg.get("error"))[:500])
        if msg.get("op") != "hello":
            raise _SpawnError(f"unexpected message {str(msg)[:200]}")
        self.details = msg.get("details") if type(msg.get("details")) is dict else {}
        self.started = True

    def load(self, source: str) -> None:
        self.source = source
        proto.write_frame(self.req_w, proto.encode_frame({"op": "load", "source": source}),
                          time.monotonic() + self.opts.spawn_timeout_s)

    def _exit_code(self, wait_s: float = 1.0) -> int | None:
        """The child's exit status as the zygote reports it (None if it does not in time)."""
        try:
            msg, fds = proto.recv_message(self.ctl, 0, time.monotonic() + wait_s)
        except (OSError, proto.FrameTimeout, proto.ProtocolError):
            return None
        _close(*fds)
        code = (msg or {}).get("code")
        return code if type(code) is int else None

    def call(self, input_str: str, timeout_s: float, spread_list: bool) -> tuple[CallResult, bool]:
        """Run one call; returns the result and whether this child may serve more calls (if not,
        it is being killed already: `SandboxPool._release` waits for it)."""
        opts = self.opts
        self.seq += 1
        request = proto.encode_frame({
            "op": "call", "id": self.seq, "input": input_str, "spread_list": spread_list,
            "max_chars": opts.max_input_chars, "max_depth": opts.max_input_depth, "max_repr": opts.max_output_chars})
        start = time.monotonic()
        deadline = start + timeout_s
        try:
            proto.write_frame(self.req_w, request, deadline)
            if not self.started:  # a fresh child: its start overlaps the writes
                try:
                    self.ready()
                except _SpawnError as exc:
                    self.terminate()
                    return error_result(f"SandboxError: could not start a worker ({exc})", 0.0), False
                start = time.monotonic()
                deadline = start + timeout_s
            resp = self.reader.read(deadline)
        except proto.FrameTimeout:
            self.terminate()
            return error_result(f"TimeoutError: call exceeded {float(timeout_s)} s", time.monotonic() - start), False
        except proto.ProtocolError as exc:
            self.terminate()
            return error_result(f"SandboxError: invalid reply from the worker ({exc})",
                                 time.monotonic() - start), False
        except OSError:  # a broken pipe: the child is gone
            resp = None
        if resp is None:
            reason = _describe_exit(self._exit_code())
            self.terminate()
            return error_result(f"SandboxError: the worker {reason} during the call",
                                 time.monotonic() - start), False
        try:
            result, retire = self._result(resp, time.monotonic() - start)
        except (KeyError, TypeError, ValueError) as exc:
            self.terminate()
            return error_result(f"SandboxError: invalid reply from the worker ({exc})",
                                 time.monotonic() - start), False
        if retire or self.reader.buf:  # leftover bytes: something else wrote to the pipe
            self.terminate()
            return result, False
        self._account(resp.get("rss"))
        return result, True

    def _account(self, rss_kib: Any) -> None:
        """Update `memory_kib`: the private pages of the zygote's first child after its first call
        (children of one zygote start alike; reading smaps_rollup costs ~0.6 ms a child), plus
        the growth of the peak RSS this child reports with every reply since its first (cheap, and
        never less). What that misses, shared pages a child copies without growing, is bounded
        by the zygote's own memory (~10 MiB)."""
        if type(rss_kib) is not int or rss_kib < 0:
            return
        self.calls += 1
        if self.calls == 1:
            if self.zygote.child_private_kib is None:
                private = _private_kib(self.pid) if self.pid else None
                self.zygote.child_private_kib = private if private is not None else rss_kib
            self._private0, self._rss0 = self.zygote.child_private_kib, rss_kib
        self.memory_kib = self._private0 + max(rss_kib - self._rss0, 0)

    def _result(self, resp: dict, elapsed: float) -> tuple[CallResult, bool]:
        if resp["id"] != self.seq:
            raise ValueError("reply to another request")
        duration = resp["dur"]
        if type(duration) not in (int, float) or not 0 <= duration <= elapsed + 1:
            duration = elapsed
        retire = resp.get("retire") is not None
        error = resp.get("error")
        if error is not None:
            return error_result(str(error), float(duration)), retire
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
        return not self.closed and self.pidfd >= 0 and not self._exited.poll(0)

    @property
    def pid(self) -> int:
        """Its process id here, read from its pidfd when first needed (0 once it has exited)."""
        if not self._pid and self.pidfd >= 0:
            self._pid = _pidfd_pid(self.pidfd)
        return self._pid

    def pids(self) -> list[int]:
        return [self.pid] if self.pid else []

    def terminate(self) -> None:
        """Start killing the child (see `kill`)."""
        if self.closed:
            return
        self.closed = True
        _signal_pidfd(self.pidfd)
        _close(self.req_w, self.resp_r, self.ctl)

    def kill(self) -> None:
        """Kill the child, wait until it is gone, remove the private temp dir."""
        if self.pidfd == -2:
            return
        self.terminate()
        if self.pidfd >= 0:
            self._exited.poll(2000)
        _close(self.pidfd)
        self.pidfd = -2  # done
        if self.tmp_dir:
            shutil.rmtree(self.tmp_dir, ignore_errors=True)

    def forget(self) -> None:
        """In a forked copy of the parent: drop the fds, leave the processes alone."""
        self.closed = True
        _close(self.req_w, self.resp_r, self.ctl, self.pidfd)


_AUTO_MODE: dict[int, str] = {}  # euid -> the mode auto-detection found, per process
_LOGGED: set[str] = set()
_POOLS: weakref.WeakSet = weakref.WeakSet()


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
        self._opts = _Options(memory_mb=memory_mb, cpu_time_s=cpu_time_s, max_output_chars=max_output_chars,
                              max_input_chars=max_input_chars, max_input_depth=max_input_depth, tmp_mb=tmp_mb,
                              fsize_mb=fsize_mb, nofile=nofile, spawn_timeout_s=spawn_timeout_s,
                              preload=tuple(preload), spare_children=spare_children)
        self._requested = isolation
        self._mode: str | None = None if isolation == "auto" else isolation
        self._details: dict = {}
        self._cond = threading.Condition()
        self._detect_lock = threading.Lock()  # starts of the zygote
        self._zygote: list[_Zygote] = []  # the live one, if any (a list: the finalizer shares it)
        self._idle: dict[str | None, list[_Child]] = {}
        self._lru: OrderedDict[_Child, None] = OrderedDict()  # idle children, oldest first
        self._all: set[_Child] = set()
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
    def from_config(cls, cfg: Any, **overrides: Any) -> SandboxPool:
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
            return error_result(f"InputParseError: input must be a str, got {type(input_str).__name__}", 0.0)
        if len(input_str) > self._opts.max_input_chars:  # don't ship it; the child re-checks the rest
            return error_result(f"InputParseError: input has {len(input_str)} characters, more than the limit "
                                 f"of {self._opts.max_input_chars}", 0.0)
        try:
            child, evicted = self._acquire(source)
        except _SpawnError as exc:
            return error_result(f"SandboxError: could not start a worker ({exc})", 0.0)
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

    def _forget(self, child: _Child) -> None:
        """Drop a child from the books (under the lock)."""
        if child in self._all:
            self._all.discard(child)
            self._warm_kib -= child.counted_kib

    def _shrink(self, incoming: int) -> list[_Child]:
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

    def _acquire(self, source: str | None) -> tuple[_Child, list[_Child]]:
        """An idle child for `source` (loading it into a fresh one if needed), waiting for a slot;
        and the children evicted for it, being killed: `_release` waits for them after the call,
        so their exits (namespace teardown takes milliseconds) overlap it."""
        evict: list[_Child] = []
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
        except (OSError, proto.FrameTimeout, _SpawnError) as exc:
            self._release(child, evict, False)
            raise _SpawnError(f"could not load the source: {exc}") from None
        return child, evict

    def _pop_idle(self, source: str | None, dead: list[_Child]) -> _Child | None:
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

    def _release(self, child: _Child, evicted: list[_Child], keep: bool, result: CallResult | None = None) -> None:
        zygote, refill, child.refill = child.zygote, child.refill, False
        evict: list[_Child] = []
        with self._cond:
            self._busy -= 1
            if result is not None:
                self._stats["calls"] += 1
                if not keep:
                    error = result.error or ""
                    kind = ("timeouts" if error.startswith("TimeoutError: call exceeded")
                            else "crashes" if error.startswith("SandboxError") else "retired")
                    self._stats[kind] += 1
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

    def _spawn(self) -> _Child:
        for attempt in range(2):  # once more on failure: a busy machine, a transient error, a dead zygote
            with self._detect_lock:
                zygote = self._zygote[0] if self._zygote and self._zygote[0].alive() else None
                if zygote is None:
                    return self._start_zygote()
            try:
                return self._new_child(zygote)
            except _SpawnError:
                if attempt:
                    raise
        raise AssertionError("unreachable")

    def _start_zygote(self) -> _Child:
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
                zygote = _Zygote(self._opts, mode, self.owner)
                with self._cond:
                    self._stats["zygotes"] += 1
                child = self._new_child(zygote)
            except _SpawnError as exc:
                if zygote is not None:
                    zygote.kill()
                failures.append(f"{mode}: {exc}")
                continue
            try:
                child.ready()
            except _SpawnError as exc:
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
            raise _SpawnError("; ".join(failures))  # worked before: report it like any failed start
        raise SandboxUnavailable("no sandbox worker could start: " + "; ".join(failures))

    def _new_child(self, zygote: _Zygote) -> _Child:
        child = _Child(zygote)
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
        weak = mode not in _NAMESPACED or "unreadable_import_paths" in details
        level = logging.WARNING if weak else logging.INFO
        log.log(level, "sandbox isolation: %s%s; %s", mode, skipped, details)

    @staticmethod
    def _kill_all(children: set[_Child], zygotes: list[_Zygote]) -> None:
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
