"""The branch arcs a built file's test examples miss, row by row (for classifying them by hand).

    python benchmarks/coverage_misses.py SOURCE_SPEC BUILT.jsonl [--json OUT] [--classes CLASSES.json]

Re-measures each kept row as the builder does (coverage.py, branch=True, on the anonymised function
without the validator, over the row's test examples) and prints, for every row below 100%, its
anonymised source with the lines its missed arcs leave from, and the arcs (negative target: exit).
`--classes` (benchmarks/cruxeval_misses.json: task id -> arc -> [class, input or proof], a: a
returning input takes it, b: only raising inputs do, c: none does) adds the mean coverage over the
arcs left when the c arcs, and then the b arcs too, leave the denominator; the raw mean stays first.
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections import Counter

from aac.data.anonymize import RejectedCode, anonymize
from aac.data.coverage import CoverageRunner, static_branch_arcs
from aac.data.sources import RawTask, read_tasks
from aac.env.instance import load_instances


def misses(spec: str, path: str) -> tuple[list[dict], list[float]]:
    tasks = {t.task_id: t for t in read_tasks(spec) if isinstance(t, RawTask)}
    rows, coverages = [], []
    with CoverageRunner(call_timeout_s=1.0, budget_s=5.0) as runner:
        for inst in load_instances(path):
            try:
                plain = anonymize(tasks[inst.uid].code, tasks[inst.uid].entry_point).source
            except (KeyError, RejectedCode):
                continue
            static = static_branch_arcs(plain)
            report = runner.measure(plain, [i for i, _ in inst.test_examples], static=static)
            coverages.append(report.coverage(report.per_input))
            hit = set(report.baseline).union(*(a or set() for a in report.per_input))
            missed = sorted(report.branch_arcs - hit)
            if missed:
                rows.append({"task_id": inst.uid, "coverage": coverages[-1], "source": plain,
                             "missed": missed, "inputs": [i for i, _ in inst.test_examples],
                             "branch_arcs": len(report.branch_arcs)})
    return rows, coverages


def without(rows: list[dict], coverages: list[float], classes: dict, drop: set[str]) -> float:
    """Mean coverage when the arcs of the `drop` classes leave each row's denominator."""
    out = {r["task_id"]: r for r in rows}
    total = sum(coverages)
    for r in out.values():
        arcs = classes.get(r["task_id"], {})
        gone = sum(arcs.get(str(tuple(a)), ["?"])[0] in drop for a in r["missed"])
        covered = r["branch_arcs"] - len(r["missed"])
        total += (covered / (r["branch_arcs"] - gone) if r["branch_arcs"] > gone else 1.0) - r["coverage"]
    return total / len(coverages)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("spec")
    p.add_argument("built")
    p.add_argument("--json")
    p.add_argument("--classes")
    a = p.parse_args()
    rows, coverages = misses(a.spec, a.built)
    for row in rows:
        lines = row["source"].splitlines()
        starts = {s for s, _ in row["missed"]}
        print(f"=== {row['task_id']}  {100 * row['coverage']:.0f}%  missed {row['missed']}")
        for n, line in enumerate(lines, 1):
            print(f"{'>' if n in starts else ' '}{n:3d} {line}")
        print("    tests:", " ".join(row["inputs"])[:300])
    print(f"{len(coverages)} rows, mean {100 * statistics.fmean(coverages):.2f}%, {len(rows)} below 100%")
    if a.classes:
        with open(a.classes) as f:
            classes = json.load(f)
        left = Counter(classes.get(r["task_id"], {}).get(str(tuple(arc)), ["unclassified"])[0]
                       for r in rows for arc in r["missed"])
        print(f"missed arcs by class: {dict(left)}; mean without c arcs "
              f"{100 * without(rows, coverages, classes, {'c'}):.2f}%, without b and c arcs "
              f"{100 * without(rows, coverages, classes, {'b', 'c'}):.2f}%")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
