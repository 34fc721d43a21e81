"""The sandbox cost of the mutants critic per call, side by side with a plain call and the scripted critic.

Every row of `builtin:humaneval` (train and test) that kept mutants plays an "episode" whose calls are its test
inputs, in order (after its context). Per call, in one run and one sandbox pool (2 workers, as a rollout
worker's), each measured with its own cold cache:
- plain: the black box's own call (what the episode pays for the call);
- mutants: `critic.kind=mutants`' work for the call: the call on the original and on every mutant still alive
  (aac/data/mutants.py, `KillRunner.survivors`);
- scripted: `critic.kind=scripted`'s for the call (the embedded default's coverage rule: the function's arcs
  under coverage.py in its helper process, and its result).
Two pool sizes: `keep_warm(1)`, what a demo worker asks (one function in flight), so each mutant's source
starts a child; and `keep_warm(17)`, a function and its 16 mutants warm. Rounds rotate the order.

    python benchmarks/bench_mutants.py [--rounds 3] [--limit N]
"""

from __future__ import annotations

import argparse
import statistics
import time

from aac.cpu_speed import per_core_gflops, speed_line
from aac.critic.coverage import CoverageInformativeness
from aac.critic.judgment import Judgment
from aac.data.mutants import KillRunner
from aac.datasets import load_instances
from aac.env.observation import Observation
from aac.sandbox.pool import SandboxPool


def episodes(limit: int | None):
    rows = [i for split in ("train", "test") for i in load_instances("builtin:humaneval", split=split) if i.mutants]
    return [(i, [x for x, _ in i.train_examples], [x for x, _ in i.test_examples]) for i in rows[:limit]]


def plain(pool: SandboxPool, eps) -> tuple[float, int]:
    t0, n = time.perf_counter(), 0
    for inst, _, calls in eps:
        for x in calls:
            pool.call(inst.code, x, timeout_s=2.0)
            n += 1
    return time.perf_counter() - t0, n


def mutants(pool: SandboxPool, eps) -> tuple[float, int]:
    runner = KillRunner(lambda s, x, t: pool.call(s, x, timeout_s=t), timeout_s=2.0, workers=pool.workers)
    t0 = time.perf_counter()
    for inst, context, calls in eps:  # one episode at a time, as its judgments are scored when it ends
        runner.survivors([(inst, [*context, *calls])])
    seconds = time.perf_counter() - t0
    runner.close()
    return seconds, runner.calls


def scripted(pool: SandboxPool, eps) -> tuple[float, int]:
    caller = lambda s, x, t: pool.call(s, x, timeout_s=t)  # noqa: E731
    coverage = CoverageInformativeness(caller, call_timeout_s=2.0)
    t0 = time.perf_counter()
    for inst, context, calls in eps:
        seen = [Observation(x, "", None) for x in context]
        for x in calls:
            coverage.score([Judgment("informativeness", inst, "", list(seen), "", query=x)])
            seen.append(Observation(x, "", None))
    seconds = time.perf_counter() - t0
    coverage.close()
    return seconds, 0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--limit", type=int, default=None, help="rows with mutants to play (default: all)")
    a = ap.parse_args()
    print(speed_line(per_core_gflops(10)))
    eps = episodes(a.limit)
    calls = sum(len(c) for _, _, c in eps)
    alive = sum(len(i.mutants) for i, _, _ in eps) / len(eps)
    print(f"{len(eps)} rows with mutants ({alive:.1f} each), {calls} calls")
    ways = {"plain call": plain, "mutants critic": mutants, "scripted critic (coverage)": scripted}
    times: dict[tuple[str, int], list[float]] = {}
    runs: dict[tuple[str, int], int] = {}
    for warm in (1, 17):
        for r in range(a.rounds):
            names = list(ways)
            names = names[r % len(names):] + names[: r % len(names)]
            for name in names:
                with SandboxPool(workers=2) as pool:
                    pool.keep_warm(warm)
                    seconds, n = ways[name](pool, eps)
                times.setdefault((name, warm), []).append(seconds)
                runs[(name, warm)] = n
    print("\n| per call | keep_warm | ms / call | calls / s | sandbox runs / call | x plain |")
    print("|---|---:|---:|---:|---:|---:|")
    for warm in (1, 17):
        base = statistics.median(times[("plain call", warm)])
        for name in ways:
            s = statistics.median(times[(name, warm)])
            per = runs[(name, warm)] / calls if name == "mutants critic" else 1.0
            print(f"| {name} | {warm} | {1000 * s / calls:.2f} | {calls / s:.0f} | "
                  f"{per:.2f}{' + arcs' if name.startswith('scripted') else ''} | {s / base:.1f} |")
    print(f"\nmedian of {a.rounds} rounds; {speed_line(per_core_gflops(10))}")


if __name__ == "__main__":
    main()
