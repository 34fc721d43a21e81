"""Sandbox throughput: warm children, cold/churn over many functions, and a fresh process per call,
same machine, same run, beside the code of an earlier commit (today's baseline).

    python benchmarks/bench_sandbox.py                 # ~3-4 minutes on 2 cores
    python benchmarks/bench_sandbox.py --quick         # fewer calls
    python benchmarks/bench_sandbox.py --ref b7a4787   # the commit to compare with ("" for none)

Scenarios, each for this tree and for `--ref` (a copy of its `aac/`), each in a fresh subprocess:
- warm: a trivial and a typical (PAU-style: validator, list work, tuple output) function, one
  caller, its child warm (`SandboxPool.call`), and `call_many` with all workers busy;
- churn: 4 caller threads, every call a different function out of the built HumanEval
  functions (both splits, >= 150) on a stored input; this tree's pool is sized for them
  (`keep_warm(n)`), so the first pass forks a child per function and the later ones are warm;
  `--ref` keeps its default number of warm workers (4 x workers), as a new user would;
- cold: the same calls with a pool that keeps only `workers` warm, so every call starts a fresh
  child: 4 caller threads (calls/s), and one caller (the latency of a cold call);
- a fresh forked process per call that execs the source (the release's approach) and a fresh
  interpreter per call (`python -c`), for the trivial and typical functions.
Methods run in interleaved rounds and each keeps its best round, so a busy machine (other jobs)
penalises all of them alike; the load average is printed with each round. CPU per call covers this
process, its reaped children and the live sandbox processes with the children they reaped (the
zygote's exited children included): what carries over to a quiet machine, where 2 cores give at
most 2,000 / (CPU ms per call) calls/s. Page faults per call (the same processes) are exact at any
load: copy-on-write and fresh pages are a large part of what a new child costs.
The bars: warm trivial >= 1,000 calls/s and >= 30x the fresh fork rate, not slower than `--ref`;
churn >= 1,000 calls/s; cold p50 (one caller) <= 5 ms.
"""

from __future__ import annotations

import argparse
import ast
import json
import multiprocessing as mp
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from aac.sandbox.pool import SandboxPool

ROOT = Path(__file__).resolve().parents[1]
THREADS = 4

TRIVIAL = ("def test_func(a, b):\n    return a + len(b)\n", "(3, 'ab')", 5)
TYPICAL = ("""def validate_input_args(arg0, arg1):
    if not isinstance(arg0, list) or not all(isinstance(x, int) for x in arg0):
        raise TypeError('arg0 must be a list of int')
    if not isinstance(arg1, int) or arg1 <= 0:
        raise ValueError('arg1 must be a positive int')


def test_func(arg0, arg1):
    validate_input_args(arg0, arg1)
    numbers, k = arg0, arg1
    groups = {}
    for i, x in enumerate(numbers):
        groups.setdefault(x % k, []).append(i)
    return sorted((r, tuple(ix)) for r, ix in groups.items())
""", "([5, 3, 8, 1, 9, 2, 7, 4, 6, 10, 12, 11], 4)", [(0, (2, 7, 10)), (1, (0, 3, 4)), (2, (5, 8, 9)),
                                                      (3, (1, 6, 11))])


def _worker_cpu(pids: list[int]) -> float:
    """CPU seconds (user + system) the given live processes and the children they reaped have used:
    their own to the nanosecond (schedstat), their reaped children's in clock ticks."""
    total = 0.0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as fh:
                fields = fh.read().rsplit(") ", 1)[1].split()
            with open(f"/proc/{pid}/schedstat") as fh:
                own_ns = int(fh.read().split()[0])
        except OSError:  # gone meanwhile: its time is in its parent's children's time
            continue
        total += own_ns / 1e9 + sum(int(f) for f in fields[13:15]) / os.sysconf("SC_CLK_TCK")  # cutime, cstime
    return total


def _faults(pids: list[int]) -> int:
    """Page faults (minor) of this process, its reaped children and the given live processes with
    the children they reaped: what a call costs in copy-on-write and fresh pages, exact at any load."""
    total = resource.getrusage(resource.RUSAGE_SELF).ru_minflt + resource.getrusage(resource.RUSAGE_CHILDREN).ru_minflt
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as fh:
                fields = fh.read().rsplit(") ", 1)[1].split()
        except OSError:
            continue
        total += int(fields[7]) + int(fields[8])  # minflt, cminflt
    return total


