"""numpy inside the sandbox: a library-domain wrapper's first call (a new source: a new child that
imports numpy) and its warm calls, with the default preload and with numpy preloaded in the zygote
(aac.data.library.PRELOAD), side by side in one run.

    python benchmarks/bench_library_sandbox.py [--functions 8]
"""

from __future__ import annotations

import argparse
import statistics
import time

from aac.data.library import PRELOAD, wrapper_source
from aac.sandbox.pool import DEFAULT_PRELOAD, SandboxPool

NUMPY = ("numpy.cumsum", "numpy.sort", "numpy.diff", "numpy.unique", "numpy.argsort", "numpy.flip", "numpy.abs",
         "numpy.sign", "numpy.cumprod", "numpy.ptp", "numpy.trim_zeros", "numpy.median")


def measure(preload: tuple[str, ...], functions: int, warm_calls: int = 20) -> tuple[float, float]:
    """Median seconds of a new numpy source's first call, and of its warm calls."""
    with SandboxPool(workers=1, preload=preload) as pool:
        pool.call("def test_func(a):\n    return a\n", "(1,)", timeout_s=30)  # the zygote is up
        cold, warm = [], []
        for qualname in NUMPY[:functions]:
            code = wrapper_source(qualname, 1)
            t = time.perf_counter()
            assert pool.call(code, "([3, 1, 2, 0],)", timeout_s=30).ok
            cold.append(time.perf_counter() - t)
            for _ in range(warm_calls):
                t = time.perf_counter()
                pool.call(code, "([3, 1, 2, 0],)", timeout_s=30)
                warm.append(time.perf_counter() - t)
    return statistics.median(cold), statistics.median(warm)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--functions", type=int, default=8)
    a = p.parse_args()
    rows = {label: measure(preload, a.functions) for label, preload in
            (("default preload", DEFAULT_PRELOAD), ("numpy preloaded", PRELOAD))}
    print("| preload | first call of a new numpy source, ms | warm call, ms |\n|---|---:|---:|")
    for label, (cold, warm) in rows.items():
        print(f"| {label} | {1000 * cold:.1f} | {1000 * warm:.2f} |")
    (c0, _), (c1, _) = rows.values()
    print(f"first call: {c0 / c1:.1f}x faster with numpy preloaded")


if __name__ == "__main__":
    main()
