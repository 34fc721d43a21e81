"""The sandbox API: results, the PAU rule through a real worker, pooling, limits, isolation modes."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from pathlib import Path

import pytest

from aac.sandbox._isolate import NOBODY
from aac.sandbox.pool import SandboxPool, run_function
from aac.sandbox.result import CallKind, CallResult, SandboxUnavailable
from aac.sandbox.values import DIGEST_KEY, outputs_match

ADD = "def test_func(a, b):\n    return (a, b * 2)\n"


@pytest.fixture(scope="module")
def pool():
    with SandboxPool(workers=2, memory_mb=256) as p:
        yield p


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(") ")[-1][:1] != "Z"
    except OSError:
        return False


def test_call_result_fields(pool):
    r = pool.call(ADD, "(3, 'ab')")
    assert isinstance(r, CallResult) and r.ok and r.error is None
    assert r.output == (3, "abab")  # tuples come back as tuples
    assert r.output_repr == "(3, 'abab')"
    assert r.normalized == [3, "abab"]
    assert 0 <= r.duration_s < 1


def test_pau_rule_through_the_worker(pool):
    src = "def test_func(*args):\n    return len(args)\n"
    assert pool.call(src, "([1,2])").output == 2
    assert pool.call(src, "([1,2])", spread_list=False).output == 1
    assert pool.call(src, "([1, 2],)").output == 1
    assert pool.call(src, "5").output == 1


def test_errors_are_results(pool):
    r = pool.call(ADD, "(1,)")
    assert not r.ok and r.error.startswith("TypeError: test_func() missing 1 required positional argument")
    assert r.output is None and r.normalized is None and r.output_repr == "None"
    r = pool.call("def test_func(x):\n    raise ValueError('bad input')\n", "(1,)")
    assert r.error == "ValueError: bad input"
    r = pool.call(ADD, "(1, ")
    assert r.error.startswith("InputParseError: input is not a Python literal")
    assert pool.call("def test_func(:\n", "()").error.startswith("SyntaxError")
    assert pool.call("x = 1\n", "()").error == "NameError: name 'test_func' is not defined"
    assert pool.call("import not_a_module_xyz\ndef test_func():\n    return 1\n", "()").error.startswith(
        "ModuleNotFoundError")


# writes a well-formed reply to its first call claiming a timeout on every fd it has, then exits
FORGED_TIMEOUT = """import json, os, struct
def test_func():
    body = json.dumps({"id": 1, "dur": 0, "error": "TimeoutError: call exceeded 0.5 s", "kind": "timeout"}).encode()
    for fd in range(3, 64):
        try:
            os.write(fd, struct.pack(">I", len(body)) + body)
        except OSError:
            pass
    os._exit(0)