def _cpu(pids: list[int]) -> float:
    """CPU seconds of this process, its reaped children and the given worker processes."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime + _worker_cpu(pids)


def measure(call, n: int, pids: list[int] = ()) -> dict:
    """Rate, latencies and CPU per call of `call()` repeated n times."""
    latencies = []
    faults0, cpu0, start = _faults(pids), _cpu(pids), time.perf_counter()
    for _ in range(n):
        t = time.perf_counter()
        call()
        latencies.append(time.perf_counter() - t)
    wall = time.perf_counter() - start
    return {"rate": n / wall, "lat": latencies, "cpu_ms": (_cpu(pids) - cpu0) / n * 1e3,
            "faults": (_faults(pids) - faults0) / n}


def best_of(rounds: list[dict]) -> dict:
    """The best round's rate and CPU (the quietest moment of a shared machine); p50/p99 of all rounds."""
    out = {"rate": max(r["rate"] for r in rounds)}
    for key in ("cpu_ms", "faults"):
        if all(key in r for r in rounds):
            out[key] = min(r[key] for r in rounds)
    lat = [x for r in rounds for x in r.get("lat", [])]
    if len(lat) > 1:
        q = statistics.quantiles(lat, n=100)
        out.update(p50_ms=q[49] * 1e3, p99_ms=q[98] * 1e3)
    return out


def bench_pool(pool: SandboxPool, source: str, text: str, expected, n: int) -> dict:
    assert pool.call(source, text).output == expected  # warm, and correct
    return measure(lambda: pool.call(source, text), n, pool.live_pids())


def bench_pool_many(pool: SandboxPool, source: str, text: str, n: int) -> dict:
    pool.call_many([(source, text)] * pool.workers)  # one warm worker each
    results = []
    r = measure(lambda: results.extend(pool.call_many([(source, text)] * n)), 1, pool.live_pids())
    assert len(results) == n and all(x.ok for x in results)
    return {"rate": r["rate"] * n, "cpu_ms": r["cpu_ms"] / n, "faults": r["faults"] / n}  # one batch: no latency


def _release_child(queue, source: str, text: str) -> None:
    scope: dict = {}
    exec(source, scope)  # the release: plain exec in a child process
    value = ast.literal_eval(text)
    args = value if isinstance(value, (tuple, list)) else (value,)
    queue.put(scope["test_func"](*args))


def bench_fresh_fork(source: str, text: str, expected, n: int) -> dict:
    ctx = mp.get_context("fork")
    out = []

    def call() -> None:
        queue = ctx.Queue()
        proc = ctx.Process(target=_release_child, args=(queue, source, text))
        proc.start()
        out.append(queue.get(timeout=30))
        proc.join(timeout=30)

    r = measure(call, n)
    assert out[-1] == expected
    return r


def bench_fresh_interpreter(source: str, text: str, expected, n: int) -> dict:
    script = ("import ast, sys\nscope = {}\nexec(sys.argv[1], scope)\nv = ast.literal_eval(sys.argv[2])\n"
              "print(repr(scope['test_func'](*(v if isinstance(v, (tuple, list)) else (v,)))))")
    out = []

    def call() -> None:
        out.append(subprocess.run([sys.executable, "-c", script, source, text], capture_output=True, text=True,
                                  timeout=60, check=True).stdout)

    r = measure(call, n)
    assert ast.literal_eval(out[-1]) == expected
    return r


def humaneval_calls() -> list[tuple[str, str]]:
    """(source, a stored input) of every built HumanEval function, both splits."""
    from aac.datasets import load_instances

    calls = []
    for split in ("train", "test"):
        calls += [(inst.code, inst.train_examples[0][0]) for inst in load_instances("builtin:humaneval", split=split)]
    return calls


def threaded(pool: SandboxPool, calls: list[tuple[str, str]], threads: int = THREADS) -> dict:
    """`threads` callers share `calls` (each call a different function, in order); rate and latencies."""
    latencies: list[float] = []
    failures = []
    chunks = [calls[k::threads] for k in range(threads)]

    def caller(chunk):
        own = []
        for source, text in chunk:
            t = time.perf_counter()
            r = pool.call(source, text)
            own.append(time.perf_counter() - t)
            # not the function's own; read from the text: a --ref tree's results may have no kind
            if not r.ok and r.error.startswith(("SandboxError", "TimeoutError")):
                failures.append(r.error)
        latencies.extend(own)

    workers = [threading.Thread(target=caller, args=(c,)) for c in chunks]
    pids = pool.live_pids()
    faults0, cpu0, start = _faults(pids), _cpu(pids), time.perf_counter()
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    wall = time.perf_counter() - start
    pids = pool.live_pids()
    cpu_ms = (_cpu(pids) - cpu0) / len(calls) * 1e3
    assert not failures, failures[:3]
    return {"rate": len(calls) / wall, "lat": latencies, "cpu_ms": cpu_ms, "faults": (_faults(pids) - faults0) / len(calls)}


