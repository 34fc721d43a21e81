"""Does the privileged critic help? The paper's ablation at embedded scale (issue 50).

Arms on `+recipe=smollm2_cpu` (what `make demo` trains), each trained --steps steps per seed, then played on
the held-out split beside the untrained base:
- `aac`: the recipe as it is: the scripted privileged critic (a call is informative when it reaches new
  branch arcs of the source or returns a new result; the stop is verified in the sandbox);
- `aac_mutants`: the same schedule judged by the mutants critic (`critic.kind=mutants`);
- `sym_info`: the critic without the privileged side (`critic.mode=symmetric`: a call is informative only when
  its result is new), the paper's SYM-INFO; the recipe's schedule (`aac_potential`) kept, so the critic's
  privileged side is the only difference (`rewards=sym_info` would also switch to the paper's table);
- `final`: the outcome reward only, broadcast (`rewards.schedule=final`, `rewards.advantage=final`: what
  `rewards=final` sets), the paper's FINAL; the late-stop charge reads every reflect turn's score, so it goes;
- `base`: the untrained model under the same protocol.

Every (arm, seed) is its own training process, then --repeats sampled plays (T=1) of every held-out function
(`aac.eval checkpoint=`, the training protocol; bench_demo_heldout.py's `play`). What is kept, per run, in
`benchmarks/ablation/ARM_seedS.json` (committed: a later session goes on from what is there): the overrides, the
training curve's verifiable metrics, and each held-out episode's behaviour with its queries, from which the
table recomputes what it needs. Adapters and episodes stay in --work. Runs go one at a time, seed by seed, so a
sweep cut short leaves whole seeds; a finished run is not redone.

    nice -n 10 python benchmarks/ablation.py run --steps 32 --seeds 0,1,2 --arms aac,final
    python benchmarks/ablation.py table          # benchmarks/ablation/table.md and ablation.png
    python benchmarks/ablation.py rescore --work runs/ablation   # a metric added later, from the kept plays
"""

from __future__ import annotations

import argparse
import json
import logging
import multiprocessing
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "ablation"
sys.path.insert(0, str(HERE))

ARMS: dict[str, list[str]] = {
    "aac": [],
    "aac_mutants": ["critic.kind=mutants"],
    "sym_info": ["critic.mode=symmetric"],
    "final": ["rewards.schedule=final", "rewards.advantage=final", "rewards.late_stop_penalty=0"],
}
BASE = "base"
# the training curve's verifiable metrics kept per step (bench_demo_learning.py's run adds informative calls)
CURVE = ("parse_fail/input_rate", "parse_fail/reflect_rate", "calls/informative_per_episode", "episode/queries_mean",
         "episode/concluded_pct", "reward/input_mean", "time/step_s", "machine/load1")
LOG_FORMAT = "%(asctime)s %(name)s %(message)s"


def _spawned(fn, *args) -> None:
    """`fn(*args)` in a fresh process (each run starts its own Ray, engines and learner, and frees them)."""
    ctx = multiprocessing.get_context("spawn")
    p = ctx.Process(target=fn, args=args)
    p.start()
    p.join()
    if p.exitcode:
        raise RuntimeError(f"{fn.__name__}{args} exited {p.exitcode}")


def _train(arm: str, seed: int, steps: int, run: Path) -> None:
    from bench_demo_learning import run_one

    run_one(([*ARMS[arm], f"max_steps={steps}", f"save_every={steps}", "time_budget_s=null", "logging.progress=false",
              "logging.wandb_mode=disabled", f"seed={seed}", f"out_dir={run}"], run, False))


def _play(run: Path, tuned: bool, repeat: int, out: Path) -> None:
    logging.basicConfig(level=logging.INFO, format=LOG_FORMAT)
    from bench_demo_heldout import play

    play(run, tuned, repeat, out)


def heldout_rows(play_dir: Path, repeat: int, run: Path) -> list[dict]:
    """Each held-out episode of one play of `run`'s protocol: its behaviour (bench_demo_heldout.py's row), its
    call inputs and the share of its row's mutants they killed (None for a row without mutants)."""
    from bench_demo_heldout import episode_row
    from omegaconf import OmegaConf

    from aac.critic.coverage import CoverageInformativeness
    from aac.data.mutants import KillRunner
    from aac.datasets import load_instances
    from aac.env.protocol import sandbox_caller
    from aac.eval.informative import count_informative
    from aac.eval.query_efficiency import query_efficiency, record_queries

    data = OmegaConf.load(run / "config.yaml").env.data  # the eval's default data: the run's test split
    instances = {i.uid: i for i in load_instances(data, split="test")}
    coverage, runner = CoverageInformativeness(sandbox_caller(None)), KillRunner(sandbox_caller(None), timeout_s=2.0)
    rows = []
    try:
        for line in (play_dir / "episodes.jsonl").read_text().splitlines():
            ep = json.loads(line)
            inst, inputs = instances[ep["uid"]], record_queries(ep)
            eff = query_efficiency(inputs, inst, runner)
            rows.append({"uid": ep["uid"], "repeat": repeat, "inputs": inputs,
                         **episode_row(ep, count_informative(ep, inst, coverage)),
                         "mutants_killed": None if eff is None else (eff["killed"] or [0.0])[-1]})
    finally:
        coverage.close()
        runner.close()
    return rows


