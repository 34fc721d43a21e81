"""The bring-your-own yardstick (issue 49): how much of a package `module:` builds into rows.

    python benchmarks/byo_yardstick.py                      # the default sources, this checkout
    python benchmarks/byo_yardstick.py --base REV --out yardstick.md   # REV beside it, one run
    python benchmarks/byo_yardstick.py --sources json bisect --json out.json

A source's callables are its public top-level functions and classes (names not starting with `_`,
in `__all__` where a module lists one; modules walked as `module:` walks them). Each is built on its
own, `module:PKG.mod.NAME`, which builds it exactly as the package build would (seeded by task id),
so every callable gets its outcome: kept (with the branch coverage of its test examples) or its
drop reason. Classes count as callables: until `module:` builds them they are dropped by reason.

What the sandbox cannot run at all (the code reaches files, processes or the network: an unsafe or
network import, an unsafe builtin, a parameter that is a file or stream) is listed by name and left
out of the goal's denominator ("runnable"); every other drop, the builder's own limits included,
counts against it. The default sources: examples/fieldnotes (functions with doctests),
examples/stockroom (an in-house library: classes with state, functions without doctests or
annotations) and 13 standard-library modules read as unseen packages.

`--base REV` measures a git revision too, in a temporary worktree, in the same run (this script
and the examples folder of this checkout, REV's `aac`): the "before" column.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
STDLIB = ["json", "difflib", "statistics", "textwrap", "colorsys", "fractions", "heapq", "bisect", "calendar",
          "string", "html", "shlex", "ipaddress"]
SOURCES = ["fieldnotes", "stockroom", *STDLIB]
# reasons that say the code needs what the sandbox does not give (files, processes, the network)
SANDBOX_REASONS = ("unsafe import", "unsafe builtin", "network import", "takes a file or stream")


def callables(target: str) -> list[tuple[str, str]]:
    """(qualified name, "function" | "class") of the public top-level callables of a `module:` target."""
    from aac.data.modules import _public_names, resolve_target

    out = []
    for module in resolve_target(target)[0]:
        if module.path is None:
            continue
        tree = ast.parse(module.path.read_text(encoding="utf-8"))
        public = _public_names(tree)
        for node in tree.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and not node.name.startswith("_") \
                    and (public is None or node.name in public):
                out.append((f"{module.name}.{node.name}", "class" if isinstance(node, ast.ClassDef) else "function"))
    return out


def measure(sources: list[str]) -> dict:
    """{source: [{name, kind, kept, reason, coverage}]} with the aac on sys.path."""
    from aac.data.build import rows_from_source

    out = {}
    for source in sources:
        rows = []
        for name, kind in callables(source):
            start = time.monotonic()
            instances, summary = rows_from_source(f"module:{name}")
            reason = None if instances else _detailed(name, next(iter(summary.dropped), "no row and no reason"))
            coverage = summary.coverages[0] if instances and summary.coverages else None
            rows.append({"name": name, "kind": kind, "kept": bool(instances), "reason": reason, "coverage": coverage})
            print(f"  {name}: {'kept' if instances else reason} ({time.monotonic() - start:.1f} s)", file=sys.stderr)
        out[source] = rows
    return out


def _detailed(name: str, reason: str) -> str:
    """An unsafe import or builtin with what it is (`unsafe import: sys`), read again from the code."""
    if not reason.startswith(("unsafe import", "unsafe builtin")):
        return reason
    from aac.data.anonymize import RejectedCode, anonymize
    from aac.data.sources import RawTask, read_tasks

    for task in read_tasks(f"module:{name}"):
        if isinstance(task, RawTask):
            try:
                anonymize(task.code, task.entry_point)
            except RejectedCode as e:
                return str(e)
    return reason


def excluded(row: dict) -> bool:
    return not row["kept"] and row["reason"].removeprefix("class: ").startswith(SANDBOX_REASONS)


def table(results: dict) -> list[str]:
    lines = ["| source | callables (fn + cls) | needs files/processes/network | kept | kept % of runnable | "
             "branch coverage of kept | top drop reasons (counted) |", "|---|---:|---:|---:|---:|---:|---|"]
    every: list[dict] = []
    for source, rows in results.items():
        every += rows
        lines.append(_line(source, rows))
    lines.append(_line("**all**", every, bold=True))
    return lines


def _line(source: str, rows: list[dict], bold: bool = False) -> str:
    fn = sum(r["kind"] == "function" for r in rows)
    out = [r for r in rows if excluded(r)]
    runnable = len(rows) - len(out)
    kept = [r for r in rows if r["kept"]]
    cov = [r["coverage"] for r in kept if r["coverage"] is not None]
    reasons = Counter(r["reason"].split(" (")[0] for r in rows if not r["kept"] and not excluded(r))
    top = "; ".join(f"{n} {reason}" for reason, n in reasons.most_common(3)) or "-"
    pct = f"{100 * len(kept) / runnable:.0f}%" if runnable else "-"
    mean_cov = f"{100 * statistics.fmean(cov):.0f}%" if cov else "-"
    b = "**" if bold else ""
    return (f"| {source} | {len(rows)} ({fn} + {len(rows) - fn}) | {len(out)} | {b}{len(kept)}{b} | {b}{pct}{b} | "
            f"{mean_cov} | {top} |")


def listing(results: dict) -> list[str]:
    """The callables left out of the goal, by name and reason."""
    out = [f"- `{r['name']}`: {r['reason']}" for rows in results.values() for r in rows if excluded(r)]
    return out or ["- none"]


def run_base(rev: str, sources: list[str]) -> dict:
    """This script's measurement with REV's `aac` (a temporary detached worktree)."""
    with tempfile.TemporaryDirectory(prefix="aac-yardstick-") as tmp:
        tree, out = Path(tmp) / "base", Path(tmp) / "base.json"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q", str(tree), rev], check=True)
        try:
            env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tree), str(EXAMPLES)])}
            subprocess.run([sys.executable, __file__, "--sources", *sources, "--json", str(out), "--quiet"],
                           cwd=tree, env=env, check=True)
            return json.loads(out.read_text())["results"]
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], check=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sources", nargs="+", default=SOURCES)
    p.add_argument("--base", help="a git revision to measure beside this checkout (the 'before')")
    p.add_argument("--json", help="write the per-callable outcomes here")
    p.add_argument("--out", help="write the Markdown tables here")
    p.add_argument("--quiet", action="store_true", help="print nothing but progress (used for --base)")
    a = p.parse_args()
    sys.path[:0] = [str(EXAMPLES)]
    start = time.monotonic()
    before = run_base(a.base, a.sources) if a.base else None
    base_s = time.monotonic() - start
    results = measure(a.sources)
    seconds = time.monotonic() - start - base_s
    if a.json:
        Path(a.json).write_text(json.dumps({"results": results, "before": before}, indent=1))
    if a.quiet:
        return
    text = []
    if before is not None:
        text += [f"Before ({a.base}, {base_s:.0f} s):", "", *table(before), ""]
    text += [f"{'After (this checkout' if before is not None else 'This checkout'}, {seconds:.0f} s):", "",
             *table(results), "", "Left out of the goal (the sandbox cannot run them: files, processes, network):",
             "", *listing(results)]
    print("\n".join(text))
    if a.out:
        Path(a.out).write_text("\n".join(text) + "\n")


if __name__ == "__main__":
    main()
