"""Hostile functions and inputs against the sandbox.

Every case runs `test_func(True, ctx)` (the attack) and then `test_func(False, ctx)` (a benign
call of the same source, which prints and uses builtins). For each case: the attack ends in an
error result (or, where the attack is harmless inside the sandbox, a bounded result) within its
timeout; this process survives, with its signal handlers; no file named with this session's token
appears outside the sandbox and the test's sentinel file is intact; nothing connected to the
test's loopback listeners; a decoy process still lives; the only worker processes left are the
pool's live ones; and the benign call returns 'ok'.

The attacks only ever target things this test owns (a decoy process, a scratch folder, a
sentinel, its own listeners, token-named paths); cases that would succeed without filesystem or
PID isolation are skipped when the pool reports weaker isolation.
"""

from __future__ import annotations

import contextlib
import glob
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import textwrap
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

from aac.sandbox.pool import SandboxPool

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT = 1.0
SLACK = 4.0  # kill, reap and respawn on a busy 2-core machine


@dataclass(frozen=True)
class Case:
    name: str
    attack: str  # body of the attack branch; `arg` is the context dict
    error: str | None  # regex the error must match; None: the result must be ok
    needs: str = ""  # "isolated": any isolation beyond rlimits; "pidns"/"netns": namespaces
    may_succeed: bool = False  # an ok result is fine too (the attack stays inside the sandbox)


def _source(attack: str) -> str:
    return ("def test_func(attack, arg):\n"
            "    if not attack:\n"
            "        print('benign')\n"
            "        return 'ok' if len(str(arg)) > 0 else 'broken'\n"
            + textwrap.indent(textwrap.dedent(attack).strip("\n"), "    ") + "\n")


TIMEOUT_ERROR = r"^TimeoutError: call exceeded 1\.0 s$"
DIED = r"^SandboxError: the worker "
ANY_ERROR = r"."

