"""Sandbox processes: run as a script by `aac.sandbox.pool` (standard library only).

Process tree per pool: the parent starts this script, the *zygote's supervisor*; it enters the
isolation namespaces and forks the *zygote* (PID 1 there), which sets up the shared read-only view
(`_isolate.setup_zygote`), preloads the interpreter's imports and then, per request on its control
socket, forks a *child* (the worker) as PID 1 of a new PID namespace (`_isolate.fork_child`). The
child isolates itself the rest of the way (`_isolate.setup_child`: its own mount and IPC
namespaces, private /tmp and /proc, uid nobody, rlimits) and serves calls to one function source
over two pipes until end of file: a fork of a warm process costs about a millisecond where a new
interpreter costs 0.1 s. The zygote also supervises its children (`_ForkServer`): it reports each
one's exit status (128 + signal, or the exit code) and kills it as soon as the parent closes its
control socket; the zygote's supervisor only waits, and kills the zygote (and with it every
process of the pool) when the parent's lifeline pipe closes.

Each call runs the source in fresh globals (like the release's fresh process per call, so
mutable module state does not leak between calls), then restores the process state a hostile
call may have changed (signal handlers and mask, timers, recursion limit, tracing, builtins,
stdio, cwd). What cannot be restored (threads, memory exhaustion) makes the worker ask to retire.
"""

from __future__ import annotations

import _signal
import _thread
import builtins
import gc
import importlib.util
import json
import math
import os
import resource
import select
import signal
import socket
import sys
import time