def _commit() -> str:
    return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=HERE, capture_output=True, text=True).stdout.strip()


def wait_while_paused(work: Path) -> None:
    """Between runs, wait while WORK/PAUSE exists: a quiet machine for a measurement, without losing a run."""
    while (work / "PAUSE").exists():
        time.sleep(10)


def run_arm(arm: str, seed: int, steps: int, repeats: int, work: Path, protocol_run: Path | None) -> Path:
    """Train (unless `arm` is the base), play the held-out split `repeats` times, write the result file."""
    from aac.metrics import read

    started = time.perf_counter()
    name = BASE if arm == BASE else f"{arm}_seed{seed}"
    run = work / name
    record: dict = {"arm": arm, "commit": _commit(), "repeats": repeats, "load1_start": os.getloadavg()[0]}
    if arm != BASE:
        if len(read(run / "metrics.jsonl")) < steps or not (run / "checkpoints" / "latest").exists():
            logging.info("ablation: training %s (%d steps)", name, steps)
            _spawned(_train, arm, seed, steps, run)
        rows = read(run / "metrics.jsonl")[:steps]
        record |= {"seed": seed, "steps": steps, "overrides": ARMS[arm],
                   "curve": [{k: r.get(k) for k in CURVE} for r in rows]}
    plays, protocol = [], run if arm != BASE else protocol_run
    for r in range(repeats):
        out = run / f"heldout_r{r}"
        if not (out / "episodes.jsonl").exists():
            logging.info("ablation: %s plays the held-out split (repeat %d)", name, r)
            _spawned(_play, protocol, arm != BASE, r, out)
        plays += heldout_rows(out, r, protocol)
    record |= {"heldout": plays, "seconds": time.perf_counter() - started}
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(record, indent=0))
    return path


def _done(name: str, steps: int | None) -> bool:
    path = RESULTS / f"{name}.json"
    return path.exists() and (steps is None or json.loads(path.read_text()).get("steps") == steps)


def main_run(args: argparse.Namespace) -> None:
    arms = args.arms.split(",")
    unknown = [a for a in arms if a not in ARMS]
    if unknown:
        raise SystemExit(f"ablation: unknown arm(s) {', '.join(unknown)} (arms: {', '.join(ARMS)})")
    seeds = [int(s) for s in args.seeds.split(",")]
    jobs = [(arm, seed) for seed in seeds for arm in arms if not _done(f"{arm}_seed{seed}", args.steps)]
    logging.info("ablation: %d runs to do: %s", len(jobs), ", ".join(f"{a}_seed{s}" for a, s in jobs))
    for arm, seed in jobs:
        wait_while_paused(args.work)
        logging.info("ablation: wrote %s", run_arm(arm, seed, args.steps, args.repeats, args.work, None))
    if not _done(BASE, None):
        protocol = next((args.work / f"{a}_seed{s}" for s in seeds for a in arms
                         if (args.work / f"{a}_seed{s}" / "checkpoints" / "latest").exists()), None)
        if protocol is None:
            raise SystemExit("ablation: the base plays under a trained run's protocol: train one arm first")
        logging.info("ablation: wrote %s", run_arm(BASE, 0, 0, args.repeats, args.work, protocol))


def main_rescore(args: argparse.Namespace) -> None:
    """Recompute the held-out rows of the kept results from their plays in --work (a metric added after they ran);
    the rest of each record (training curve, seconds) stays."""
    from ablation_table import result_files

    trained = sorted(p.parent for p in args.work.glob("*/config.yaml"))
    for path in result_files(RESULTS):
        rec, run = json.loads(path.read_text()), args.work / path.stem
        plays = sorted(run.glob("heldout_r*/episodes.jsonl"))
        if len(plays) != rec["repeats"] or not trained:
            logging.warning("ablation: %s: %d of %d plays in %s, left as it is", path.name, len(plays), rec["repeats"], run)
            continue
        protocol = run if (run / "config.yaml").exists() else trained[0]  # the base plays a trained run's protocol
        rec["heldout"] = [row for r in range(rec["repeats"]) for row in heldout_rows(run / f"heldout_r{r}", r, protocol)]
        rec["rescored"] = _commit()
        path.write_text(json.dumps(rec, indent=0))
        logging.info("ablation: rescored %s", path.name)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    run = sub.add_parser("run", help="train and play what is missing")
    run.add_argument("--arms", default=",".join(ARMS))
    run.add_argument("--seeds", default="0,1,2")
    run.add_argument("--steps", type=int, default=32)
    run.add_argument("--repeats", type=int, default=2, help="sampled plays of the held-out split per policy")
    run.add_argument("--work", type=Path, default=Path("runs/ablation"), help="runs, adapters and episodes")
    sub.add_parser("table", help="table and plot what benchmarks/ablation holds")
    rescore = sub.add_parser("rescore", help="recompute the kept results' held-out rows from the plays in --work")
    rescore.add_argument("--work", type=Path, default=Path("runs/ablation"))
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format=LOG_FORMAT)
    if args.cmd == "run":
        main_run(args)
    elif args.cmd == "rescore":
        main_rescore(args)
    else:
        from ablation_table import main_table

        main_table(RESULTS)


if __name__ == "__main__":
    main()
