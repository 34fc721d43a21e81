"""CPU seconds per process and phase of a training run (`make demo` by default), robust to machine load.

Runs `python -m aac.train ARGS...` as a child, samples every process of its tree once a second
(user+sys CPU, RSS summed, which counts shared pages twice; its role from the command line), and tails the
run's metrics.jsonl. At the end it prints, per step, each phase's wall seconds (from the run's own
timers) and the CPU seconds each role spent inside that phase's window: an engine that burns CPU
while the learner updates shows up as engine CPU in the update column.

    python benchmarks/demo_cpu.py --out /tmp/demo_cpu -- out_dir=/tmp/demo_cpu/run max_steps=3
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import psutil

ROLES = (("EngineHost", "engine"), ("VLLM::EngineCore", "enginecore"), ("VLLM::Worker", "vllm_worker"), ("Learner", "learner"),
         ("RolloutWorker", "worker"), ("raylet", "raylet"), ("gcs_server", "gcs"), ("aac.train", "driver"),
         ("_worker.py", "sandbox"))


def role(proc: psutil.Process) -> str:
    try:
        cmd = " ".join(proc.cmdline()) or proc.name()
    except psutil.Error:
        return "gone"
    return next((r for key, r in ROLES if key in cmd), "other")


def snapshot(root: psutil.Process) -> dict[int, tuple[str, float, float]]:
    """pid -> (role, cumulative user+sys CPU s, RSS GB) of the root and all its descendants."""
    out = {}
    for p in [root, *root.children(recursive=True)]:
        try:
            t = p.cpu_times()
            out[p.pid] = (role(p), t.user + t.system + t.children_user + t.children_system,
                          p.memory_info().rss / 2**30)
        except psutil.Error:
            continue
    return out


def by_role(snap: dict, pids_seen: dict) -> dict[str, float]:
    tot: dict[str, float] = {}
    for pid, (r, cpu, _) in snap.items():
        r = pids_seen.setdefault(pid, r) if r != "gone" else pids_seen.get(pid, r)
        tot[r] = tot.get(r, 0.0) + cpu
    return tot


def window(samples: list, t0: float, t1: float) -> dict[str, float]:
    """CPU seconds per role spent in [t0, t1] (cumulative counters interpolated at the nearest samples;
    a process born in the window counts from zero)."""
    def at(t: float) -> dict[int, float]:
        best = min(samples, key=lambda s: abs(s[0] - t))
        return {pid: cpu for pid, (_, cpu, _) in best[1].items()}
    a, b = at(t0), at(t1)
    roles = {pid: r for _, snap in samples for pid, (r, _, _) in snap.items() if r != "gone"}
    out: dict[str, float] = {}
    for pid, cpu in b.items():
        out[roles.get(pid, "other")] = out.get(roles.get(pid, "other"), 0.0) + cpu - a.get(pid, 0.0)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="folder for the samples and the table")
    ap.add_argument("train_args", nargs="*", help="overrides for aac.train (after --)")
    a = ap.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    run_dir = next((Path(x.split("=", 1)[1]) for x in a.train_args if x.startswith("out_dir=")), out / "run")
    args = [x for x in a.train_args if not x.startswith("out_dir=")] + [f"out_dir={run_dir}"]
    metrics = run_dir / "metrics.jsonl"
    started = time.time()
    log = open(out / "train.log", "w")
    child = subprocess.Popen([sys.executable, "-m", "aac.train", *args], stdout=log, stderr=subprocess.STDOUT)
    root = psutil.Process(child.pid)
    samples: list = []  # (wall t, snapshot)
    steps: list = []  # (wall t of the metrics row, row)
    peak_rss = 0.0
    while child.poll() is None:
        snap = snapshot(root)
        samples.append((time.time(), snap))
        peak_rss = max(peak_rss, sum(rss for _, _, rss in snap.values()))
        if metrics.exists():
            rows = metrics.read_text().splitlines()
            for line in rows[len(steps):]:
                steps.append((time.time(), json.loads(line)))
        time.sleep(1.0)
    total = time.time() - started
    if metrics.exists():
        for line in metrics.read_text().splitlines()[len(steps):]:
            steps.append((time.time(), json.loads(line)))
    rows = []
    first_step_start = None
    for t_end, m in steps:
        sync, upd, roll = m.get("time/sync_s", 0.0), m["time/update_s"], m["time/rollout_s"]
        u1 = t_end - sync
        u0 = u1 - upd
        r0 = u0 - roll  # the probe's learner log-probs sit between rollout and update (~0.1 s)
        first_step_start = first_step_start or r0
        rows.append({"step": m["step"], "rollout_s": roll, "generation_s": m.get("time/generation_s"),
                     "critic_s": m.get("time/critic_s"), "update_s": upd, "sync_s": sync,
                     "cpu_rollout": window(samples, r0, u0), "cpu_update": window(samples, u0, u1),
                     "cpu_sync": window(samples, u1, t_end),
                     "generated_tokens": m.get("rollout/generated_tokens"),
                     "queries": m.get("episode/queries_mean"), "concluded": m.get("episode/concluded_pct")})
    cpu_total: dict[str, float] = {}  # each process's last reading (the tree is gone by the last sample)
    last = {pid: (r, cpu) for _, snap in samples for pid, (r, cpu, _) in snap.items() if r != "gone"}
    for r, cpu in last.values():
        cpu_total[r] = cpu_total.get(r, 0.0) + cpu
    summary = {"wall_s": total, "rc": child.returncode, "startup_s": (first_step_start or time.time()) - started,
               "peak_rss_gb": peak_rss, "cpu_total": cpu_total, "steps": rows}
    (out / "cpu.json").write_text(json.dumps(summary, indent=1))
    print(f"rc {child.returncode}; wall {total:.0f} s; start-up to step 1's rollout {summary['startup_s']:.0f} s; "
          f"peak RSS of the tree {peak_rss:.1f} GB")
    keys = ("engine", "enginecore", "vllm_worker", "learner", "worker", "driver", "raylet", "other")
    print("step | rollout s (gen/critic) | update s | sync s | CPU s in rollout: " + "/".join(keys)
          + " | CPU s in update: same")
    for r in rows:
        cr = "/".join(f"{r['cpu_rollout'].get(k, 0):.0f}" for k in keys)
        cu = "/".join(f"{r['cpu_update'].get(k, 0):.0f}" for k in keys)
        print(f"{r['step']} | {r['rollout_s']:.1f} ({r['generation_s'] or 0:.1f}/{r['critic_s'] or 0:.1f}) | "
              f"{r['update_s']:.1f} | {r['sync_s']:.1f} | {cr} | {cu}")
    print("whole run CPU s by role:", {k: round(v) for k, v in sorted(summary["cpu_total"].items())})


if __name__ == "__main__":
    main()