CASES = [
    # runaway time and memory
    Case("infinite_loop", "while True:\n    pass", TIMEOUT_ERROR),
    Case("sleep", "import time\ntime.sleep(60)", TIMEOUT_ERROR),
    Case("memory_bomb", "return len(bytearray(1 << 40))", r"^MemoryError"),
    # 16 MiB a step: the limit within 16 steps, well inside the timeout on a loaded machine
    Case("memory_creep", "x = []\nwhile True:\n    x.append(bytearray(1 << 24))", r"^MemoryError"),
    Case("fill_disk", "with open('big-' + arg['token'], 'wb') as f:\n    for _ in range(100):\n"
                      "        f.write(b'x' * (1 << 20))", r"^OSError: \[Errno (27|28)\]"),
    Case("too_many_files", "files = [open('f%d' % i, 'w') for i in range(100000)]", r"^OSError: \[Errno 24\]"),
    # new processes and threads
    Case("fork_bomb", "import os\nfor _ in range(64):\n    if os.fork() == 0:\n        os._exit(0)\nreturn 'forked'",
         r"^BlockingIOError"),
    Case("os_system", "import os\np = arg['open_dir'] + '/system-' + arg['token']\nos.system('touch ' + p)\n"
                      "return open(p).read()", r"Error"),
    Case("subprocess", "import subprocess\nsubprocess.run(['touch', arg['open_dir'] + '/sub-' + arg['token']])",
         r"^(BlockingIOError|OSError|PermissionError)"),
    Case("exec_shell", "import os\nos.execv('/bin/sh', ['sh', '-c', 'touch ' + arg['open_dir'] + '/exec-' + arg['token']])",
         DIED, needs="isolated"),
    Case("thread_left_running", "import threading, time\n"
                                "threading.Thread(target=time.sleep, args=(30,), daemon=True).start()\nreturn 1",
         r"^RuntimeError: can't start new thread"),
    Case("escape_process_group", "import os, time\nos.setsid()\ntime.sleep(30)", ANY_ERROR),
    # files: the sandbox's own scratch space is fine, the host must not see it
    Case("write_cwd", "import os\nopen('cwd-' + arg['token'], 'w').write('x')\nreturn os.listdir('.')", None),
    Case("write_tmp", "open('/tmp/tmp-' + arg['token'], 'w').write('x')\nreturn 'written'", r"^PermissionError",
         needs="isolated", may_succeed=True),  # namespaces: a private /tmp; Landlock: refused
    Case("write_home_env", "import os\nopen(os.path.expanduser('~/home-' + arg['token']), 'w').write('x')\n"
                           "return 'written'", None),
    Case("write_real_home", "open(arg['home'] + '/realhome-' + arg['token'], 'w').write('x')",
         r"^(OSError: \[Errno 30\]|PermissionError)", needs="isolated"),
    Case("write_open_dir", "open(arg['open_dir'] + '/new-' + arg['token'], 'w').write('x')",
         r"^(OSError: \[Errno 30\]|PermissionError)", needs="isolated"),
    Case("delete_sentinel", "import os\nos.remove(arg['sentinel'])", r"^(OSError: \[Errno 30\]|PermissionError)",
         needs="isolated"),
    Case("overwrite_sentinel", "open(arg['sentinel'], 'w').write('owned')", r"^(OSError: \[Errno 30\]|PermissionError)",
         needs="isolated"),
    Case("remount_root_rw", "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
                            "if libc.mount(None, b'/', None, 32 | 4096, None) != 0:\n"
                            "    raise OSError(ctypes.get_errno(), 'mount failed')\n"
                            "open(arg['open_dir'] + '/remount-' + arg['token'], 'w').write('x')",
         r"^(OSError|PermissionError)", needs="isolated"),
    Case("read_secret", "return open('/etc/shadow').read()", r"^(PermissionError|FileNotFoundError)"),
    # network
    Case("tcp_to_loopback", "import socket\nsocket.create_connection(('127.0.0.1', arg['port']), timeout=0.5)\n"
                            "return 'connected'", r"^(OSError|PermissionError|ConnectionRefusedError|TimeoutError)",
         needs="isolated"),
    Case("udp_to_loopback", "import socket\ns = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
                            "s.sendto(b'x', ('127.0.0.1', arg['udp_port']))\nreturn 'sent'", r"^OSError",
         needs="netns"),
    # exits and signals
    Case("sys_exit", "import sys\nsys.exit(3)", r"^SystemExit: 3$"),
    Case("keyboard_interrupt", "raise KeyboardInterrupt", r"^KeyboardInterrupt$"),
    Case("os_exit", "import os\nos._exit(0)", DIED + r"exited with code 0"),
    Case("kill_parent", "import os, signal, time\nos.kill(os.getppid(), signal.SIGKILL)\ntime.sleep(30)", ANY_ERROR),
    Case("kill_decoy", "import os, signal\nos.kill(arg['decoy'], signal.SIGKILL)\nreturn 'killed'",
         r"^(ProcessLookupError|PermissionError)", needs="isolated"),
    Case("kill_everything", "import os, signal, time\nos.kill(-1, signal.SIGKILL)\ntime.sleep(30)", ANY_ERROR,
         needs="pidns"),
    Case("signals_blocked_then_spin", "import signal\nfor s in (signal.SIGTERM, signal.SIGINT, signal.SIGALRM):\n"
                                      "    signal.signal(s, signal.SIG_IGN)\n"
                                      "signal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals())\n"
                                      "while True:\n    pass", TIMEOUT_ERROR),
    Case("signals_tampered_then_return", "import signal\nsignal.signal(signal.SIGALRM, signal.SIG_DFL)\n"
                                         "signal.setitimer(signal.ITIMER_REAL, 0.2)\n"
                                         "signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
                                         "signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})\nreturn 'tampered'",
         None),
    # the interpreter and the C level
    Case("recursion", "def f(n):\n    return f(n + 1)\nreturn f(0)", r"^RecursionError"),
    Case("recursion_limit_raised", "import sys\nsys.setrecursionlimit(10 ** 7)\ndef f(n):\n    return f(n + 1) + 1\n"
                                   "return f(0)", ANY_ERROR),
    Case("ctypes_segfault", "import ctypes\nreturn ctypes.string_at(0)", DIED + r"died by SIGSEGV"),
    Case("abort", "import os\nos.abort()", DIED + r"died by"),
    Case("state_tampering", "import builtins, os, sys\nbuiltins.len = None\nsys.setrecursionlimit(30)\n"
                            "sys.settrace(lambda *a: None)\nos.chdir('/')\nsys.stdout.close()\nos.umask(0o777)\n"
                            "return 'tampered'", None),
    # output floods
    Case("output_flood_forever", "import os, sys\nwhile True:\n    print('x' * 10000)\n    sys.stderr.write('y' * 10000)\n"
                                 "    os.write(1, b'z' * 10000)\n    os.write(2, b'w' * 10000)", TIMEOUT_ERROR),
    Case("output_flood_then_return", "import os\nfor _ in range(2000):\n    print('x' * 10000)\n"
                                     "    os.write(2, b'y' * 10000)\nreturn 'flooded'", None),
    # return values
    Case("huge_string", "return 'x' * (10 << 20)", None),
    Case("huge_int", "return 10 ** 200000", None),
    Case("self_referencing", "l = [1]\nl.append(l)\nd = {}\nd['d'] = d\nreturn l, d", None),
    Case("repr_raises", "class A:\n    def __repr__(self):\n        raise ValueError('no repr')\nreturn [A()]", None),
    Case("repr_loops_forever", "class A:\n    def __repr__(self):\n        while True:\n            pass\nreturn A()",
         TIMEOUT_ERROR),
    Case("repr_huge", "class A:\n    def __repr__(self):\n        return 'r' * 10 ** 7\nreturn A()", None),
    Case("exception_str_raises", "class E(Exception):\n    def __str__(self):\n        raise SystemExit('no')\nraise E()",
         r"^E: <message unavailable>$"),
    Case("exception_str_loops", "class E(Exception):\n    def __str__(self):\n        while True:\n            pass\n"
                                "raise E()", TIMEOUT_ERROR),
    # the pipe to the parent
    Case("garble_protocol", "import os\nfor fd in range(3, 1024):\n    try:\n"
                            "        os.write(fd, b'\\x00\\x00\\x00\\x05hello')\n    except OSError:\n        pass\n"
                            "return 'garbled'", DIED + r"|^SandboxError: invalid reply"),
    Case("close_all_fds", "import os\nos.closerange(3, 4096)\nreturn 'closed'", DIED),
]