"""


def test_each_result_says_what_became_of_the_call():
    hostile_repr = "class P:\n    def __repr__(self):\n        raise KeyboardInterrupt\ndef test_func():\n    return P()\n"
    cases = [
        (ADD, "(3, 'ab')", CallKind.OK),
        ("def test_func(x):\n    raise ValueError('bad')\n", "(1,)", CallKind.RAISED),
        ("def test_func(:\n", "()", CallKind.RAISED),  # the source itself
        ("def test_func():\n    raise TimeoutError('call exceeded 0.5 s')\n", "()", CallKind.RAISED),  # whatever its text
        (ADD, "(1, ", CallKind.BAD_INPUT),  # parsed in the worker
        (ADD, "(" + "1, " * 10000 + ")", CallKind.BAD_INPUT),  # refused in the parent
        (hostile_repr, "()", CallKind.BAD_OUTPUT),
        ("def test_func():\n    while True:\n        pass\n", "()", CallKind.TIMEOUT),
        ("import os\ndef test_func():\n    os._exit(3)\n", "()", CallKind.CRASHED),
        # a worker may only report what it can know: a forged "timeout" reply is an invalid one
        (FORGED_TIMEOUT, "()", CallKind.CRASHED),
    ]
    with SandboxPool(workers=1, memory_mb=256) as p:
        results = [p.call(source, text, timeout_s=0.5) for source, text, _ in cases]
        stats = p.stats
    assert [r.kind for r in results] == [kind for *_, kind in cases], [r.error for r in results]
    assert results[6].error.startswith("OutputError: KeyboardInterrupt") and "invalid reply" in results[-1].error
    assert [r.kind.cut_short for r in results] == [False] * 7 + [True] * 3
    assert (stats["timeouts"], stats["crashes"]) == (1, 2)
    with pytest.raises(ValueError, match="kind"):
        CallResult(None, "ValueError: x", 0.0, "None", None)  # an error needs its kind


def test_each_call_runs_in_fresh_globals(pool):
    src = "seen = []\ndef test_func(x, acc=[]):\n    seen.append(x)\n    acc.append(x)\n    return len(seen), len(acc)\n"
    assert [pool.call(src, f"({i},)").output for i in range(3)] == [(1, 1)] * 3


def test_outputs_keep_literal_types_and_objects_only_show_their_repr(pool):
    src = "def test_func():\n    return {'s': {1, 2}, 'b': b'x', 'c': 1j, 't': (1,), 'f': frozenset([3])}\n"
    out = pool.call(src, "()").output
    assert out == {"s": {1, 2}, "b": b"x", "c": 1j, "t": (1,), "f": frozenset([3])}
    r = pool.call("class P:\n    def __repr__(self):\n        return 'P()'\ndef test_func():\n    return P()\n", "()")
    assert r.ok and r.output is None and r.output_repr == "P()" and r.normalized == "P()"
    r = pool.call("def test_func():\n    return None\n", "()")
    assert r.ok and r.output is None and r.normalized is None and r.output_repr == "None"


def test_plain_values_cross_the_pipe_as_tagged_json():
    from aac.sandbox._protocol import decode_plain, encode_plain

    for value in ({"s": {1, 2}, "b": b"x", "c": 1j, "t": (1,), "f": frozenset([3]), (1, 2): [None, True, 1.5]},
                  [], (), set(), "x", None, float("inf")):
        assert decode_plain(encode_plain(value)) == value
    for not_plain in (object(), [object()], 10**5000, "x" * 200_000, list(range(20_000))):
        with pytest.raises(ValueError):
            encode_plain(not_plain)
    for forged in ({"a": 1}, ["x", []], ["d", [[1]]], ["l", "ab"], ["s", [["l", []]]], [1, 2, 3], ["b", "zz"]):
        with pytest.raises(ValueError):
            decode_plain(forged)


def test_large_output_is_bounded_and_still_comparable(pool):
    src = "def test_func(n):\n    return list(range(n))\n"
    r = pool.call(src, "(200000,)")
    assert r.ok and len(r.output_repr) <= 2000 and r.output_repr.endswith("...")
    assert r.output is None and set(r.normalized) == {DIGEST_KEY}
    assert outputs_match(r.normalized, list(range(200000)))
    assert not outputs_match(r.normalized, list(range(199999)))


def test_timeout_is_an_error_like_any_other(pool):
    start = time.monotonic()
    r = pool.call("def test_func():\n    while True:\n        pass\n", "()", timeout_s=0.5)
    assert r.error == "TimeoutError: call exceeded 0.5 s"
    assert 0.5 <= r.duration_s < 2 and time.monotonic() - start < 3


def test_input_too_long_is_refused_without_a_worker(pool):
    spawned = pool.stats["spawned"]
    r = pool.call(ADD, "(" + "1, " * 10000 + ")")
    assert r.error.startswith("InputParseError: input has") and pool.stats["spawned"] == spawned
    assert pool.call(ADD, 5).error.startswith("InputParseError: input must be a str")  # type: ignore[arg-type]


def test_bad_arguments_raise():
    with SandboxPool(workers=1) as p:
        with pytest.raises(TypeError):
            p.call(None, "()")  # type: ignore[arg-type]
        with pytest.raises(ValueError):
            p.call(ADD, "()", timeout_s=0)
    with pytest.raises(ValueError, match="isolation"):
        SandboxPool(isolation="chroot")
    with pytest.raises(RuntimeError, match="closed"):
        p.call(ADD, "(1, 2)")


def test_warm_workers_are_reused_per_source_and_evicted_lru():
    with SandboxPool(workers=1, max_warm=2) as p:
        for _ in range(5):
            assert p.call(ADD, "(1, 2)").ok
        assert p.stats["spawned"] == 1
        for i in range(4):
            assert p.call(f"def test_func():\n    return {i}\n", "()").output == i
        assert p.stats["live"] <= 2 and p.stats["evicted"] >= 3
        pids = p.live_pids()
        assert pids and all(_alive(pid) for pid in pids)
    assert not any(_alive(pid) for pid in pids)  # close() killed and reaped them


def _sources(n: int) -> list[str]:
    return [f"def test_func():\n    return {i}\n" for i in range(n)]


def test_keep_warm_follows_the_live_functions_and_max_warm_caps_it():
    sources = _sources(6)
    with SandboxPool(workers=1) as p:
        p.keep_warm(6)
        for _ in range(2):
            assert [p.call(s, "()").output for s in sources] == list(range(6))
        assert (p.stats["spawned"], p.stats["evicted"], p.stats["live"]) == (6, 0, 6)
        p.keep_warm(2)  # fewer live episodes: idle children go at once
        assert p.warm_limit == 2 and p.stats["live"] == 2
        with pytest.raises(ValueError, match="keep_warm"):
            p.keep_warm(-1)
    with SandboxPool(workers=1, max_warm=3) as p:
        p.keep_warm(6)
        assert p.warm_limit == 3
        for _ in range(2):
            assert [p.call(s, "()").output for s in sources] == list(range(6))
        assert p.stats["live"] <= 3 and p.stats["spawned"] == 12  # LRU order over 6 > 3: every call misses


def test_warm_children_are_bounded_by_their_memory():
    with SandboxPool(workers=1) as p:
        p.keep_warm(4)
        for s in _sources(4):
            p.call(s, "()")
        assert p.stats["live"] == 4 and 0.2 < p.stats["warm_mb"] / 4 < 64  # each child's own pages counted
    with SandboxPool(workers=1, warm_memory_mb=1) as p:  # below one child's own memory
        p.keep_warm(4)
        for s in _sources(4) * 2:
            p.call(s, "()")
        assert p.stats["live"] == 0 and p.stats["spawned"] == 8


def _parent_pid(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as fh:
        return int(fh.read().rsplit(") ", 1)[1].split()[1])


def test_new_functions_are_forks_of_one_zygote():
    with SandboxPool(workers=1, max_warm=1) as p:
        p.isolation  # noqa: B018 - starts the zygote
        zygote_pid = p.live_pids()[1]
        for i, s in enumerate(_sources(10)):
            assert p.call(s, "()").output == i
            children = p.live_pids()[2:]  # its child, then its spares; no process in between
            assert children and all(_parent_pid(child) == zygote_pid for child in children)
        assert p.stats["zygotes"] == 1 and p.stats["spawned"] == 10  # the first got the first source


def test_spare_children_wait_ready_ahead_of_demand():
    with pytest.raises(ValueError, match="spare_children"):
        SandboxPool(spare_children=-1)
    for spares in (0, 2):
        with SandboxPool(workers=1, max_warm=1, spare_children=spares) as p:
            if p.isolation not in ("namespaces", "userns"):
                pytest.skip("spares need a namespace mode")
            for s in _sources(3):
                p.call(s, "()")
            assert len(p.live_pids()) == 2 + 1 + spares  # zygote and its supervisor, the warm child, the spares
            assert p.stats["spawned"] == 3


def test_a_spare_that_died_waiting_is_skipped():
    with SandboxPool(workers=1, max_warm=1) as p:
        if p.isolation not in ("namespaces", "userns"):
            pytest.skip("spares need a namespace mode")
        spares = p.live_pids()[3:]  # after the zygote's supervisor, the zygote and the warm child
        assert len(spares) == 2
        for pid in spares:
            os.kill(pid, signal.SIGKILL)
        time.sleep(0.2)
        assert [p.call(s, "()").output for s in _sources(3)] == [0, 1, 2]
        assert p.stats["crashes"] == 0 and len(p.live_pids()) == 5 and not set(spares) & set(p.live_pids())


def test_children_of_one_zygote_cannot_touch_each_other():
    with SandboxPool(workers=2, memory_mb=256) as p:
        if p.isolation not in ("namespaces", "userns"):
            pytest.skip("siblings share a PID namespace and /tmp without namespaces")
        writer = "def test_func():\n    open('/tmp/mine', 'w').write('x')\n    return 1\n"
        reader = "import os\ndef test_func():\n    return os.path.exists('/tmp/mine')\n"
        killer = ("import os, signal\ndef test_func():\n    for target in (-1, 0):  # everyone it may signal; its group\n"
                  "        try:\n            os.kill(target, signal.SIGKILL)\n        except OSError:\n            pass\n"
                  "    return 'survived'\n")
        assert p.call(writer, "()").output == 1 and p.call(reader, "()").output is False
        spawned = p.stats["spawned"]
        assert p.call(killer, "()").output == "survived"  # PID 1 of its namespace, alone in its group
        assert p.call(writer, "()").output == 1 and p.call(reader, "()").output is False
        assert p.stats["spawned"] == spawned + 1 and p.stats["crashes"] == 0  # the killer's child only


def test_children_cannot_reach_each_others_abstract_sockets():
    listen = ("import socket, sys\ndef test_func(name):\n    s = socket.socket(socket.AF_UNIX)\n    s.bind(name)\n"
              "    s.listen(1)\n    sys.aac_keep = s  # stays open while this child is warm\n    return 'listening'\n")
    connect = ("import socket\ndef test_func(name):\n    s = socket.socket(socket.AF_UNIX)\n    try:\n"
               "        s.connect(name)\n    except OSError as exc:\n        return type(exc).__name__\n"
               "    return 'connected'\n")
    with SandboxPool(workers=1) as p:
        if p.isolation_details.get("abstract_sockets") != "scoped per child":
            pytest.skip("needs a namespace mode and Landlock ABI >= 6")
        name = repr((f"\0aac-test-{os.getpid()}",))
        assert p.call(listen, name).output == "listening"
        assert p.call(connect, name).output == "PermissionError"  # a sibling child; same network namespace
        assert p.stats["live"] == 2


def test_a_worker_that_died_while_idle_is_replaced_silently():
    with SandboxPool(workers=1) as p:
        assert p.call(ADD, "(1, 'a')").ok
        for pid in p.live_pids():
            os.kill(pid, signal.SIGKILL)
        time.sleep(0.2)
        assert p.call(ADD, "(2, 'b')").output == (2, "bb")
        assert p.stats["spawned"] == 2


def test_call_many_keeps_order_and_runs_in_parallel(pool):
    src = "import time\ndef test_func(x):\n    time.sleep(0.3)\n    return x * x\n"
    pool.call_many([(src, "(0,)"), (src, "(0,)")])  # warm two workers
    start = time.monotonic()
    results = pool.call_many([(src, f"({i},)") for i in range(4)])
    assert [r.output for r in results] == [0, 1, 4, 9]
    assert time.monotonic() - start < 1.1  # 4 x 0.3 s on 2 workers


def test_pool_is_thread_safe(pool):
    out: list = []

    def work(k):
        out.extend(pool.call(ADD, f"({k}, 'x')").output for _ in range(20))

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(out) == sorted((k, "xx") for k in range(4) for _ in range(20))


def test_run_function_uses_a_shared_pool():
    assert run_function(ADD, "(1, 'a')").output == (1, "aa")
    assert run_function(ADD, "(2, 'b')", timeout_s=5.0).output == (2, "bb")


def test_from_config_reads_sandbox_config():
    from aac.config import SandboxConfig

    with SandboxPool.from_config(SandboxConfig(workers=1, memory_mb=128, max_output_chars=10, warm_memory_mb=99,
                                               preload=["json"])) as p:
        assert p.workers == 1 and p.warm_memory_mb == 99 and p._opts.preload == ("json",)
        assert p.call("def test_func():\n    return 'y' * 100\n", "()").output_repr == "'yyyyyy..."


def test_isolation_is_reported(pool):
    assert pool.isolation in ("namespaces", "userns", "landlock", "rlimits")
    details = pool.isolation_details
    assert details["mode"] == pool.isolation and details["limits"]["nproc"] == 0
    if os.geteuid() == 0:
        assert pool.isolation == "namespaces"  # what this project's CI machines provide


def test_memory_limit():
    with SandboxPool(workers=1, memory_mb=128) as p:
        r = p.call("def test_func():\n    return len(bytearray(200 << 20))\n", "()")
        assert r.error == "MemoryError"
        assert p.call("def test_func():\n    return len(bytearray(20 << 20))\n", "()").output == 20 << 20


def test_cpu_limit_per_call():
    spin = "import time\ndef test_func(s):\n    t = time.process_time()\n    while time.process_time() - t < s:\n        pass\n    return s\n"
    with SandboxPool(workers=1, cpu_time_s=1.0) as p:
        r = p.call(spin, "(5,)", timeout_s=60)  # the wall timeout is not what stops it (a busy machine is slow)
        assert r.error.startswith("SandboxError: the worker died by SIGXCPU: CPU time limit")
        assert p.call(spin, "(0.6,)", timeout_s=60).ok
        assert p.call(spin, "(0.6,)", timeout_s=60).ok  # the limit is per call, not per worker
        assert p.stats["spawned"] == 2


def test_throughput_floor(pool):
    """A loose floor (the benchmark's bar is 1,000 calls/s); catches a slow path, not noise."""
    pool.call(ADD, "(1, 'a')")
    n, start = 300, time.perf_counter()
    for _ in range(n):
        pool.call(ADD, "(1, 'a')")
    assert n / (time.perf_counter() - start) >= 300


MODE_CHECKS = {
    "fork": ("import os\ndef test_func():\n    os.fork()\n", "BlockingIOError"),
    "thread": ("import _thread\ndef test_func():\n    _thread.start_new_thread(print, ())\n", "RuntimeError"),
}


@pytest.fixture
def open_dir():
    """A world-writable scratch folder outside /tmp: only the sandbox, not permissions, stops writes."""
    path = Path(tempfile.mkdtemp(prefix="aac-sandbox-test-", dir="/var/tmp" if os.path.isdir("/var/tmp") else None))
    path.chmod(0o777)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.mark.parametrize("mode", ["namespaces", "userns", "landlock", "rlimits"])
def test_every_isolation_mode_runs_calls_and_blocks_processes(mode, open_dir):
    try:
        p = SandboxPool(workers=1, isolation=mode)
        assert p.isolation == mode
    except SandboxUnavailable as exc:
        pytest.skip(f"{mode} unavailable here: {exc}")
    target = open_dir
    with p:
        assert p.call(ADD, "(1, 'z')").output == (1, "zz")
        for src, error in MODE_CHECKS.values():
            assert p.call(src, "()").error.startswith(error)
        r = p.call("def test_func(path):\n    open(path, 'w').write('x')\n", f"({str(target / 'f')!r},)")
        if mode == "rlimits":
            assert r.ok  # no filesystem isolation in this mode
        else:
            assert not r.ok and not (target / "f").exists()
        r = p.call("import os\ndef test_func():\n    open('scratch', 'w').write('x')\n    return os.listdir('.')\n", "()")
        assert r.output == ["scratch"]  # a private, writable working directory


UNPRIVILEGED_PROBE = """
import json, os, sys
sys.path.insert(0, sys.argv[1])
from aac.sandbox.pool import SandboxPool
checks = {
    "basic": "def test_func():\\n    return 6 * 7\\n",
    "fork": "import os\\ndef test_func():\\n    os.fork()\\n",
    "write": "def test_func():\\n    open(%r, 'w').write('x')\\n" % (sys.argv[2] + "/f"),
    "tcp": "import socket\\ndef test_func():\\n    socket.create_connection(('127.0.0.1', 9), timeout=0.5)\\n",
    "signal_parent": "import os\\ndef test_func():\\n    os.kill(%d, 0)\\n" % os.getpid(),
}
with SandboxPool(workers=1) as pool:
    out = {"isolation": pool.isolation}
    out.update({k: pool.call(src, "()", timeout_s=5).error for k, src in checks.items()})
print(json.dumps(out))
"""


def _others_can_reach(path: Path) -> bool:
    return all(os.stat(p).st_mode & 0o001 for p in [*reversed(path.parents), path])


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run a probe as another user")
def test_an_unprivileged_user_gets_a_namespace_sandbox(open_dir):
    """Auto-detection as uid 65534 (with the system Python: the venv's may sit in a 0700 home)."""
    python = Path("/usr/bin/python3")
    root = Path(__file__).resolve().parents[1]
    if not python.exists() or not _others_can_reach(root / "aac"):
        pytest.skip("no system Python, or the checkout is not readable by other users")
    script = open_dir / "probe.py"
    script.write_text(UNPRIVILEGED_PROBE)
    done = subprocess.run([str(python), "-I", str(script), str(root), str(open_dir)], user=NOBODY, group=NOBODY,
                          extra_groups=[], capture_output=True, text=True, timeout=120, cwd=open_dir,
                          env={"PATH": "/usr/bin:/bin", "HOME": str(open_dir)})
    if "SyntaxError" in done.stderr or "ImportError" in done.stderr:
        pytest.skip(f"the system Python cannot run aac: {done.stderr.strip().splitlines()[-1]}")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["isolation"] in ("userns", "landlock"), out  # rlimits only where the kernel offers neither
    assert out["basic"] is None
    assert out["fork"].startswith("BlockingIOError")
    assert out["write"] is not None and not (open_dir / "f").exists()
    assert out["tcp"] is not None
    assert out["signal_parent"] is not None  # another PID namespace, or Landlock's signal scope


UNDER_TMP_PROBE = """
import json, logging, sys
from aac.sandbox import SandboxPool

logging.basicConfig(level=logging.INFO, stream=sys.stderr)
clone, secret = sys.argv[1], sys.argv[2]
sources = {
    "zip": "import extra_mod\\ndef test_func():\\n    return extra_mod.VALUE\\n",
    "seen": "import os\\ndef test_func(*paths):\\n    return [os.path.exists(p) for p in paths]\\n",
    "write": "def test_func(path):\\n    open(path, 'w').write('x')\\n",
}
inputs = {"zip": "()", "seen": repr((clone + "/aac/sandbox/_worker.py", sys.prefix + "/pyvenv.cfg", secret)),
          "write": repr((clone + "/aac/owned",))}
with SandboxPool(workers=1) as pool:
    results = {name: pool.call(source, inputs[name]) for name, source in sources.items()}
    print(json.dumps({"mode": pool.isolation, "details": pool.isolation_details, "prefix": sys.prefix,
                      **{name: r.output if r.ok else r.error for name, r in results.items()}}))
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="namespace isolation needs root")
def test_namespaces_with_the_checkout_venv_and_interpreter_under_tmp():
    """A fresh clone under /tmp, its venv's interpreter a copy there, a zip on its import path
    beside it: the namespace mode's private /tmp keeps them visible (read-only), nothing else."""
    base = Path(tempfile.mkdtemp(prefix="aac-under-tmp-", dir="/tmp"))
    try:
        clone = base / "clone"
        shutil.copytree(Path(__file__).resolve().parents[1] / "aac", clone / "aac",
                        ignore=shutil.ignore_patterns("__pycache__"))
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", "--copies", str(clone / ".venv")], check=True,
                       timeout=120)
        (base / "wheels").mkdir()
        with zipfile.ZipFile(base / "wheels" / "extra.zip", "w") as zf:
            zf.writestr("extra_mod.py", "VALUE = 42\n")
        site = clone / ".venv" / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"
        (site / "extra.pth").write_text(f"{base / 'wheels' / 'extra.zip'}\n")
        (base / "secret").write_text("not for the sandbox")
        done = subprocess.run([str(clone / ".venv" / "bin" / "python"), "-c", UNDER_TMP_PROBE, str(clone),
                               str(base / "secret")], capture_output=True, text=True, timeout=120, cwd=clone,
                              env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(clone)})
        assert done.returncode == 0, done.stderr
        out = json.loads(done.stdout)
        assert out["prefix"] == str(clone / ".venv")
        assert out["mode"] == "namespaces" and "unreadable_import_paths" not in out["details"], done.stderr
        assert "sandbox isolation: namespaces;" in done.stderr  # the active mode is logged as ever
        assert out["details"]["tmp_binds"] == [str(base / "clone"), str(base / "wheels" / "extra.zip")]
        assert out["zip"] == 42 and out["seen"] == [True, True, False]
        assert out["write"].startswith(("OSError: [Errno 30]", "PermissionError")) and not (clone / "aac/owned").exists()
    finally:
        shutil.rmtree(base, ignore_errors=True)