def bench_churn(calls: list[tuple[str, str]], passes: int, size_for_demand: bool) -> dict[str, dict]:
    """Pass 1 (first touch of every function) and passes 2.. (every function seen before)."""
    out: dict[str, dict] = {}
    with SandboxPool(workers=2) as pool:
        pool.isolation  # noqa: B018 - the zygote (or first worker) is not what this measures
        if size_for_demand:
            pool.keep_warm(len({s for s, _ in calls}))
        order = list(calls)
        random.Random(0).shuffle(order)
        out["churn_first"] = threaded(pool, order)
        later = [threaded(pool, order) for _ in range(passes - 1)]
        out["churn_later"] = {"rate": max(r["rate"] for r in later), "lat": [x for r in later for x in r["lat"]],
                              "cpu_ms": min(r["cpu_ms"] for r in later), "faults": min(r["faults"] for r in later)}
        out["churn_stats"] = {"rate": 0.0, **pool.stats}
    return out


def bench_cold(calls: list[tuple[str, str]], n: int) -> dict[str, dict]:
    """Every call a function the pool no longer holds: 4 callers, then one."""
    with SandboxPool(workers=2, max_warm=2) as pool:
        pool.isolation  # noqa: B018
        if hasattr(pool, "keep_warm"):
            pool.keep_warm(2)
        order = [calls[i % len(calls)] for i in range(n)]
        many = threaded(pool, order)
        one = threaded(pool, order[: max(n // 2, 20)], threads=1)
    return {"cold_threads": many, "cold_one": one}


def run_scenarios(quick: bool, calls: list[tuple[str, str]]) -> dict[str, dict]:
    """The pool scenarios of one round, for whichever `aac` this process imports."""
    n_pool = 1000 if quick else 3000
    out: dict[str, dict] = {}
    with SandboxPool(workers=2) as pool:
        pool.isolation  # noqa: B018
        for name, (source, text, expected) in (("trivial", TRIVIAL), ("typical", TYPICAL)):
            out[f"{name}_warm"] = bench_pool(pool, source, text, expected, n_pool)
            out[f"{name}_many"] = bench_pool_many(pool, source, text, n_pool)
    new = hasattr(SandboxPool, "keep_warm")
    out.update(bench_churn(calls if new else calls[: 60 if quick else 120], 2 if quick else 3, new))
    out.update(bench_cold(calls, (120 if quick else 300) if new else (20 if quick else 40)))
    out["load"] = {"rate": os.getloadavg()[0]}
    return out


def eval_replay(instances: list, batch: int, calls_per_episode: int, keep_warm: bool) -> dict:
    """The sandbox calls of `aac.eval` on `instances`, replayed: play as `run_interactive` does (up
    to `batch` live episodes, one call per live episode per round, in turn, continuous batching)
    on the stored inputs, then code match per batch (`score_codes`, `call_many`) of a coder's code
    (the function's own code, edited so it is a new source, as a coder's always is)."""
    from aac.scorers.codematch import score_codes

    out = {"play_s": 0.0, "score_s": 0.0, "calls": 0}
    with SandboxPool(workers=2) as pool:  # SandboxConfig's defaults, as `aac.eval` builds it
        pool.isolation  # noqa: B018
        if keep_warm:
            pool.keep_warm(batch)
        queue, live = list(instances), []
        while queue or live:
            while queue and len(live) < batch:
                inst = queue.pop(0)
                live.append([inst, [x[0] for x in [*inst.all_examples, *inst.test_examples]], 0])
            for lv in live:
                inst, inputs, k = lv
                t = time.perf_counter()
                pool.call(inst.code, inputs[k % len(inputs)], timeout_s=30.0)
                out["play_s"] += time.perf_counter() - t
                lv[2] += 1
            out["calls"] += len(live)
            live = [lv for lv in live if lv[2] < calls_per_episode]
        for i in range(0, len(instances), batch):
            chunk = instances[i:i + batch]
            t = time.perf_counter()
            scores = score_codes([x.code + "\n# coder\n" for x in chunk], [x.test_examples for x in chunk], pool,
                                 timeout_s=0.5)
            out["score_s"] += time.perf_counter() - t
            out["calls"] += sum(len(x.test_examples) for x in chunk)
            assert all(sc.score == 1.0 for sc in scores), [sc for sc in scores if sc.score < 1][:2]
    out["total_s"] = out["play_s"] + out["score_s"]
    return out


def run_eval_replay(calls_per_episode: int) -> dict:
    from aac.datasets import load_instances

    instances = load_instances("builtin:humaneval", split="test")
    out = {"default": eval_replay(instances, 16, calls_per_episode, keep_warm=False)}
    if hasattr(SandboxPool, "keep_warm"):
        out["keep_warm(batch_size)"] = eval_replay(instances, 16, calls_per_episode, keep_warm=True)
    return out


def ref_tree(ref: str) -> Path:
    """A copy of `aac/` at commit `ref`, importable on its own."""
    path = Path(tempfile.mkdtemp(prefix="aac-bench-ref-"))
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref, "aac"], capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(path)], input=archive, check=True)
    return path