BOUNDED_RESULTS = {
    "write_cwd": lambda r, ctx: r.output == [f"cwd-{ctx['token']}"],
    "write_home_env": lambda r, ctx: r.output == "written",
    "signals_tampered_then_return": lambda r, ctx: r.output == "tampered",
    "state_tampering": lambda r, ctx: r.output == "tampered",
    "output_flood_then_return": lambda r, ctx: r.output == "flooded",
    "huge_string": lambda r, ctx: len(r.output_repr) <= 2000 and r.output is None and "__sha256__" in r.normalized,
    "huge_int": lambda r, ctx: r.output_repr.startswith("<int with") and isinstance(r.normalized, str),
    "self_referencing": lambda r, ctx: r.output_repr == "([1, [...]], {'d': {...}})",
    "repr_raises": lambda r, ctx: r.output_repr == "[<unrepresentable A object>]",
    "repr_huge": lambda r, ctx: r.output_repr == "r" * 1997 + "...",
}


@pytest.fixture(scope="module")
def pool():
    with SandboxPool(workers=2, memory_mb=256, max_warm=4) as p:
        yield p


@contextlib.contextmanager
def hostile_context(decoy_s: int = 600):
    """What the attacks target, all owned here: a token, a world-writable scratch folder with a
    sentinel, loopback listeners, a decoy process (also used by benchmarks/soak_sandbox.py)."""
    token = uuid.uuid4().hex
    scratch = Path(tempfile.mkdtemp(prefix="aac-hostile-", dir="/var/tmp" if os.path.isdir("/var/tmp") else None))
    scratch.chmod(0o777)  # world-writable: only the sandbox may stop the writes
    sentinel = scratch / "sentinel"
    sentinel.write_text("intact")
    sentinel.chmod(0o666)
    tcp = socket.socket()
    tcp.bind(("127.0.0.1", 0))
    tcp.listen(8)
    tcp.setblocking(False)
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", 0))
    udp.setblocking(False)
    decoy = subprocess.Popen(["sleep", str(decoy_s)])
    info = {"token": token, "open_dir": str(scratch), "sentinel": str(sentinel), "home": str(Path.home()),
            "port": tcp.getsockname()[1], "udp_port": udp.getsockname()[1], "decoy": decoy.pid}
    try:
        yield {**info, "_tcp": tcp, "_udp": udp, "_decoy": decoy, "_scratch": scratch}
    finally:
        decoy.kill()
        decoy.wait()
        tcp.close()
        udp.close()
        shutil.rmtree(scratch, ignore_errors=True)
        for leftover in _token_files(token):  # never expected; keep the machine clean if it happens
            Path(leftover).unlink(missing_ok=True)


