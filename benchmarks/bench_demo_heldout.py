"""What the tuned adapters of `bench_demo_learning.py` do on held-out functions, beside their base (issue 31).

The training-time measurement reads 4 episodes of one function a step, so a 3-seed mean moves by ±0.15-0.19
under no learning. Here each seed's last checkpoint and the base model (the zero-advantage control's policy:
the control never updates) play every function of the held-out split --repeats times, sampled at the
training temperature (1.0; greedy, both make one call and stop on nearly every function) and under the
training protocol (`aac.eval checkpoint=`/`protocol_from=`: prompts, per-phase caps, stop strings,
`eval.max_calls` = the run's 4 cycles). Per function: the tuned seeds' mean minus the base's mean, so which
function is hard cancels; the table gives the mean over functions and a 95% bootstrap interval over them.

Behaviour only, from the episodes (the plays are not scored: no judge): input and reflect format errors (share of the phase's turns whose reply did
not parse, as training's `parse_fail/*_rate`), failed calls (share of parsed inputs whose call raised or timed
out), queries, distinct inputs and informative calls per episode (counted here by the current rule,
aac/eval/informative.py: new branch arcs or a new result from a call that returned), concluded %, premature
stops (a YES before any informative call: the recipe's critic, `scripted_rule=coverage` at `scripted_k=1`, pays
it as premature), and whether the stop reads the call: the YES rate right after a call that returned beside
the rate right after one that raised (fewer premature stops from stopping less everywhere shows as both falling).
`--tabulate` reads the plays already in OUT/heldout.

    python benchmarks/bench_demo_heldout.py runs/demo_learning --repeats 3
"""

from __future__ import annotations

import argparse
import json
import logging
import time
from pathlib import Path

import numpy as np

METRICS = {
    "input_errors": "input format errors (share of input turns)",
    "failed_calls": "failed calls (share of parsed inputs)",
    "reflect_errors": "reflect format errors (share of reflect turns)",
    "queries": "queries / episode",
    "distinct_inputs": "distinct inputs / episode",
    "informative": "informative calls / episode",
    "concluded": "concluded (share of episodes)",
    "premature_stops": "premature stops: YES before an informative call (share of episodes)",
    "yes_after_returned": "YES right after a call that returned (share of those reflect turns)",
    "yes_after_failed": "YES right after a call that raised (share of those reflect turns)",
}


def call_returned(call: dict | None) -> bool:
    """Whether a parsed input's call returned a result (it did not raise or time out)."""
    return call is not None and call["kind"] == "ok"


def yes_after(steps: list[dict], returned: bool) -> float | None:
    """The share of decided reflect turns right after a call that returned (`returned`) or raised that said YES:
    a stop learned from what the call showed says YES more often after the first. None without such a turn."""
    said = [s["decision"] is True for prev, s in zip(steps, steps[1:])
            if s["phase"] == "reflect" and s["parse_ok"] and prev["phase"] == "input" and prev["parse_ok"]
            and call_returned(prev["call"]) == returned]
    return float(np.mean(said)) if said else None


def play(run: Path, tuned: bool, repeat: int, out: Path) -> None:
    """One sampled `aac.eval` of `run`'s checkpoint (or of its base under its protocol), resumable."""
    from aac.cli import rewrite_aliases
    from aac.config import compose
    from aac.eval.harness import evaluate

    which = f"checkpoint={run}" if tuned else f"protocol_from={run}"
    overrides = rewrite_aliases([which, "eval.max_calls=4", "eval.temperature=1.0", "eval.score=false",
                                 f"seed={repeat}", f"out_dir={out}", f"name={out.name}"])
    evaluate(compose(*overrides, config_name="eval_config"), overrides=overrides)


def episode_row(ep: dict, informative: int) -> dict:
    """The behaviour of one held-out episode."""
    steps = ep["steps"]
    inputs = [s for s in steps if s["phase"] == "input"]
    reflects = [s for s in steps if s["phase"] == "reflect"]
    calls = [s["call"] for s in inputs if s["parse_ok"]]
    return {"input_errors": float(np.mean([not s["parse_ok"] for s in inputs])) if inputs else None,
            "failed_calls": float(np.mean([not call_returned(c) for c in calls])) if calls else None,
            "reflect_errors": float(np.mean([not s["parse_ok"] for s in reflects])) if reflects else None,
            "queries": ep["num_queries"], "distinct_inputs": len({s["parsed"] for s in inputs if s["parse_ok"]}),
            "informative": informative, "concluded": float(ep["concluded"]),
            "premature_stops": float(ep["concluded"] and not informative),
            "yes_after_returned": yes_after(steps, True), "yes_after_failed": yes_after(steps, False)}


