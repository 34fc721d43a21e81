"""Branch coverage (coverage.py, branch=True) of an untrusted function, per input.

The builder never runs source code in its own process. Coverage needs a tracer in the process that
runs the code, so `CoverageRunner` starts one helper interpreter (no user site, no inherited
environment, an empty temp folder as working directory) that imports coverage.py once and forks a
fresh child per function. The child sets memory/CPU/file-size/process limits, runs `test_func` on
each input under coverage with a per-call alarm, and reports which arcs each input executed; the
helper kills it when the whole request runs past its wall-clock limit. Outputs recorded in the
data come from the sandbox, never from here. Static arcs come from coverage.py's parser.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

Arc = tuple[int, int]
_RUNNER = "import runpy, sys; runpy.run_path(sys.argv[1], run_name='__main__')"
_MAX_REPLY = 64 * 2**20


@dataclass(frozen=True)
class CoverageReport:
    branch_arcs: frozenset[Arc]  # every possible arc out of a line with more than one exit
    baseline: frozenset[Arc]  # arcs executed when the module itself ran (top-level code)
    per_input: list[frozenset[Arc] | None]  # arcs each input executed; None: it failed or timed out
    error: str | None = None  # why there is no per-input data (then per_input is all None)

    def coverage(self, executed: Iterable[frozenset[Arc] | None]) -> float:
        """Branch coverage of some inputs: covered branch arcs / all branch arcs (1.0 without branches)."""
        if not self.branch_arcs:
            return 1.0
        hit = set(self.baseline)
        for arcs in executed:
            hit |= arcs or set()
        return len(hit & self.branch_arcs) / len(self.branch_arcs)


def static_branch_arcs(source: str) -> tuple[frozenset[Arc], Any]:
    """The possible arcs out of branch lines, as coverage.py's analysis counts them, and the parser."""
    from coverage.parser import PythonParser

    parser = PythonParser(text=source)
    parser.parse_source()
    exits = parser.exit_counts()
    return frozenset(a for a in parser.arcs() if exits.get(a[0], 0) > 1), parser


class CoverageRunner:
    """The helper interpreter; `measure` is thread-safe (requests are served one at a time)."""

    def __init__(self, *, call_timeout_s: float = 1.0, budget_s: float = 3.0, total_timeout_s: float = 30.0,
                 memory_mb: int = 1024):
        self.call_timeout_s = call_timeout_s
        self.budget_s = budget_s  # calls stop after this long; the rest of the inputs get no arcs
        self.total_timeout_s = total_timeout_s
        self.memory_mb = memory_mb
        self._lock = threading.Lock()
        self._proc: subprocess.Popen | None = None
        self._tmp: str | None = None

    def __enter__(self) -> CoverageRunner:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _start(self) -> subprocess.Popen:
        if self._proc is None or self._proc.poll() is not None:
            self._tmp = self._tmp or tempfile.mkdtemp(prefix="aac-cov-")
            self._proc = subprocess.Popen(
                [sys.executable, "-s", "-c", _RUNNER, os.path.abspath(__file__)], cwd=self._tmp,
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                env={"PYTHONHASHSEED": "0", "PATH": os.environ.get("PATH", ""), "HOME": self._tmp,
                     "TMPDIR": self._tmp},
                start_new_session=True)
        return self._proc

    def close(self) -> None:
        with self._lock:
            if self._proc is not None:
                if self._proc.poll() is None:
                    os.killpg(self._proc.pid, signal.SIGKILL)
                self._proc.wait()
                for f in (self._proc.stdin, self._proc.stdout):
                    f.close()
                self._proc = None
            if self._tmp:
                shutil.rmtree(self._tmp, ignore_errors=True)
                self._tmp = None

    def measure(self, source: str, inputs: list[str], static: tuple | None = None) -> CoverageReport:
        """Arcs that `test_func` of `source` executes on each input (PAU tuple literals); `static`:
        `static_branch_arcs(source)` when the caller parsed it already."""
        branch_arcs, parser = static or static_branch_arcs(source)
        nothing: list[frozenset[Arc] | None] = [None] * len(inputs)
        request = json.dumps({"source": source, "inputs": inputs, "call_timeout_s": self.call_timeout_s,
                              "budget_s": self.budget_s,
                              "total_timeout_s": self.total_timeout_s, "memory_mb": self.memory_mb})
        with self._lock:
            proc = self._start()
            try:
                proc.stdin.write(request.encode() + b"\n")
                proc.stdin.flush()
                line = _read_line(proc.stdout.fileno(), self.total_timeout_s + 10)
            except (OSError, TimeoutError) as e:  # the helper itself broke: start a new one next time
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                return CoverageReport(branch_arcs, frozenset(), nothing, f"coverage helper failed: {e}")
        reply = json.loads(line)
        if reply.get("error"):
            return CoverageReport(branch_arcs, frozenset(), nothing, reply["error"])

        def arcs(raw: list | None) -> frozenset[Arc] | None:
            return None if raw is None else frozenset(parser.translate_arcs([tuple(a) for a in raw]))

        return CoverageReport(branch_arcs, arcs(reply["baseline"]) or frozenset(),
                              [arcs(a) for a in reply["per_input"]])


