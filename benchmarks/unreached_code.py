"""Top-level code the entry point never reaches: which rows carried it, and what it did to raw branch coverage.

    python benchmarks/unreached_code.py SPEC [SPEC ...] [--built SPEC=FILE.jsonl ...]

Per source spec (nothing runs): the functions the builder would anonymise, those whose module holds
top-level functions or classes their entry does not reach (`aac.data.callgraph` drops them since
BUILD_VERSION 6; unused constants and imports were dropped before too), and the branch arcs in them. With a built file of the
source (`--built`), each stored row's raw branch coverage over its test examples, re-measured as the
builder measures it (coverage.py, branch=True, on the anonymised function): "after" on the code as
stored now, "before" with the unreached definitions' branch arcs back in the denominator (no input of the
entry can take them), side by side in one run.
"""

from __future__ import annotations

import argparse
import ast
import statistics

from aac.data.anonymize import RejectedCode, anonymize
from aac.data.coverage import CoverageRunner, static_branch_arcs
from aac.data.sources import RawTask, read_tasks
from aac.env.instance import load_instances


def unreached(spec: str) -> dict[str, tuple[int, str]]:
    """task id -> (branch arcs of its unreached functions and classes, that code) for every function of
    the source. Unreached constants are left out: the builder dropped those before BUILD_VERSION 6 too."""
    out = {}
    for task in read_tasks(spec):
        if not isinstance(task, RawTask):
            continue
        try:
            anon = anonymize(task.code, task.entry_point)
        except RejectedCode:
            continue
        definitions = [s for s in ast.parse(anon.unreached).body if isinstance(s, ast.FunctionDef | ast.ClassDef)]
        code = ast.unparse(ast.Module(body=definitions, type_ignores=[]))
        out[task.task_id] = (len(static_branch_arcs(code)[0]) if code else 0, code)
    return out


def coverage_before_after(spec: str, path: str, dead: dict[str, tuple[int, str]]) -> list[tuple[str, float, float]]:
    """(task id, coverage before, after) of each stored row of `path`."""
    tasks = {t.task_id: t for t in read_tasks(spec) if isinstance(t, RawTask)}
    rows = []
    with CoverageRunner(call_timeout_s=1.0, budget_s=5.0) as runner:
        for inst in load_instances(path):
            plain = anonymize(tasks[inst.uid].code, tasks[inst.uid].entry_point).source
            report = runner.measure(plain, [i for i, _ in inst.test_examples])
            hit = set(report.baseline).union(*(a or set() for a in report.per_input)) & report.branch_arcs
            total = len(report.branch_arcs) + dead.get(inst.uid, (0, ""))[0]
            rows.append((inst.uid, len(hit) / total if total else 1.0, report.coverage(report.per_input)))
    return rows


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("specs", nargs="+")
    p.add_argument("--built", action="append", default=[], metavar="SPEC=FILE")
    a = p.parse_args()
    built = dict(b.split("=", 1) for b in a.built)
    print("| source | functions | with unreached functions or classes | of them with branch arcs there | arcs |")
    print("|---|---:|---:|---:|---:|")
    dead_by_spec = {}
    for spec in dict.fromkeys([*a.specs, *built]):
        dead = dead_by_spec[spec] = unreached(spec)
        with_code = [k for k, (_, code) in dead.items() if code]
        with_arcs = [k for k in with_code if dead[k][0]]
        print(f"| {spec.split(':')[0]} | {len(dead)} | {len(with_code)} | {len(with_arcs)} | "
              f"{sum(dead[k][0] for k in with_arcs)} |")
    if built:
        print("\n| built file | rows | rows that carried unreached definitions | mean raw branch coverage before | after "
              "| rows at 100% before | after |")
        print("|---|---:|---:|---:|---:|---:|---:|")
    for spec, path in built.items():
        rows = coverage_before_after(spec, path, dead_by_spec[spec])
        carried = sum(bool(dead_by_spec[spec].get(uid, (0, ""))[1]) for uid, _, _ in rows)
        before, after = [r[1] for r in rows], [r[2] for r in rows]
        print(f"| {path} | {len(rows)} | {carried} | {100 * statistics.fmean(before):.2f}% | "
              f"{100 * statistics.fmean(after):.2f}% | {sum(b >= 1.0 for b in before)} | {sum(x >= 1.0 for x in after)} |")


if __name__ == "__main__":
    main()
