"""Does the embedded default learn what it can verify? (issue 31)

The `smollm2_cpu` recipe (what `make demo` trains) for --steps steps over --seeds seeds, each seed
beside a zero-advantage control: the same seed, data order and sampling seeds, every advantage 0. The
control's update is skipped: with no advantage the loss is the KL to the base model, which is 0 with a
zero gradient while the LoRA's B is 0, so the update would leave the policy the base model exactly (step 1
of both arms is the same batch). The control is the drift: which functions come up, and sampling noise.

Logged per step, beside the run's own metrics: input format errors (`parse_fail/input_rate`: input turns whose
reply held no parsable input), reflect format errors, informative calls per episode (calls the coverage critic
scores above 0: new branch arcs or a new result; aac/eval/informative.py, the rule the recipe's plans are paid
by), queries per episode, concluded %, premature stops %, wall seconds and the machine's load. Each run is its
own process (Ray, two vLLM engines, the DeepSpeed learner, as `make demo`); runs go one at a time (--jobs:
more only on a machine with cores to spare). `--tabulate` tables and plots what is in --out (runs cut short
included): per seed and arm, the mean of the first --window steps and of the last --window steps, and the
tuned arm's change minus the control's; over the seeds, the last window's tuned - control paired by step (both
arms meet the same function at each step) with a bootstrap interval.

    nice -n 10 python benchmarks/bench_demo_learning.py --steps 48 --seeds 3 --window 12 --out runs/demo_learning
"""

from __future__ import annotations

import argparse
import json
import logging
import multiprocessing
import os
import time
from pathlib import Path

import numpy as np

ARMS = ("aac", "control")
FAILED_INPUTS = "input/failed_rate"  # derived from reward/input_mean (`with_failed_inputs`)
METRICS = {  # what is tabled and plotted: metric key -> label
    "parse_fail/input_rate": "input format errors (share of input turns)",
    FAILED_INPUTS: "failed inputs (no parse, or the call raised; share of input turns)",
    "parse_fail/reflect_rate": "reflect format errors (share of reflect turns)",
    "calls/informative_per_episode": "informative calls per episode",
    "episode/queries_mean": "queries per episode",
    "episode/concluded_pct": "concluded %",
    "episode/premature_stop_pct": "premature stops % (by the critic's score; NaN when it is masked)",
    "reward/episode_total_mean": "episode return",
}
LOG_FORMAT = "%(asctime)s %(name)s %(message)s"


def run_one(job: tuple[list[str], Path, bool]) -> list[dict]:
    """One training run (`control`: zero advantages, no update); returns its metrics.jsonl rows."""
    overrides, out, control = job
    logging.basicConfig(level=logging.INFO, format=LOG_FORMAT)  # a spawned process starts unconfigured
    from aac.config import compose
    from aac.eval.informative import count_informative
    from aac.training import Trainer
    from aac.training.state import LearnerStates

    class Frozen(LearnerStates):
        """The control's learner states: no update (see the module docstring); a version passes, the weights stay."""

        def update(self, learner, samples):
            self.updates.append([])
            return {}

        def restore(self, learner):
            learner.load_state(str(self.path(self.saved)))

    class Measured(Trainer):
        def __init__(self, cfg, out_dir):
            super().__init__(cfg, out_dir)
            self.by_uid = {i.uid: i for i in self.instances}
            if control:
                frozen = Frozen(self.states.root)
                frozen.saved = self.states.saved  # the state the start committed
                self.states = frozen

        def advantages(self, batch):
            self.last = batch
            if control:
                return [[0.0] * len(ep.turns) for ep in batch.episodes]
            return super().advantages(batch)

        def train_step(self):
            t0 = time.perf_counter()
            m = super().train_step()
            coverage = self.pieces.informative_calls()
            counts = [count_informative(ep.record, self.by_uid[ep.uid], coverage) for ep in self.last.episodes]
            m["calls/informative_per_episode"] = float(np.mean(counts))
            m["time/step_s"] = time.perf_counter() - t0
            m["machine/load1"] = os.getloadavg()[0]
            return m

    from bench_behaviour import train_and_read

    cfg = compose("+recipe=smollm2_cpu", *overrides)  # the Trainer saves it in out (config.yaml, aac/run_dir.py)
    return train_and_read(Measured(cfg, out), out)


