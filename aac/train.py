"""`python -m aac.train`: compose the config, build the pieces, run the AAC loop (`aac.training`)."""

from __future__ import annotations

import json
import logging
import time
from typing import Any, Optional

from omegaconf import DictConfig

from aac.cli import output_dir, run_hydra
from aac.config import validate
from aac.cpu_speed import per_core_gflops, speed_line
from aac.hardware import check_run
from aac.metrics import plot, read
from aac.run_dir import METRICS, SUMMARY
from aac.training.state import run_config

log = logging.getLogger("aac.train")
DEFAULT_RECIPE = "smollm2_cpu"


def train(cfg: DictConfig) -> dict[str, Any]:
    validate(cfg)
    out_dir = output_dir(cfg)
    run = run_config(cfg, out_dir)  # a resumed run's own config (aac/training/state.py), saved in the run dir
    check_run(run[0])  # the run's GPUs and learner memory, before Ray and the data
    out_dir.mkdir(parents=True, exist_ok=True)
    gflops = per_core_gflops()  # before the pieces start: what the reader scales this run's timings by
    log.info("machine: %s", speed_line(gflops))
    started = time.perf_counter()
    # torch's model libraries load here, after the config and the machine are checked
    from aac.training import Trainer

    trainer = Trainer(cfg, out_dir, run)
    cfg = trainer.cfg
    log.info("recipe %s: model %s, %s engine, %s learner -> %s", cfg.recipe_name, cfg.model.name,
             cfg.rollout.engine, cfg.learner.backend, out_dir)
    try:
        last = trainer.run()
    finally:
        trainer.close()
    rows = read(out_dir / METRICS)
    png = plot(rows, out_dir / "metrics.png")
    summary = {k: v for k, v in last.items() if isinstance(v, (int, float))}
    summary.update(steps=trainer.step, train_s=round(time.perf_counter() - started, 1),
                   machine_gflops_per_core=round(gflops, 1))
    (out_dir / SUMMARY).write_text(json.dumps(summary, indent=1))
    budget = f", time budget {cfg.time_budget_s:g}s" if cfg.time_budget_s is not None else ""
    log.info("done: %d of %d steps in %.0fs%s, on %s", trainer.step, trainer.total_steps, summary["train_s"], budget,
             speed_line(gflops))
    log.info("metrics %s, plot %s, checkpoints %s", out_dir / METRICS, png, trainer.ckpt_root)
    return summary


def main(argv: Optional[list[str]] = None) -> None:
    run_hydra(train, "config", DEFAULT_RECIPE, argv)


if __name__ == "__main__":
    main()
