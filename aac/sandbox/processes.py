"""The sandbox's processes, as the pool's trusted parent side sees them: the zygote and its children.

Each pool has one zygote, a process already inside the strongest isolation the machine allows
(`_isolate.py`: namespaces as root, user namespaces, Landlock, or rlimits only) with the
interpreter and its imports loaded; it forks a child per new source in milliseconds (its own
mount, PID and IPC namespaces, private /tmp, uid nobody, rlimits; no processes or threads of its
own). They talk JSON over pipes: no pickle, so a hostile child can only send data, which is
bounded and validated; a child is killed (SIGKILL via pidfd) on a timeout, a crash, a bad reply,
or a state it cannot restore, and its call's error is made here with its kind (`result.py`). The
zygote and the supervisors are trusted code and never run a source. Which children live, and
for which source, is the pool's business (`pool.py`).
"""

from __future__ import annotations

import fcntl
import json
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
from dataclasses import dataclass
from pathlib import Path

import aac.sandbox._protocol as proto
from aac.sandbox._isolate import NOBODY
from aac.sandbox.result import WORKER_KINDS, CallKind, CallResult, error_result

_WORKER_SCRIPT = str(Path(__file__).with_name("_worker.py"))

class SpawnError(Exception):
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
class Options:
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


NAMESPACED = ("namespaces", "userns")


def _interpreter_paths() -> list[str]:
    """The interpreter's prefixes (a venv's and its base's) and its folder: what the zygote keeps
    readable besides the import path, wherever they are (under /tmp too)."""
    paths = [sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
             os.path.dirname(os.path.realpath(sys.executable))]
    return [p for p in dict.fromkeys(paths) if p and os.path.isabs(p) and os.path.isdir(p)]


class Zygote:
    """The pool's fork server: the zygote's supervisor (started here), the zygote (already
    inside the isolation, imports loaded) and the control socket that asks it for children.
    In namespace modes a child needs nothing from the parent before it starts (its /tmp is its
    own tmpfs), so `spare_children` of them are kept here, forked and isolated ahead of demand:
    a new function's call takes one at once and asks the zygote for its replacement, which is
    forked while that call runs; the reply is collected before the call returns (`settle`), so
    the pool's processes are what `live_pids` says whenever a call has returned."""

    def __init__(self, opts: Options, mode: str, owner: str):
        self.opts, self.mode, self.owner = opts, mode, owner
        self.details: dict = {}
        self.closed = False
        self.proc: subprocess.Popen | None = None
        self.pid, self.pidfd, self.ctl, self.life_w = 0, -1, -1, -1
        self.lock = threading.Lock()  # the control socket: requests and their replies, in order
        self.child_private_kib: int | None = None  # its first child's own pages (see `Child._account`)
        self.seq = 0  # the last request sent
        self.answered = 0  # the last request whose reply has come
        self.target = opts.spare_children if mode in NAMESPACED else 0
        self.spares: list[list[int]] = []  # the fds of each spare child (as `fork` returns them), oldest first
        try:
            self._start()
        except (OSError, proto.ProtocolError) as exc:
            self.kill()
            raise SpawnError(str(exc)) from None
        except BaseException:
            self.kill()
            raise

    def _start(self) -> None:
        opts = self.opts
        home = "/tmp" if self.mode in NAMESPACED else tempfile.gettempdir()
        life_r, self.life_w = _pipe()
        self.ctl, theirs = _socketpair()
        cfg = {"owner": self.owner, "mode": self.mode, "life_fd": life_r, "ctl_fd": theirs,
               "memory_mb": opts.memory_mb, "cpu_s": opts.cpu_time_s, "tmp_mb": opts.tmp_mb,
               "fsize_mb": opts.fsize_mb, "nofile": opts.nofile, "preload": list(opts.preload),
               "sys_path": [p for p in sys.path if p and os.path.isabs(p) and os.path.exists(p)],
               "interpreter": _interpreter_paths()}
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
                raise SpawnError(f"no answer within {opts.spawn_timeout_s} s") from None
            _close(*fds)
            if msg is None:
                raise SpawnError(f"zygote {_describe_exit(self._exit_code())} while starting")
            op = msg.get("op")
            if op == "spawned" and type(msg.get("pid")) is int and msg["pid"] > 0 and not self.pid:
                self.pid = msg["pid"]
                self.pidfd = os.pidfd_open(self.pid)
            elif op == "fatal":
                raise SpawnError(str(msg.get("error"))[:500])
            elif op == "hello" and self.pid:
                self.details = msg.get("details") if type(msg.get("details")) is dict else {}
                self._request(self.target)
                return
            else:
                raise SpawnError(f"unexpected message {str(msg)[:200]}")

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
                raise SpawnError("the zygote is gone")
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
                raise SpawnError(f"the zygote did not answer ({type(exc).__name__}: {exc})") from None
        if msg.get("op") == "forked":
            return fds, False
        raise SpawnError(str(msg.get("error") or f"unexpected message {str(msg)[:200]}")[:500])

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
                raise SpawnError(str(msg.get("error") or f"unexpected message {str(msg)[:200]}")[:500])
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