_HERE = os.path.dirname(os.path.abspath(__file__))


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"_aac_sandbox_{name}", os.path.join(_HERE, f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


values = _load("values")
proto = _load("_protocol")
isolate = _load("_isolate")

FUNCTION = "test_func"
MAX_ERROR_CHARS = 1000
MAX_NORMALIZED_BYTES = 1 << 20  # larger normalised outputs travel as a digest
_TIMERS = (signal.ITIMER_REAL, signal.ITIMER_VIRTUAL, signal.ITIMER_PROF)
_SIGNALS = [s for s in range(1, 32) if s not in (signal.SIGKILL, signal.SIGSTOP)]


def _type_name(obj: object) -> str:
    try:
        return str.__str__(type(obj).__name__)
    except Exception:
        return "Exception"


def format_exception(exc: BaseException) -> str:
    """`Type: message`, bounded; survives a hostile `__str__`."""
    try:
        text = str(exc)
        text = str.__str__(text)
    except BaseException:  # noqa: B036 - user code may raise anything
        text = "<message unavailable>"
    line = f"{_type_name(exc)}: {text}" if text else _type_name(exc)
    return line if len(line) <= MAX_ERROR_CHARS else line[: MAX_ERROR_CHARS - 3] + "..."


class _Server:
    """Serves `load` and `call` requests for one source. Built once in the zygote, before it forks
    (every child starts from the same state, and inherits the snapshots instead of building them
    with ~150 copy-on-write faults each); `bind` completes it in the child, after its isolation."""

    def __init__(self, cpu_s: float):
        # per call, the soft RLIMIT_CPU sits cpu_s above what the worker has used; its SIGXCPU ends
        # the worker (the default action would be ignored by PID 1 of a namespace)
        self.cpu_s = cpu_s
        signal.signal(signal.SIGXCPU, _cpu_exceeded)
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # an oversized write fails instead of killing
        self.req_fd = self.resp_fd = -1
        self.cpu_hard = 0
        self.code = None
        self.load_error = f"NameError: name '{FUNCTION}' is not defined"
        self.cwd = "/"
        self.umask = 0o022
        self.reclimit = sys.getrecursionlimit()
        self.mask = _signal.pthread_sigmask(signal.SIG_BLOCK, ())
        self.handlers = [(s, _signal.getsignal(s)) for s in _SIGNALS]
        self.builtins = dict(builtins.__dict__)
        self.builtin_values = tuple(self.builtins.values())  # identity-compared: cheap change check
        self.stdout = open(os.devnull, "w")  # user code's sys.stdout and sys.stderr
        self.stdin = open(os.devnull)

    def fds(self) -> set[int]:
        """The descriptors a child keeps from the zygote for it."""
        return {self.stdout.fileno(), self.stdin.fileno()}

    def bind(self, req_fd: int, resp_fd: int) -> None:
        """In the child, isolated: its pipes, and what its isolation set (CPU limit, folder)."""
        self.req_fd, self.resp_fd = req_fd, resp_fd
        self.cpu_hard = resource.getrlimit(resource.RLIMIT_CPU)[1]
        self.cwd = os.getcwd()
        os.umask(self.umask)

    def serve(self) -> None:
        reader = proto.BlockingReader(self.req_fd)
        while True:
            msg = reader.read()
            if msg is None:
                return
            if msg.get("op") == "load":
                self.load(msg["source"])
            elif msg.get("op") == "call":
                proto.write_all(self.resp_fd, self.call(msg))

    def load(self, source: str) -> None:
        try:
            self.code = compile(source, "<source>", "exec", dont_inherit=True)
        except BaseException as exc:  # noqa: B036 - SyntaxError, MemoryError, RecursionError, ...
            self.code, self.load_error = None, format_exception(exc)

    def _restore(self) -> bool:
        try:
            self.restore()
            return True
        except BaseException:  # noqa: B036 - e.g. the call deleted sys.settrace
            return False

    def restore(self) -> None:
        """Undo process-wide changes a call may have made."""
        sys.setrecursionlimit(self.reclimit)
        sys.settrace(None)
        sys.setprofile(None)
        for timer in _TIMERS:
            if signal.getitimer(timer)[0]:
                signal.setitimer(timer, 0)
        _signal.pthread_sigmask(signal.SIG_SETMASK, self.mask)
        for sig, handler in self.handlers:
            if _signal.getsignal(sig) is not handler:
                _signal.signal(sig, handler)
        if tuple(builtins.__dict__.values()) != self.builtin_values:
            builtins.__dict__.clear()
            builtins.__dict__.update(self.builtins)
        if self.stdout.closed or self.stdin.closed:
            self.stdout, self.stdin = open(os.devnull, "w"), open(os.devnull)
        sys.stdout = sys.stderr = self.stdout
        sys.stdin = self.stdin
        os.chdir(self.cwd)
        os.umask(self.umask)

    def call(self, msg: dict) -> bytes:
        memory_error = False
        value = error = None
        try:
            soft = min(math.ceil(time.process_time() + self.cpu_s), self.cpu_hard)
            resource.setrlimit(resource.RLIMIT_CPU, (soft, self.cpu_hard))
            broken = False
        except (ValueError, OSError):  # an earlier call lowered the hard limit
            broken = True
        start = time.perf_counter()
        kind = "bad_input"  # what an error from here on is (aac.sandbox.result.CallKind's values)
        try:
            args = values.parse_input(msg["input"], spread_list=msg["spread_list"], max_chars=msg["max_chars"],
                                      max_depth=msg["max_depth"])
            kind = "raised"
            if self.code is None:
                error = self.load_error
            else:
                scope = {"__name__": "__sandbox__", "__builtins__": builtins}
                exec(self.code, scope)
                func = scope.get(FUNCTION)
                if not callable(func):
                    raise NameError(f"name '{FUNCTION}' is not defined")
                value = func(*args)
        except BaseException as exc:  # noqa: B036 - SystemExit, KeyboardInterrupt: the call's error
            memory_error = isinstance(exc, MemoryError)
            error = format_exception(exc)
        duration = time.perf_counter() - start
        broken = not self._restore() or broken
        resp: dict = {"id": msg["id"], "dur": duration}
        if error is None:
            plain = True
            try:
                try:
                    resp["plain"] = proto.encode_plain(value)
                    text = repr(value)  # literal types only and bounded in size: the builtin is safe, and fast
                except ValueError:
                    plain = False
                    text = values.safe_repr(value, msg["max_repr"])
                resp["repr"] = values.clip(text, msg["max_repr"])
                resp["norm"] = values.normalize(value)
            except BaseException as exc:  # noqa: B036 - a hostile __repr__, MemoryError
                memory_error = memory_error or isinstance(exc, MemoryError)
                error, kind = "OutputError: " + format_exception(exc), "bad_output"
            value = None
            if not plain:  # only then did repr/normalize run the value's own methods
                broken = not self._restore() or broken
        if error is not None:
            resp = {"id": msg["id"], "dur": duration, "error": error, "kind": kind}
        resp["retire"] = self._retire(memory_error, broken)
        resp["rss"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB; the pool's memory bound
        return _frame(resp)

    def _retire(self, memory_error: bool, broken: bool) -> str | None:
        """Why this worker takes no further call after this one (None: it may take one)."""
        if memory_error:
            return "memory"
        if broken:
            return "state"
        if _thread._count():  # threads still running (threading's included)
            return "threads"
        return "cpu" if time.process_time() > self.cpu_hard / 2 else None


def _frame(resp: dict) -> bytes:
    """The reply's frame; a normalized output too large to send goes as its digest (and without `plain`)."""
    frame = proto.encode_frame(resp)
    if len(frame) > MAX_NORMALIZED_BYTES and "norm" in resp:
        resp["norm"] = values.digest(resp["norm"])
        resp.pop("plain", None)
        frame = proto.encode_frame(resp)
    return frame


def _cpu_exceeded(signum: int, frame: object) -> None:
    os._exit(128 + signal.SIGXCPU)


def _close_all_but(keep: set[int]) -> None:
    """Close every fd >= 3 except `keep` (a forked process holds only what it needs)."""
    low = 3
    for fd in sorted(keep):
        if fd >= low:
            os.closerange(low, fd)
            low = fd + 1
    os.closerange(low, 2**31 - 1)


def _child_main(cfg: dict, tmp_dir: str, req_fd: int, resp_fd: int, tmp_roots: list[str], scope: int,
                report: bool, server: _Server) -> None:
    """Isolate, then serve; `report`: say what the isolation covers (the zygote's first child
    only: the others are alike, and the parent reads it once)."""
    try:
        details = isolate.setup_child(cfg["mode"], tmp_dir, cfg["memory_mb"], cfg["cpu_s"], cfg["tmp_mb"],
                                      cfg["fsize_mb"], cfg["nofile"], tmp_roots, scope)
        server.bind(req_fd, resp_fd)
    except BaseException as exc:  # noqa: B036
        proto.write_all(resp_fd, proto.encode_frame({"op": "fatal", "error": format_exception(exc)}))
        os._exit(3)
    proto.write_all(resp_fd, proto.encode_frame({"op": "hello", "details": details if report else {}}))
    server.serve()


class _ForkServer:
    """The zygote's loop: forks a child per request and supervises the children it forked (no
    process in between): reports each one's exit status on its control socket, and kills it as
    soon as the parent closes that socket. The parent keeps spare children (namespace modes)
    forked ahead of demand and asks for their replacements while a new function's first call
    runs, so a new function waits for neither a fork nor an isolation set-up."""

    def __init__(self, cfg: dict, ctl: int, tmp_roots: list[str]):
        self.cfg, self.ctl, self.tmp_roots = cfg, ctl, tmp_roots
        self.forked = 0
        self.pidns = isolate.own_pid_namespace(cfg["mode"])
        self.scope = isolate.scope_ruleset(cfg["mode"])
        self.server = _Server(cfg["cpu_s"])
        self.poller = select.poll()
        self.poller.register(ctl, select.POLLIN | select.POLLHUP | select.POLLERR)
        self.by_pidfd: dict[int, tuple[int, int]] = {}  # pidfd -> (pid, control socket or -1)
        self.by_sock: dict[int, int] = {}  # control socket -> pidfd

    def serve(self) -> None:
        while True:
            for fd, _ in self.poller.poll():
                if fd == self.ctl:
                    msg, fds = proto.recv_message(self.ctl)
                    for received in fds:
                        os.close(received)
                    if msg is None:
                        os._exit(0)
                    if msg.get("op") == "fork":
                        self.hand_out(msg)
                elif fd in self.by_pidfd:
                    self.reap(fd)
                elif fd in self.by_sock:
                    self.abandon(fd)

    def hand_out(self, msg: dict) -> None:
        """Reply with a fresh child: its request pipe, response pipe, control socket and a pidfd."""
        try:
            pidfd, fds = self.fork(msg.get("tmp"))
        except OSError as exc:
            proto.send_message(self.ctl, {"op": "fork_failed", "id": msg["id"], "error": format_exception(exc)})
            return
        fds.append(os.dup(pidfd))
        try:
            proto.send_message(self.ctl, {"op": "forked", "id": msg["id"]}, fds)
        finally:
            for fd in fds:
                os.close(fd)

    def fork(self, tmp_dir: str | None) -> tuple[int, list[int]]:
        """Fork a child with fresh pipes: (its pidfd, [request pipe, response pipe, control socket])."""
        req_r, req_w = os.pipe()
        resp_r, resp_w = os.pipe()
        theirs, ours = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        ours_fd, theirs_fd = ours.detach(), theirs.detach()
        try:
            pid = isolate.fork_child(self.cfg["mode"], self.pidns)
        except BaseException:
            for fd in (req_r, req_w, resp_r, resp_w, ours_fd, theirs_fd):
                os.close(fd)
            raise
        if pid == 0:
            try:
                _close_all_but({req_r, resp_w, self.scope, *self.server.fds()})
                _child_main(self.cfg, tmp_dir or "/", req_r, resp_w, self.tmp_roots, self.scope, not self.forked,
                            self.server)
            except BaseException:  # noqa: B036 - a broken pipe or a state the call left behind
                os._exit(70)
            os._exit(0)
        self.forked += 1
        os.close(req_r)
        os.close(resp_w)
        pidfd = os.pidfd_open(pid)  # valid until this process reaps the child, whatever it does first
        self.by_pidfd[pidfd] = (pid, ours_fd)
        self.by_sock[ours_fd] = pidfd
        self.poller.register(pidfd, select.POLLIN)
        self.poller.register(ours_fd, select.POLLHUP | select.POLLERR)
        return pidfd, [req_w, resp_r, theirs_fd]

    def reap(self, pidfd: int) -> None:
        """The child exited: collect its status, report it (128 + signal, or the exit code)."""
        pid, sock = self.by_pidfd.pop(pidfd)
        self.poller.unregister(pidfd)
        os.close(pidfd)
        _, status = os.waitpid(pid, 0)
        if sock >= 0:
            code = 128 + os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
            try:
                proto.send_message(sock, {"op": "exit", "code": code})
            except OSError:
                pass  # the parent closed its end meanwhile
            del self.by_sock[sock]
            self.poller.unregister(sock)
            os.close(sock)

    def abandon(self, sock: int) -> None:
        """The parent closed the child's control socket: kill the child (reaped when its pidfd fires)."""
        pidfd = self.by_sock.pop(sock)
        self.poller.unregister(sock)
        os.close(sock)
        self.by_pidfd[pidfd] = (self.by_pidfd[pidfd][0], -1)
        try:
            signal.pidfd_send_signal(pidfd, signal.SIGKILL)
        except OSError:
            pass


def _zygote_main(cfg: dict, ctl: int) -> None:
    """PID 1 of the pool's namespaces: set up the shared view, preload imports, then fork and
    supervise a child per request until the parent closes the control socket."""
    try:
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)  # floods of output go nowhere and never block
        os.close(devnull)
        import_paths = cfg["sys_path"] + [_HERE] + cfg["interpreter"]  # checked by the parent, which sees them all
        details = isolate.setup_zygote(cfg["mode"], import_paths)
        tmp_roots = details.get("tmp_binds", [])
        for name in cfg["preload"]:
            try:
                importlib.import_module(name)
            except Exception:  # noqa: BLE001 - a missing optional module only costs its import later
                details.setdefault("preload_failed", []).append(name)
        server = _ForkServer(cfg, ctl, tmp_roots)
        gc.freeze()  # the collector leaves what the children inherit alone: fewer copy-on-write faults
    except BaseException as exc:  # noqa: B036
        proto.send_message(ctl, {"op": "fatal", "error": format_exception(exc)})
        os._exit(3)
    proto.send_message(ctl, {"op": "hello", "details": details})
    server.serve()


def _supervise(pid: int, life_fd: int) -> int:
    """Wait for the process `pid`; kill it if the parent goes away (`life_fd` ends or closes).
    Returns the exit code to report: its own, or 128 + the signal that killed it."""
    try:
        pidfd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        pidfd = -1
    poller = select.poll()
    poller.register(life_fd, select.POLLIN | select.POLLHUP | select.POLLERR)
    if pidfd >= 0:
        poller.register(pidfd, select.POLLIN)
    while True:
        events = poller.poll(None if pidfd >= 0 else 100)
        if any(fd == life_fd for fd, _ in events):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
            _, status = os.waitpid(pid, 0)
            break
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    return os.WEXITSTATUS(status)  # 128 + n reads as "signal n", as in a shell


def main() -> None:
    """The zygote's supervisor: enter the namespaces, fork the zygote (their PID 1), wait."""
    cfg = json.loads(sys.argv[1])
    sys.argv[:] = [""]  # as under `python -c`; user code has no business with the configuration
    # started with -S (faster); import the parent's paths, not this script's folder
    sys.path[:] = cfg["sys_path"]
    import site

    site.setquit()  # exit() and quit(), which -S leaves out
    life_fd, ctl = cfg["life_fd"], cfg["ctl_fd"]
    try:
        isolate.enter(cfg["mode"])
        go_r, go_w = os.pipe()
        pid = os.fork()
    except BaseException as exc:  # noqa: B036
        proto.send_message(ctl, {"op": "fatal", "error": format_exception(exc)})
        os._exit(2)
    if pid == 0:
        try:
            os.close(go_w)
            os.close(life_fd)
            os.read(go_r, 1)  # the parent must learn this pid before the zygote can say anything
            os.close(go_r)
            _zygote_main(cfg, ctl)
        except BaseException:  # noqa: B036
            os._exit(70)
        os._exit(0)
    os.close(go_r)
    proto.send_message(ctl, {"op": "spawned", "pid": pid})
    os.write(go_w, b"g")
    os.close(go_w)
    os.close(ctl)
    os._exit(_supervise(pid, life_fd))


if __name__ == "__main__":
    main()