def read_episodes(d: Path, instances: dict, coverage) -> dict[str, list[dict]]:
    """uid -> its episodes' behaviour rows."""
    from aac.eval.informative import count_informative

    rows: dict[str, list[dict]] = {}
    for line in (d / "episodes.jsonl").read_text().splitlines():
        ep = json.loads(line)
        rows.setdefault(ep["uid"], []).append(episode_row(ep, count_informative(ep, instances[ep["uid"]], coverage)))
    return rows


def per_function(runs: list[dict[str, list[dict]]], key: str) -> dict[str, float]:
    """uid -> the mean of `key` over every episode of `runs` on it (None values left out)."""
    pooled: dict[str, list[float]] = {}
    for rows in runs:
        for uid, eps in rows.items():
            pooled.setdefault(uid, []).extend(e[key] for e in eps if e[key] is not None)
    return {u: float(np.mean(v)) for u, v in pooled.items() if v}


def paired(base: dict[str, float], tuned: dict[str, float]) -> tuple[float, float, float, int]:
    """Mean over common functions of tuned - base, its 95% bootstrap interval over functions, and their number."""
    from aac.eval.stats import paired_interval

    common = sorted(set(base) & set(tuned))
    return (*paired_interval([tuned[u] for u in common], [base[u] for u in common]), len(common))


def table(base: list[dict], tuned: dict[int, list[dict]]) -> str:
    n_base = sum(len(v) for r in base for v in r.values())
    n_tuned = sum(len(v) for runs in tuned.values() for r in runs for v in r.values())
    lines = [f"held-out split, sampled (T=1): base {n_base} episodes, tuned {n_tuned} ({len(tuned)} seeds)", "",
             "| metric | base | tuned | tuned - base, paired by function [95% CI] | per seed |", "|---|---:|---:|---|---|"]
    for key, label in METRICS.items():
        b = per_function(base, key)
        t = per_function([r for runs in tuned.values() for r in runs], key)
        mean, lo, hi, n = paired(b, t)
        seeds = ", ".join(f"{paired(b, per_function(runs, key))[0]:+.2f}" for runs in tuned.values())
        lines.append(f"| {label} | {np.mean([b[u] for u in t if u in b]):.2f} | {np.mean([t[u] for u in b if u in t]):.2f} "
                     f"| **{mean:+.2f}** [{lo:+.2f}, {hi:+.2f}] over {n} functions | {seeds} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path, help="a bench_demo_learning.py --out (its aac_seed* runs)")
    ap.add_argument("--repeats", type=int, default=3, help="sampled plays of the split per policy")
    ap.add_argument("--tabulate", action="store_true", help="no plays: table the plays in OUT/heldout")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    seeds = sorted(int(d.name.removeprefix("aac_seed")) for d in args.out.glob("aac_seed*")
                   if (d / "checkpoints" / "latest").exists())
    if not seeds:
        raise SystemExit(f"no finished aac_seed* run with a checkpoint in {args.out}")
    started = time.perf_counter()
    heldout = args.out / "heldout"
    from omegaconf import OmegaConf

    from aac.critic.coverage import CoverageInformativeness
    from aac.datasets import load_instances
    from aac.env.protocol import sandbox_caller
    from aac.run_dir import config_file

    data = OmegaConf.load(config_file(args.out / f"aac_seed{seeds[0]}")).env.data  # the eval's default data
    instances = {i.uid: i for i in load_instances(data, split="test")}
    coverage = CoverageInformativeness(sandbox_caller(None))

    def read_run(d: Path) -> dict[str, list[dict]]:
        return read_episodes(d, instances, coverage)

    # the base under the first seed's protocol: every seed's run has the same protocol
    plays = {(None, r): (args.out / f"aac_seed{seeds[0]}", heldout / f"base_r{r}") for r in range(args.repeats)}
    plays |= {(s, r): (args.out / f"aac_seed{s}", heldout / f"tuned_seed{s}_r{r}") for s in seeds
              for r in range(args.repeats)}
    if not args.tabulate:
        for (seed, r), (run, out) in plays.items():
            play(run, seed is not None, r, out)
    base = [read_run(plays[None, r][1]) for r in range(args.repeats)]
    tuned = {s: [read_run(plays[s, r][1]) for r in range(args.repeats)] for s in seeds}
    coverage.close()
    text = table(base, tuned) + f"\n\n{time.perf_counter() - started:.0f} s (finished plays are not redone)"
    (heldout / "table.md").write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