class Child:
    """One warm child, forked (and supervised) by the zygote, bound to one source once loaded."""

    def __init__(self, zygote: Zygote):
        self.opts, self.zygote = zygote.opts, zygote
        self.source: str | None = None
        self.details: dict = {}
        self.closed = False
        self.seq = 0
        self.calls = 0
        self.tmp_dir: str | None = None
        self._pid = 0  # see `pid`
        self.started = False  # its hello has come
        self.refill = False  # the zygote's children to settle after this child's first call (see `Zygote.fork`)
        self.req_w = self.resp_r = self.ctl = self.pidfd = -1
        self.memory_kib = 0  # what this child holds alone (see `_account`)
        self.counted_kib = 0  # the part of it the pool has counted
        self._private0 = self._rss0 = 0
        try:
            self._start(zygote)
        except (OSError, proto.ProtocolError) as exc:  # no pipes, fds or memory for a process right now
            self.kill()
            raise SpawnError(str(exc)) from None
        except BaseException:
            self.kill()
            raise

    def _start(self, zygote: Zygote) -> None:
        if zygote.mode not in NAMESPACED:
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
            raise SpawnError(f"no answer within {self.opts.spawn_timeout_s} s") from None
        except (OSError, proto.ProtocolError) as exc:
            raise SpawnError(str(exc)) from None
        if msg is None:
            raise SpawnError(f"child {_describe_exit(self._exit_code())} while starting")
        if msg.get("op") == "fatal":
            raise SpawnError(str(msg.get("error"))[:500])
        if msg.get("op") != "hello":
            raise SpawnError(f"unexpected message {str(msg)[:200]}")
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
                except SpawnError as exc:
                    return self._stop(CallKind.UNAVAILABLE, f"SandboxError: could not start a worker ({exc})", None)
                start = time.monotonic()
                deadline = start + timeout_s
            resp = self.reader.read(deadline)
        except proto.FrameTimeout:
            return self._stop(CallKind.TIMEOUT, f"TimeoutError: call exceeded {float(timeout_s)} s", start)
        except proto.ProtocolError as exc:
            return self._stop(CallKind.CRASHED, f"SandboxError: invalid reply from the worker ({exc})", start)
        except OSError:  # a broken pipe: the child is gone
            resp = None
        if resp is None:
            reason = _describe_exit(self._exit_code())
            return self._stop(CallKind.CRASHED, f"SandboxError: the worker {reason} during the call", start)
        try:
            result, retire = self._result(resp, time.monotonic() - start)
        except (KeyError, TypeError, ValueError) as exc:
            return self._stop(CallKind.CRASHED, f"SandboxError: invalid reply from the worker ({exc})", start)
        if retire or self.reader.buf:  # leftover bytes: something else wrote to the pipe
            self.terminate()
            return result, False
        self._account(resp.get("rss"))
        return result, True

    def _stop(self, kind: CallKind, error: str, start: float | None) -> tuple[CallResult, bool]:
        """Start killing this child; its call's error (timed from `start`; None: it never ran)."""
        self.terminate()
        return error_result(kind, error, 0.0 if start is None else time.monotonic() - start), False

    def _account(self, rss_kib: object) -> None:
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
            kind = CallKind(resp.get("kind"))
            if kind not in WORKER_KINDS:
                raise ValueError(f"a worker cannot report a call as {kind.value}")
            return error_result(kind, str(error), float(duration)), retire
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