def with_failed_inputs(rows: list[dict], cfg) -> list[dict]:
    """Each row with the share of input turns that failed (no parse, or a call that raised or timed out). An input
    turn's reward is -p_parse if it failed, else lambda_h / (2 T_max): the recipe's 24-token inputs are far below
    tau_input's 30 words, so no length term, and the mean reward gives the share exactly (runs logged before it
    was a metric included)."""
    ok = cfg.lambda_h / (2 * cfg.t_max)
    return [{**r, FAILED_INPUTS: (ok - r["reward/input_mean"]) / (ok + cfg.p_parse)}
            if r.get("reward/input_mean") is not None else r for r in rows]


def _window_mean(rows: list[dict], key: str, part: slice) -> float:
    vals = [r[key] for r in rows[part] if r.get(key) is not None]
    return float(np.mean(vals)) if vals else float("nan")


def paired_by_step(results: dict[str, dict[int, list[dict]]], key: str, part: slice) -> tuple[float, ...]:
    """Tuned - control over the (seed, step) pairs of `part`, a 95% bootstrap interval over them, and their number.
    Both arms of a seed see the same function at each step, so which function came up cancels (steps within a
    seed are treated as independent: the interval is an approximation)."""
    from aac.eval.stats import paired_interval

    pairs = [(a[key], c[key]) for seed in sorted(results["aac"])
             for a, c in zip(results["aac"][seed][part], results["control"][seed][part])
             if a.get(key) is not None and c.get(key) is not None and np.isfinite([a[key], c[key]]).all()]
    if not pairs:
        return (float("nan"),) * 3 + (0,)
    return (*paired_interval([a for a, _ in pairs], [c for _, c in pairs]), len(pairs))


def summarize(results: dict[str, dict[int, list[dict]]], window: int) -> dict:
    """Per metric and seed: first / last window means of each arm, and the tuned change minus the control's; over
    the seeds, the last window's tuned - control paired by step."""
    out: dict = {}
    first, last = slice(0, window), slice(-window, None)
    for key in METRICS:
        per_seed = {}
        for seed in sorted(results["aac"]):
            arms = {arm: results[arm][seed] for arm in ARMS}
            row = {arm: (_window_mean(rows, key, first), _window_mean(rows, key, last)) for arm, rows in arms.items()}
            row["effect"] = (row["aac"][1] - row["aac"][0]) - (row["control"][1] - row["control"][0])
            per_seed[seed] = row
        out[key] = {"seeds": per_seed, "last_paired": paired_by_step(results, key, last)}
    return out


