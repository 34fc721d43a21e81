"""Sandbox soak: many functions, hostile calls interleaved, for minutes; nothing may go wrong.

    python benchmarks/soak_sandbox.py                 # 10 minutes, 4 caller threads
    python benchmarks/soak_sandbox.py --minutes 1     # a short run

Callers pick a random built HumanEval function (both splits) and one of its stored examples and
check the output against the stored one (`outputs_match`); every `--hostile-every`-th call is
instead a case of tests/test_hostile.py (the attack, then its benign call). The pool keeps fewer
functions warm than there are (`--keep-warm`), so children are forked, evicted and killed all the
time. Reported: calls, wrong benign outputs (must be 0), hostile results outside what the suite
allows (those stopped by the call timeout before their own limit, e.g. a memory creep on a
loaded machine, are contained too and counted apart), files named with this run's token outside the sandbox (must be 0), the sentinel, the decoy
process and the loopback listeners intact, pool processes left after close (must be 0), and this
process's RSS over time (must stay flat: last vs the first sample after warm-up).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import random
import re
import resource
import signal
import socket
import sys
import threading
import time
from pathlib import Path

from aac.datasets import load_instances
from aac.sandbox.pool import SandboxPool
from aac.sandbox.values import outputs_match

ROOT = Path(__file__).resolve().parents[1]


def _hostile_suite():
    spec = importlib.util.spec_from_file_location("hostile_suite", ROOT / "tests" / "test_hostile.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def _rss_mib() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _benign_calls() -> list[tuple[str, str, object]]:
    """(source, input, stored output) of every stored example of the built functions."""
    calls = []
    for split in ("train", "test"):
        for inst in load_instances("builtin:humaneval", split=split):
            seen = set()
            for inp, out, *err in [*inst.all_examples, *inst.train_examples, *inst.test_examples]:
                if (err and err[0]) or inp in seen:
                    continue
                seen.add(inp)
                calls.append((inst.code, inp, out))
    return calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--keep-warm", type=int, default=48, help="functions kept warm (fewer than there are)")
    parser.add_argument("--hostile-every", type=int, default=12, help="one call in N is a hostile case")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    suite = _hostile_suite()
    calls = _benign_calls()
    functions = len({c[0] for c in calls})
    with suite.hostile_context(decoy_s=int(args.minutes * 60 + 600)) as context:
        soak(args, suite, calls, functions, context)


def soak(args: argparse.Namespace, suite, calls: list, functions: int, context: dict) -> None:
    ctx = {k: v for k, v in context.items() if not k.startswith("_")}
    token, sentinel, decoy = ctx["token"], Path(ctx["sentinel"]), context["_decoy"]
    tcp, udp = context["_tcp"], context["_udp"]
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGCHLD)}

    pool = SandboxPool(workers=args.workers, memory_mb=256)
    pool.keep_warm(args.keep_warm)
    isolation = pool.isolation
    cases = [c for c in suite.CASES if not (
        (c.needs == "isolated" and isolation == "rlimits")
        or (c.needs in ("pidns", "netns") and isolation not in ("namespaces", "userns")))]
    counts = {"benign": 0, "wrong": 0, "hostile": 0, "hostile_unexpected": 0, "hostile_timed_out": 0,
              "hostile_benign_wrong": 0}
    timed_out: dict[str, int] = {}
    problems: list[str] = []
    lock = threading.Lock()
    deadline = time.monotonic() + args.minutes * 60
    rss: list[tuple[float, float]] = []
    t0 = time.monotonic()
    print(f"soak: {functions} functions, {len(calls)} stored examples, {len(cases)} hostile cases, "
          f"isolation {isolation}, {args.threads} threads, {args.minutes} min, load {open('/proc/loadavg').read().split()[:3]}",
          flush=True)

    def note(kind: str, text: str) -> None:
        with lock:
            counts[kind] += 1
            if len(problems) < 20:
                problems.append(text[:300])

    def hostile(case) -> None:
        source = suite._source(case.attack)
        result = pool.call(source, repr((True, ctx)), timeout_s=suite.TIMEOUT)
        if case.error is None or (case.may_succeed and result.ok):
            check = suite.BOUNDED_RESULTS.get(case.name)
            fine = result.ok and (check is None or check(result, {**ctx}))
        else:
            fine = not result.ok and re.search(case.error, result.error or "") is not None
        if not fine and result.error == f"TimeoutError: call exceeded {suite.TIMEOUT} s":
            with lock:  # stopped by the wall timeout before its own limit hit: contained, on a slow machine
                counts["hostile_timed_out"] += 1
                timed_out[case.name] = timed_out.get(case.name, 0) + 1
        elif not fine:
            note("hostile_unexpected", f"{case.name}: {result}")
        benign = pool.call(source, repr((False, ctx)), timeout_s=suite.TIMEOUT)
        if not (benign.ok and benign.output == "ok"):
            note("hostile_benign_wrong", f"{case.name} benign: {benign}")
        with lock:
            counts["hostile"] += 1

    def caller(k: int) -> None:
        rng = random.Random(args.seed * 1000 + k)
        n = 0
        while time.monotonic() < deadline:
            n += 1
            if n % args.hostile_every == 0:
                hostile(rng.choice(cases))
                continue
            source, inp, expected = rng.choice(calls)
            result = pool.call(source, inp, timeout_s=10.0)
            if not result.ok or not outputs_match(result.normalized, expected):
                note("wrong", f"{inp[:80]} -> {result.error or result.output_repr[:80]} (stored {expected!r:.80})")
            with lock:
                counts["benign"] += 1

    threads = [threading.Thread(target=caller, args=(k,), daemon=True) for k in range(args.threads)]
    for t in threads:
        t.start()
    while any(t.is_alive() for t in threads):
        time.sleep(min(30.0, max(deadline - time.monotonic(), 0.5)))
        rss.append((time.monotonic() - t0, _rss_mib()))
        with lock:
            print(f"  {rss[-1][0]:6.0f} s: {counts}, rss {rss[-1][1]:.1f} MiB, live {pool.stats['live']}, "
                  f"load {open('/proc/loadavg').read().split()[0]}", flush=True)
    for t in threads:
        t.join()
    stats = pool.stats
    owned_before_close = suite._owned_worker_pids(pool.owner) == set(pool.live_pids())
    owner = pool.owner
    pool.close()
    time.sleep(0.5)
    left = suite._owned_worker_pids(owner)
    leaked = suite._token_files(token)
    checks = {
        "wrong benign outputs": counts["wrong"] == 0,
        "hostile results as the suite expects (or stopped by the call timeout)": counts["hostile_unexpected"] == 0,
        "benign calls of hostile sources ok": counts["hostile_benign_wrong"] == 0,
        "files outside the sandbox": not leaked,
        "sentinel intact": sentinel.read_text() == "intact",
        "decoy alive": decoy.poll() is None,
        "no connection or datagram reached the listeners": _quiet(tcp, udp),
        "signal handlers unchanged": {s: signal.getsignal(s) for s in handlers} == handlers,
        "pool processes == live_pids before close": owned_before_close,
        "no process left after close": not left,
    }
    warm = [m for t, m in rss if t >= 60] or [m for _, m in rss]
    growth = warm[-1] - warm[0]
    checks["parent RSS flat (< 20 MiB growth after the first minute)"] = growth < 20
    elapsed = time.monotonic() - t0
    total = counts["benign"] + 2 * counts["hostile"]
    print(f"\n{total} calls in {elapsed:.0f} s ({total / elapsed:.0f} calls/s): {counts['benign']} benign checked, "
          f"{counts['hostile']} hostile cases (attack + benign call); pool stats {stats}")
    print(f"parent RSS MiB: first {rss[0][1]:.1f}, after 1 min {warm[0]:.1f}, last {warm[-1]:.1f}, "
          f"max {max(m for _, m in rss):.1f} (maxrss {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.1f})")
    for name, ok in checks.items():
        print(f"  {'PASS' if ok else 'FAIL'}  {name}")
    if timed_out:
        print(f"  hostile calls stopped by the {suite.TIMEOUT} s timeout before their own limit: {timed_out}")
    for p in problems:
        print("  problem:", p)
    print(f"soak: {'PASS' if all(checks.values()) else 'FAIL'}; load average at the end: "
          f"{' '.join(open('/proc/loadavg').read().split()[:3])}")


def _quiet(tcp: socket.socket, udp: socket.socket) -> bool:
    try:
        tcp.accept()
        return False
    except BlockingIOError:
        pass
    try:
        udp.recvfrom(16)
        return False
    except BlockingIOError:
        return True


if __name__ == "__main__":
    main()