def _read_line(fd: int, timeout_s: float) -> str:
    """One newline-terminated line from a raw fd within `timeout_s` (TimeoutError otherwise)."""
    chunks, deadline = [], time.monotonic() + timeout_s
    while True:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            raise TimeoutError(f"no reply within {timeout_s:g} s")
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            raise OSError("helper exited")
        chunks.append(chunk)
        if chunk.endswith(b"\n") or sum(map(len, chunks)) > _MAX_REPLY:
            return b"".join(chunks).decode()


# ---------------------------------------------------------------- the helper and its children

class _CallTimeout(BaseException):
    """Raised by the alarm; a BaseException so that `except Exception` in the function can't eat it."""


def _limit(cpu_s: int, memory_mb: int) -> None:
    import resource

    for res, value in ((resource.RLIMIT_AS, memory_mb * 2**20), (resource.RLIMIT_CPU, cpu_s),
                       (resource.RLIMIT_FSIZE, 2**20), (resource.RLIMIT_NPROC, 0)):
        try:
            resource.setrlimit(res, (value, value))
        except (ValueError, OSError):  # not lowerable here: the other limits still hold
            pass


def _run_one(request: dict, folder: str, limit: bool = True) -> dict:
    """In the forked child: exec the module and call `test_func` per input under coverage."""
    import ast

    import coverage

    os.chdir(folder)
    path = os.path.join(folder, "fn.py")
    with open(path, "w") as f:
        f.write(request["source"])
    if limit:
        _limit(int(request["total_timeout_s"]) + 1, request["memory_mb"])
    cov = coverage.Coverage(data_file=None, branch=True, include=[path], config_file=False)

    def alarm(signum, frame):
        raise _CallTimeout

    signal.signal(signal.SIGALRM, alarm)
    namespace = {"__name__": "__aac_fn__"}
    cov.start()
    try:
        exec(compile(request["source"], path, "exec"), namespace)
        func = namespace["test_func"]
    except BaseException as e:  # noqa: B036 - anything the module raises ends this request
        cov.stop()
        return {"error": f"module failed: {type(e).__name__}"}
    failed = set()
    deadline = time.monotonic() + request["budget_s"]
    for k, text in enumerate(request["inputs"]):
        left = deadline - time.monotonic()
        if left <= 0:  # out of time: the remaining inputs get no arcs (callers order cheap ones first)
            failed.add(k)
            continue
        cov.switch_context(f"i{k}")
        signal.setitimer(signal.ITIMER_REAL, min(request["call_timeout_s"], left))
        try:
            func(*ast.literal_eval(text))
        except _CallTimeout:
            failed.add(k)
        except BaseException:  # noqa: B036 - the function's own errors are data here
            pass
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
    cov.stop()
    data = cov.get_data()
    data.set_query_contexts(["^$"])  # query contexts are regular expressions
    reply = {"error": None, "baseline": sorted(data.arcs(path) or []), "per_input": []}
    for k in range(len(request["inputs"])):
        data.set_query_contexts([f"^i{k}$"])
        reply["per_input"].append(None if k in failed else sorted(data.arcs(path) or []))
    return reply


def _serve_one(request: dict, reply_fd: int) -> None:
    folder = tempfile.mkdtemp(dir=os.getcwd())
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: one function, then gone
        os.close(r)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        try:
            reply = _run_one(request, folder)
        except BaseException as e:  # noqa: B036 - reported, never raised across the fork
            reply = {"error": f"child failed: {type(e).__name__}"}
        _write_all(w, json.dumps(reply).encode())
        os._exit(0)
    os.close(w)
    chunks, deadline, size = [], time.monotonic() + request["total_timeout_s"], 0
    error = None
    while True:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([r], [], [], left)[0]:
            error = f"timed out after {request['total_timeout_s']:g} s"
            break
        chunk = os.read(r, 1 << 16)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
        if size > _MAX_REPLY:
            error = "reply too large"
            break
    os.close(r)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    os.waitpid(pid, 0)
    shutil.rmtree(folder, ignore_errors=True)
    text = b"".join(chunks).decode(errors="replace")
    if error is None:
        try:
            json.loads(text)
        except json.JSONDecodeError:
            error = "child died"
    reply_line = json.dumps({"error": error}) if error else text
    _write_all(reply_fd, reply_line.encode() + b"\n")


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _helper_main() -> None:
    # one trusted warm-up run loads what coverage.py loads lazily, so each forked child starts warm
    warm_up = {"source": "def test_func(arg0):\n    return arg0\n", "inputs": ["(1,)"], "call_timeout_s": 1,
               "budget_s": 1, "total_timeout_s": 10, "memory_mb": 0}
    _run_one(warm_up, tempfile.mkdtemp(dir=os.getcwd()), limit=False)
    reply_fd = os.dup(1)
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
    for line in sys.stdin:
        if line.strip():
            _serve_one(json.loads(line), reply_fd)


if __name__ == "__main__":
    _helper_main()
