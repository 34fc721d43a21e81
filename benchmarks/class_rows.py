"""A package's classes as stateful rows (aac/data/classes.py): per package, the public classes that reach
the class builder, those kept, their branch coverage and seconds, and the drop reasons, for the
builder's sequence search at the built-in size (3 rounds of 24) and at a package class's (5 of 32).

    python benchmarks/class_rows.py [--seeds 3] [--packages shopfloor json difflib ...]

Packages: tests/data/pkgs/shopfloor (a shop library written for the tests: no doctests; its own test
files are read for seeds) and modules of the standard library as unseen packages. Classes the
`module:` source skips before the class builder (private, code too long, a namespace import) are not
counted here: the yardstick of every public callable is the build summary's.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

from aac.data.classes import SEARCH_BUDGET, SEARCH_ROUNDS, build_module_class
from aac.data.coverage import CoverageRunner
from aac.data.sources import RawClass, read_tasks
from aac.data.stateful import StatefulConfig
from aac.sandbox.pool import SandboxPool

ROOT = Path(__file__).resolve().parents[1]
STDLIB = ("json", "difflib", "statistics", "textwrap", "colorsys", "fractions", "heapq", "bisect", "calendar",
          "string", "html", "shlex", "ipaddress")
SEARCHES = {"built-in size (3 x 24)": (3, 24), f"package class ({SEARCH_ROUNDS} x {SEARCH_BUDGET})": (SEARCH_ROUNDS,
                                                                                                  SEARCH_BUDGET)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seeds", type=int, default=3, help="seeds per class for shopfloor (1 for the others)")
    p.add_argument("--packages", nargs="*", default=["shopfloor", *STDLIB])
    a = p.parse_args()
    sys.path.insert(0, str(ROOT / "tests" / "data" / "pkgs"))
    classes = {pkg: [t for t in read_tasks(f"module:{pkg}") if isinstance(t, RawClass)] for pkg in a.packages}
    print("| package | search | classes | kept | mean branch coverage (kept) | s per class | dropped |")
    print("|---|---|---|---|---|---|---|")
    with SandboxPool(workers=1) as pool, CoverageRunner(call_timeout_s=1.0, budget_s=1.0) as coverage:
        for pkg, raws in classes.items():
            seeds = range(a.seeds if pkg == "shopfloor" else 1)
            for label, (rounds, budget) in SEARCHES.items():
                kept, cover, seconds, dropped = 0, [], [], Counter()
                for seed in seeds:
                    for raw in raws:
                        start = time.monotonic()
                        res = build_module_class(raw, pool, coverage, StatefulConfig(seed=seed, rounds=rounds,
                                                                                    budget=budget))
                        seconds.append(time.monotonic() - start)
                        if res.instance is None:
                            dropped[res.reason.split(" (")[0]] += 1
                        else:
                            kept += 1
                            cover.append(res.coverage)
                n = len(raws) * len(seeds)
                reasons = "; ".join(f"{k} {r}" for r, k in dropped.most_common()) or "-"
                mean = f"{100 * statistics.fmean(cover):.0f}%" if cover else "-"
                print(f"| {pkg} | {label} | {n} | {kept} | {mean} | {statistics.fmean(seconds) if seconds else 0:.1f} "
                      f"| {reasons} |", flush=True)


if __name__ == "__main__":
    main()