def render(summary: dict, window: int, steps: int) -> str:
    lines = [f"Per seed: mean of steps 1-{window} -> mean of steps {steps - window + 1}-{steps}, tuned and "
             "control; effect = tuned change - control change", ""]
    for key, label in METRICS.items():
        lines.append(f"{label}")
        for seed, row in summary[key]["seeds"].items():
            a, c = row["aac"], row["control"]
            lines.append(f"  seed {seed}: tuned {a[0]:6.2f} -> {a[1]:6.2f}   control {c[0]:6.2f} -> {c[1]:6.2f}   "
                         f"effect {row['effect']:+6.2f}")
        effects = [row["effect"] for row in summary[key]["seeds"].values()]
        mean, lo, hi, n = summary[key]["last_paired"]
        lines.append(f"  mean effect over {len(effects)} seeds {np.mean(effects):+6.2f}; steps {steps - window + 1}-{steps}, "
                     f"tuned - control paired by step {mean:+.2f} [{lo:+.2f}, {hi:+.2f}] over {n} pairs")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--window", type=int, default=3, help="steps averaged at the start and at the end")
    ap.add_argument("--jobs", type=int, default=1, help="runs in parallel (each uses every core while it works)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="an extra config override for every run (repeatable)")
    ap.add_argument("--out", type=Path, default=Path("runs/demo_learning"))
    ap.add_argument("--no-control", action="store_true",
                    help="tuned runs only, to compare on held-out functions with bench_demo_heldout.py (no table here)")
    ap.add_argument("--tabulate", action="store_true", help="no training: table and plot the runs in --out")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format=LOG_FORMAT)
    # every step of every run: the recipe's time budget is the demo's, not this measurement's
    common = [f"max_steps={args.steps}", f"save_every={args.steps}", "time_budget_s=null", "logging.progress=false",
              "logging.wandb_mode=disabled", *args.set]
    # seed by seed, the tuned run then its control: a run cut short still leaves whole pairs
    jobs = [(seed, arm) for seed in range(args.seeds) for arm in ARMS]
    dirs = [args.out / f"{arm}_seed{seed}" for seed, arm in jobs]
    started = time.perf_counter()
    from aac.metrics import read

    if not args.tabulate:
        # a finished run is not redone: the control does not depend on the learner's settings, so another
        # lr's --out can start with an earlier --out's control folders copied in
        todo = [(job, d) for job, d in zip(jobs, dirs) if len(read(d / "metrics.jsonl")) < args.steps]
        with multiprocessing.get_context("spawn").Pool(args.jobs, maxtasksperchild=1) as pool:
            pool.map(run_one, [([*common, f"seed={seed}", f"out_dir={d}"], d, arm == "control")
                               for (seed, arm), d in todo if not (args.no_control and arm == "control")], chunksize=1)
    if args.no_control:
        raise SystemExit(f"tuned runs in {args.out}: python benchmarks/bench_demo_heldout.py {args.out}")
    from aac.config import compose

    rewards = compose("+recipe=smollm2_cpu", *args.set).rewards
    done = [with_failed_inputs(read(d / "metrics.jsonl"), rewards) for d in dirs]
    pairs = [seed for seed in range(args.seeds) if all(done[jobs.index((seed, arm))] for arm in ARMS)]
    steps = min(len(done[jobs.index((seed, arm))]) for seed in pairs for arm in ARMS) if pairs else 0
    if steps < 2 * args.window:
        raise SystemExit(f"{len(pairs)} whole pairs, {steps} common steps in {args.out}: too few to table")
    results = {arm: {seed: done[jobs.index((seed, arm))][:steps] for seed in pairs} for arm in ARMS}
    summary = summarize(results, args.window)
    text = render(summary, args.window, steps)
    loads = [r["machine/load1"] for runs in results.values() for rows in runs.values() for r in rows
             if r.get("machine/load1") is not None]
    step_s = {arm: [r["time/step_s"] for rows in runs.values() for r in rows if r.get("time/step_s")]
              for arm, runs in results.items()}
    text += (f"\n\nload (1 min) {min(loads):.1f}-{max(loads):.1f}, median {np.median(loads):.1f}; seconds a step: "
             + ", ".join(f"{arm} median {np.median(v):.0f}" for arm, v in step_s.items() if v))
    if not args.tabulate:
        text += f"; total {time.perf_counter() - started:.0f} s"
    text += f"\noverrides: {' '.join(common)}"
    print(text)
    kept = (*METRICS, "time/step_s", "machine/load1")
    curves = {arm: {seed: [{k: r.get(k) for k in kept} for r in rows] for seed, rows in runs.items()}
              for arm, runs in results.items()}
    (args.out / "summary.json").write_text(json.dumps({"steps": steps, "window": args.window, "summary": summary,
                                                       "rows": curves}, indent=1))
    from bench_behaviour import plot  # the same panels: mean over seeds and the min-max band

    plot({f"{arm} ({len(runs)} seeds)": runs for arm, runs in results.items()}, args.out / "demo_learning.png",
         METRICS, (2, 4))
    print(f"wrote {args.out / 'summary.json'} and {args.out / 'demo_learning.png'}")


if __name__ == "__main__":
    main()