@pytest.fixture(scope="module")
def ctx(pool):
    with hostile_context() as context:
        yield context


def _token_files(token: str) -> list[str]:
    places = ["/tmp", "/var/tmp", str(Path.home()), str(ROOT), os.getcwd(), "/"]
    found = []
    for place in places:
        found += glob.glob(os.path.join(place, f"*{token}*"))
        found += glob.glob(os.path.join(place, "aac-hostile-*", f"*{token}*"))
    return sorted(set(found))


def _owned_worker_pids(owner: str) -> set[int]:
    """Live processes whose command line carries this pool's owner tag."""
    pids = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                cmdline = fh.read()
            with open(f"/proc/{entry}/stat") as fh:
                state = fh.read().rsplit(") ", 1)[-1][:1]
        except OSError:
            continue
        if owner.encode() in cmdline and state != "Z":
            pids.add(int(entry))
    return pids


def _skip_unless_isolated(case: Case, isolation: str) -> None:
    if case.needs == "isolated" and isolation == "rlimits":
        pytest.skip("no filesystem, network or signal isolation here")
    if case.needs in ("pidns", "netns") and isolation not in ("namespaces", "userns"):
        pytest.skip("no PID/network namespace here")


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_hostile_function(case, pool, ctx):
    _skip_unless_isolated(case, pool.isolation)
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGCHLD)}
    args = {k: v for k, v in ctx.items() if not k.startswith("_")}
    source = _source(case.attack)

    start = time.monotonic()
    result = pool.call(source, repr((True, args)), timeout_s=TIMEOUT)
    assert time.monotonic() - start < TIMEOUT + SLACK

    if case.error is None or (case.may_succeed and result.ok):
        assert result.ok, result.error
        check = BOUNDED_RESULTS.get(case.name)
        assert check is None or check(result, ctx), result
    else:
        assert not result.ok and result.output is None and result.output_repr == "None"
        assert re.search(case.error, result.error), result.error
    assert len(result.output_repr) <= 2000

    benign = pool.call(source, repr((False, args)), timeout_s=TIMEOUT)
    assert benign.ok and benign.output == "ok", benign.error
    if case.name == "signals_tampered_then_return":
        time.sleep(0.4)  # the timer it armed must not fire in the warm worker
        assert pool.call(source, repr((False, args)), timeout_s=TIMEOUT).output == "ok"

    assert {s: signal.getsignal(s) for s in handlers} == handlers
    assert ctx["_decoy"].poll() is None, "the decoy process was killed"
    assert _token_files(ctx["token"]) == []
    assert Path(ctx["sentinel"]).read_text() == "intact"
    with pytest.raises(BlockingIOError):
        ctx["_tcp"].accept()
    with pytest.raises(BlockingIOError):
        ctx["_udp"].recvfrom(16)
    assert _owned_worker_pids(pool.owner) == set(pool.live_pids())


@pytest.mark.parametrize("text, error", [  # error: a regex, or the output expected
    ("(" + "1, " * 400_000 + ")", r"^InputParseError: input has \d+ characters"),
    ("[" * 5000 + "]" * 5000, r"^InputParseError: input nests deeper than 50 levels"),
    ("(" + "9" * 5000 + ",)", r"^InputParseError: input is not a Python literal"),
    ("__import__('os').system('touch /var/tmp/aac-pwned')", r"^InputParseError: input is not a Python literal"),
    ("1+" * 3000 + "1", r"^InputParseError: input is not a Python literal"),
    ("('unterminated, [1, 2]", r"^InputParseError"),
    ("('\\ud800', '\\x00', b'\\xff')", ("\ud800", "\x00", b"\xff")),  # odd strings cross the pipe intact
    ("(" + repr(list(range(1500))) + ",)", (list(range(1500)),)),  # large but within bounds
], ids=["huge", "deep", "long_int", "code", "long_expression", "unterminated", "odd_strings", "large_ok"])
def test_pathological_inputs(text, error, pool):
    source = "def test_func(*args):\n    return args\n"
    start = time.monotonic()
    result = pool.call(source, text, timeout_s=TIMEOUT)
    assert time.monotonic() - start < TIMEOUT + SLACK
    if isinstance(error, str):
        assert re.search(error, result.error), result.error
    else:
        assert result.ok and result.output == error, result.error
    assert not os.path.exists("/var/tmp/aac-pwned")
    assert pool.call(source, "(1,)", timeout_s=TIMEOUT).output == (1,)
