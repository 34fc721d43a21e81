"""The step's serial tail: the share of a training step's wall time outside its rollout and its update, before
and after issue 48 (learner state at the checkpoint cadence, the sync check every `sync_check_every` steps, the
sync overlapped with the next rollout under the pipeline), side by side in one run.

Each row is one `aac.train` run of the demo recipe (smollm2_cpu, its pieces in Ray actors as `make demo` runs
them, no time budget) in a child process, of the code at `--before` (a git revision, extracted read-only with `git archive`) or of this
tree, alternating so that both see the same machine. Per step:
- wall: from one step's start to the next one's (the checkpoint and the metrics' writing included);
- rollout: what the driver waited for the rollout (`time/rollout_s` + `time/rollout_ahead_wait_s`);
- update: the learner's update alone (`time/update_s`, less the learner-state saves made inside it, which the
  code before issue 48 ran there every step);
- tail: the rest (adapter sync and its check, state and checkpoint writes, metrics, the episode log).
Steps 2.. are averaged (step 1 holds first-call warm-ups and is checked in both).

    python benchmarks/bench_tail.py --before f4849b0 --steps 5
    python benchmarks/bench_tail.py --before f4849b0 --steps 5 --pipeline   # also rollout.max_off_policy_steps=1
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUN = ("time_budget_s=null", "logging.progress=false", "logging.wandb_mode=disabled")


def child(out: Path, overrides: list[str]) -> None:
    """One run in this process, with `aac` from PYTHONPATH (either tree): step starts and state saves timed."""
    import logging

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    from aac.config import compose
    from aac.training import Trainer
    from aac.training.state import LearnerStates

    marks: list[tuple[float, float]] = []  # each train_step's (start, end)
    commits: list[tuple[float, float]] = []  # each learner-state save's (start, seconds)
    train_step, commit = Trainer.train_step, LearnerStates.commit

    def timed_step(self):
        t0 = time.perf_counter()
        try:
            return train_step(self)
        finally:
            marks.append((t0, time.perf_counter()))

    def timed_commit(self, *args, **kwargs):
        t0 = time.perf_counter()
        try:
            return commit(self, *args, **kwargs)
        finally:
            commits.append((t0, time.perf_counter() - t0))

    Trainer.train_step, LearnerStates.commit = timed_step, timed_commit
    trainer = Trainer(compose(*RUN, *overrides), out)
    try:
        trainer.run()
        end = time.perf_counter()
    finally:
        trainer.close()
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    steps = []
    for i, ((start, stop), row) in enumerate(zip(marks, rows)):
        nxt = marks[i + 1][0] if i + 1 < len(marks) else end
        inside = sum(s for t, s in commits if start <= t < stop)  # a save inside train_step: the update's
        rollout = row["time/rollout_s"] + row.get("time/rollout_ahead_wait_s", 0.0)
        update = row["time/update_s"] - inside
        steps.append({"wall": nxt - start, "rollout": rollout, "update": update,
                      "state_saves": sum(s for t, s in commits if start <= t < nxt),
                      "sync": row.get("time/sync_s", 0.0), "sync_check": row.get("time/sync_check_s", 0.0)})
    (out / "tail.json").write_text(json.dumps(steps))


def _tree(rev: str, into: Path) -> Path:
    """The code at `rev`, extracted (nothing in the repository changes)."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev], check=True, capture_output=True).stdout
    with tempfile.TemporaryFile() as f:
        f.write(archive)
        f.seek(0)
        tarfile.open(fileobj=f).extractall(into, filter="fully_trusted")
    return into


def _run(tree: Path, overrides: list[str], work: Path, name: str) -> list[dict]:
    out = work / name
    env = dict(os.environ, PYTHONPATH=str(tree))
    t0 = time.perf_counter()
    # run from the tree: Ray's actors import `aac` from the driver's working directory
    subprocess.run([sys.executable, __file__, "--child", str(out), *overrides], env=env, check=True, cwd=tree,
                   stdout=subprocess.DEVNULL, stderr=open(work / f"{name}.log", "w"))
    print(f"  {name}: {time.perf_counter() - t0:.0f}s", flush=True)
    return json.loads((out / "tail.json").read_text())


def _row(name: str, steps: list[dict]) -> str:
    later = steps[1:] or steps
    mean = {k: statistics.mean(s[k] for s in later) for k in later[0]}
    tail = mean["wall"] - mean["rollout"] - mean["update"]
    return (f"| {name} | {mean['wall']:.1f} | {mean['rollout']:.1f} | {mean['update']:.1f} | {tail:.1f} | "
            f"{tail / mean['wall']:.0%} | {mean['sync']:.2f} | {mean['sync_check']:.2f} | {mean['state_saves']:.2f} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", help="git revision of the code before (default: HEAD~1)", default="HEAD~1")
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--recipe", default="smollm2_cpu", help="the recipe run (tiny: a quick check of the script)")
    ap.add_argument("--pipeline", action="store_true", help="also compare rollout.max_off_policy_steps=1")
    ap.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    a, overrides = ap.parse_known_args()
    if a.child:
        return child(a.child, overrides)
    from aac.cpu_speed import per_core_gflops, speed_line

    print(speed_line(per_core_gflops(10)), flush=True)
    work = Path(tempfile.mkdtemp(prefix="bench-tail-"))
    before = _tree(a.before, work / "before")
    base = [f"+recipe={a.recipe}", f"max_steps={a.steps}", *overrides]
    modes = [("lockstep", [])] + ([("pipeline", ["rollout.max_off_policy_steps=1"])] if a.pipeline else [])
    table = []
    for mode, extra in modes:
        for name, tree in ((f"before {a.before}", before), ("after", ROOT)):
            steps = _run(tree, [*base, *extra], work, f"{mode}-{name.split()[0]}")
            table.append(_row(f"{mode}, {name}", steps))
    print(f"load after {os.getloadavg()[0]:.1f}; runs in {work}")
    print("| run | step s | rollout s | update s | tail s | tail share | sync s | sync check s | state saves s |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    print("\n".join(table))


if __name__ == "__main__":
    main()