def run_ref(tree: Path, quick: bool, extra: tuple[str, ...] = ()) -> dict[str, dict]:
    """One round of the scenarios in a fresh process that imports `aac` from `tree`."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    args = [sys.executable, __file__, "--emit-json", *extra] + (["--quick"] if quick else [])
    done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=1800, check=True, cwd=str(tree))
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer calls (noisier)")
    parser.add_argument("--rounds", type=int, default=2, help="interleaved rounds; each method's best round counts")
    parser.add_argument("--ref", default="b7a4787", help="commit to compare with; empty: none")
    parser.add_argument("--eval", action="store_true",
                        help="only the replay of aac.eval's sandbox calls on the built HumanEval test split")
    parser.add_argument("--eval-calls", type=int, default=25, help="calls per episode in --eval (eval.max_calls)")
    parser.add_argument("--emit-json", action="store_true", help=argparse.SUPPRESS)  # one round, for --ref
    args = parser.parse_args()
    if args.emit_json:
        print(json.dumps(run_eval_replay(args.eval_calls) if args.eval else run_scenarios(args.quick, humaneval_calls())))
        return
    if args.eval:
        main_eval(args)
        return
    calls = humaneval_calls()
    n_fork, n_spawn = (60, 10) if args.quick else (150, 20)

    print(f"machine: {os.cpu_count()} CPUs, Python {sys.version.split()[0]}, load {_load()}; "
          f"{len(calls)} HumanEval functions")
    tree = ref_tree(args.ref) if args.ref else None
    runs: dict[str, dict[str, list[dict]]] = {"this tree": {}, f"ref {args.ref}": {}}
    baselines: dict[str, list[dict]] = {}
    try:
        with SandboxPool(workers=2) as pool:
            print(f"isolation: {pool.isolation}")
        for r in range(args.rounds):  # interleaved, so load from elsewhere hits every method alike
            # both in a fresh process each round, so neither pays for the other's heap
            for label, result in (("this tree", lambda: run_ref(ROOT, args.quick)),
                                  (f"ref {args.ref}", lambda: run_ref(tree, args.quick) if tree else {})):
                for key, value in result().items():
                    runs[label].setdefault(key, []).append(value)
                print(f"round {r + 1}: {label} done, load {_load()}", flush=True)
            for name, (source, text, expected) in (("trivial", TRIVIAL), ("typical", TYPICAL)):
                baselines.setdefault(f"{name}_fork", []).append(bench_fresh_fork(source, text, expected, n_fork))
                baselines.setdefault(f"{name}_spawn", []).append(bench_fresh_interpreter(source, text, expected,
                                                                                         n_spawn))
    finally:
        if tree:
            shutil.rmtree(tree, ignore_errors=True)

    best = {label: {k: best_of(v) for k, v in res.items() if k not in ("churn_stats", "load")}
            for label, res in runs.items() if res}
    base = {k: best_of(v) for k, v in baselines.items()}
    print("\n| scenario | code | calls/s | p50 ms | p99 ms | CPU ms/call | page faults/call |\n"
          "|---|---|---:|---:|---:|---:|---:|")
    rows = []
    names = {"trivial_warm": "trivial, warm, 1 caller", "trivial_many": "trivial, warm, call_many (2 workers)",
             "typical_warm": "typical, warm, 1 caller", "typical_many": "typical, warm, call_many (2 workers)",
             "churn_first": f"churn, {THREADS} callers, first touch of each function",
             "churn_later": f"churn, {THREADS} callers, functions seen before",
             "cold_threads": f"cold (every call a new child), {THREADS} callers", "cold_one": "cold, 1 caller"}
    for key, title in names.items():
        for label, res in best.items():
            if key in res:
                rows.append((title, label, res[key]))
    for name in ("trivial", "typical"):
        rows.append((f"{name}, fresh fork per call (release)", "", base[f"{name}_fork"]))
        rows.append((f"{name}, fresh interpreter per call", "", base[f"{name}_spawn"]))
    for title, label, r in rows:
        cells = ([f"{r['rate']:,.0f}"] + [f"{r[k]:.3f}" if k in r else "" for k in ("p50_ms", "p99_ms", "cpu_ms")]
                 + [f"{r['faults']:.0f}" if "faults" in r else ""])
        print(f"| {title} | {label} | " + " | ".join(cells) + " |")
    ref = best.get(f"ref {args.ref}", {})
    mine = best["this tree"]
    print(f"\nchurn pool stats (this tree): {runs['this tree']['churn_stats'][-1]}")
    for key in ("trivial_warm", "churn_later", "churn_first", "cold_threads", "cold_one"):
        if "cpu_ms" in mine.get(key, {}):
            print(f"CPU-bound rate on {os.cpu_count()} idle cores, {names[key]}: "
                  f"{os.cpu_count() * 1e3 / mine[key]['cpu_ms']:,.0f} calls/s ({mine[key]['cpu_ms']:.2f} ms CPU per call)")
    checks = [
        (f"warm trivial {mine['trivial_warm']['rate']:,.0f} calls/s >= 1,000 and "
         f"{mine['trivial_warm']['rate'] / base['trivial_fork']['rate']:.1f}x >= 30x the fresh fork",
         mine["trivial_warm"]["rate"] >= 1000 and mine["trivial_warm"]["rate"] >= 30 * base["trivial_fork"]["rate"]),
        (f"churn (seen before) {mine['churn_later']['rate']:,.0f} calls/s >= 1,000",
         mine["churn_later"]["rate"] >= 1000),
        (f"cold p50 (1 caller) {mine['cold_one']['p50_ms']:.2f} ms <= 5 ms", mine["cold_one"]["p50_ms"] <= 5),
    ]
    if ref:
        for key in ("trivial_warm", "typical_warm", "churn_first", "churn_later", "cold_threads"):
            ratio = mine[key]["rate"] / ref[key]["rate"]
            print(f"ratio this tree / ref, {names[key]}: {ratio:.2f}x calls/s")
        checks.append((f"warm trivial not slower than the ref ({mine['trivial_warm']['rate']:,.0f} vs "
                       f"{ref['trivial_warm']['rate']:,.0f} calls/s, 10% noise allowed)",
                       mine["trivial_warm"]["rate"] >= 0.9 * ref["trivial_warm"]["rate"]))
    for text, ok in checks:
        print(f"{'PASS' if ok else 'FAIL'}: {text}")
    print(f"load average at the end: {_load()}")


def main_eval(args: argparse.Namespace) -> None:
    print(f"eval replay: built HumanEval test split, batch_size 16, {args.eval_calls} calls per episode, "
          f"then code match; load {_load()}", flush=True)
    rows = {f"this tree, {k}": v for k, v in run_eval_replay(args.eval_calls).items()}
    print(f"this tree done, load {_load()}", flush=True)
    if args.ref:
        tree = ref_tree(args.ref)
        try:
            rows.update({f"ref {args.ref}, {k}": v for k, v in
                         run_ref(tree, False, ("--eval", "--eval-calls", str(args.eval_calls))).items()})
        finally:
            shutil.rmtree(tree, ignore_errors=True)
        print(f"ref done, load {_load()}", flush=True)
    print("\n| code, pool | sandbox calls | play s | code match s | sandbox s | ms/call |\n|---|---:|---:|---:|---:|---:|")
    for name, r in rows.items():
        print(f"| {name} | {r['calls']} | {r['play_s']:.2f} | {r['score_s']:.2f} | {r['total_s']:.2f} | "
              f"{r['total_s'] / r['calls'] * 1e3:.2f} |")
    ref = rows.get(f"ref {args.ref}, default")
    if ref:
        for name, r in rows.items():
            print(f"sandbox time, ref / {name}: {ref['total_s'] / r['total_s']:.1f}x")
    print(f"load average at the end: {_load()}")


def _load() -> str:
    with open("/proc/loadavg") as fh:
        return " ".join(fh.read().split()[:3])


if __name__ == "__main__":
    main()
