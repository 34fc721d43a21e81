"""`python -m aac.preflight +recipe=NAME [overrides]`: the first command on new hardware.

Runs `preflight.steps` real steps of the recipe through the real `Trainer` (the same pieces, placement and
data order as `aac.train`), then prints and writes as JSON (`preflight.json` in the run dir): the installed
versions (a vLLM outside the supported range is refused in one line, before anything is built), per step
the phase times and the generated / prompt / update tokens, each piece's peak memory, the engine's KV
cache, the learner's attention kernel, the adapter-sync gap, and the recipe's full run projected from
those measurements (`aac/preflight/projection.py`). `model=qwen3_8b_random` times the flagship's exact
shape with random weights (no download); its replies all score alike, so `preflight.synthetic_advantages`
gives such a batch advantages that make its update run (and be timed). Before anything is built, the
machine's GPUs and the learner's predicted peak are checked (`aac.hardware.check_run`, one line), and the
prediction is reported beside the learner's measured peak.
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Any, Optional

from omegaconf import DictConfig

from aac.cli import output_dir, run_hydra
from aac.config import TrainConfig, validate
from aac.hardware import check_run
from aac.preflight.pieces import GiB, engine_report, inside, learner_report
from aac.preflight.projection import Measured, project
from aac.preflight.synthetic import synthetic_advantages
from aac.preflight.typical import capped, worst_step
from aac.preflight.versions import check_vllm, installed
from aac.rollout.workers import RolloutBatch
from aac.train import DEFAULT_RECIPE
from aac.training import Trainer

log = logging.getLogger("aac.preflight")


def _uses_vllm(cfg: TrainConfig) -> bool:
    return "vllm" in {str(k) for k in (cfg.rollout.engine, cfg.critic.backend, cfg.eval.engine, cfg.eval.judge_engine)}


def _step_row(m: dict[str, Any], wall_s: float) -> dict[str, Any]:
    generated = int(m["rollout/generated_tokens"])
    row = {"wall_s": round(wall_s, 2), **{k[5:]: round(v, 2) for k, v in m.items() if k.startswith("time/")},
           "turns": int(m["rollout/turns"]), "generated_tokens": generated, "prompt_tokens": int(m["rollout/prompt_tokens"]),
           # a skipped update (all advantages zero) ran nothing: its count is what its micro-batches would run
           "update_tokens": m.get("update/tokens"), "turns_per_episode": m.get("episode/turns_mean"),
           "loss_tokens": m.get("update/loss_tokens"),
           "off_policy_lag": m.get("offpolicy/lag"),  # 1: this step's rollout ran during the previous update
           "sync_logprob_gap": None if m.get("sync/logprob_gap") is None else float(f"{m['sync/logprob_gap']:.3g}"),
           "update_skipped": bool(m.get("update/skipped"))}
    row["update_tokens_per_generated"] = round(row["update_tokens"] / generated, 2) if generated and row["update_tokens"] else None
    return row


class PreflightTrainer(Trainer):
    """The recipe's Trainer; with `preflight.synthetic_advantages`, a batch whose advantages are all 0 gets
    synthetic ones (`synthetic_advantages`), so its update runs and is timed."""

    synthetic = False  # whether the last step's advantages were synthetic

    def advantages(self, batch: RolloutBatch) -> list[list[float]]:
        adv = super().advantages(batch)
        if not self.cfg.preflight.synthetic_advantages:
            self.synthetic = False
            return adv
        adv, self.synthetic = synthetic_advantages([ep.group for ep in batch.episodes], adv)
        return adv


def _pieces(trainer: Trainer) -> dict[str, Any]:
    run = trainer.pieces
    hosts = {h.name: h.actor for h in run.engines.hosts()} or {
        name: e for name, e in (("engine:actor", run.actor), ("engine:critic", run.critic)) if e is not None}
    out = {name: inside(handle, engine_report) for name, handle in hosts.items()}
    out["learner"] = inside(run.learner.actor, learner_report)
    return out


def preflight(cfg: DictConfig) -> dict[str, Any]:
    import psutil

    validate(cfg)
    recipe, cfg = cfg, capped(cfg) if cfg.preflight.shape == "typical" else cfg
    predicted = check_run(cfg)
    versions = installed()
    print("versions: " + ", ".join(f"{k} {v or '-'}" for k, v in versions.items()), flush=True)
    if _uses_vllm(cfg):
        check_vllm(versions["vllm"])  # a VersionError: one line (run_hydra)
    out_dir = output_dir(cfg)
    out_dir.mkdir(parents=True, exist_ok=True)
    trainer = PreflightTrainer(cfg, out_dir)
    report: dict[str, Any] = {"recipe": cfg.recipe_name, "model": cfg.model.name, "versions": versions,
                              "total_steps": trainer.total_steps, "shape": str(cfg.preflight.shape),
                              "turns": cfg.env.max_steps, "reply_tokens": dict(cfg.rollout.max_tokens_per_phase),
                              "steps": []}
    try:
        startup_s = time.time() - psutil.Process().create_time()
        walls = []
        for _ in range(min(cfg.preflight.steps, trainer.total_steps)):
            t0 = time.perf_counter()
            m = trainer.train_step()
            trainer.step += 1
            trainer.metrics.write(trainer.step, m)
            walls.append(time.perf_counter() - t0)
            report["steps"].append({**_step_row(m, walls[-1]), "synthetic_advantages": trainer.synthetic})
            log.info("preflight step %d: %s", trainer.step, report["steps"][-1])
        t0 = time.perf_counter()
        trainer.save()
        save_s = time.perf_counter() - t0
        eval_s = None
        if cfg.eval_every and cfg.preflight.eval:
            t0 = time.perf_counter()
            trainer.evaluate()
            eval_s = time.perf_counter() - t0
        report["pieces"] = _pieces(trainer)
        # the memory model's peak for this setting beside what the learner's process measured (aac/learner/memory.py)
        report["learner_memory_predicted_gb"] = predicted and round(predicted["total"] / GiB, 2)
    finally:
        t0 = time.perf_counter()
        trainer.close()
        close_s = time.perf_counter() - t0
    measured = Measured(startup_s, walls, save_s, close_s, eval_s)
    report["measured"] = {"startup_s": round(startup_s, 1), "save_s": round(save_s, 2), "eval_s": eval_s,
                          "close_s": round(close_s, 1)}
    report["projection"] = {k: round(v, 3) for k, v in project(measured, trainer.total_steps, cfg.save_every,
                                                               cfg.eval_every).items()}
    if cfg.preflight.shape == "typical" and report["steps"]:
        # the recipe's worst case: each measured step scaled (the first's warm-up too: it errs high)
        episodes = cfg.rollout.functions_per_step * cfg.rollout.group_size
        worst = [worst_step(row, episodes, recipe) for row in report["steps"]]
        report["worst_case"] = {"turns": recipe.env.max_steps, **{k: round(v, 2) for k, v in worst[-1].items()},
                                "projection": {k: round(v, 3) for k, v in project(
                                    Measured(startup_s, [w["wall_s"] for w in worst], save_s, close_s, eval_s),
                                    trainer.total_steps, cfg.save_every, cfg.eval_every).items()}}
    path = Path(cfg.preflight.json) if cfg.preflight.json else out_dir / "preflight.json"
    path.write_text(json.dumps(report, indent=1))
    _print(report, path)
    return report


def _print(r: dict[str, Any], path: Path) -> None:
    p = r["projection"]
    print(f"\npreflight of {r['recipe']} ({r['model']}): {len(r['steps'])} of {r['total_steps']} steps measured")
    print("| step | wall s | rollout s (generation, critic) | update s | rollout-ahead wait s | sync s | turns | "
          "generated | prompt | update tokens (per generated) | sync gap |")
    for i, s in enumerate(r["steps"], 1):
        print(f"| {i} | {s['wall_s']} | {s.get('rollout_s')} ({s.get('generation_s')}, {s.get('critic_s')}) | "
              f"{s.get('update_s')} | {s.get('rollout_ahead_wait_s')} | {s.get('sync_s')} | {s['turns']} | "
              f"{s['generated_tokens']} | {s['prompt_tokens']} | "
              f"{s['update_tokens']} ({s['update_tokens_per_generated']}) | {s['sync_logprob_gap']} |")
    for name, piece in r.get("pieces", {}).items():
        extra = {k: v for k, v in piece.items() if k not in ("pid",)}
        print(f"{name} (pid {piece['pid']}): {extra}")
    learner = r.get("pieces", {}).get("learner", {})
    measured = learner.get("gpu_peak_allocated_gb", learner.get("peak_rss_gb"))
    print(f"learner peak: {r.get('learner_memory_predicted_gb')} GiB predicted by the memory model, {measured} GiB measured "
          f"({'GPU, torch allocated' if 'gpu_peak_allocated_gb' in learner else 'CPU process peak RSS'})")
    m = r["measured"]
    print(f"start-up {m['startup_s']} s, checkpoint {m['save_s']} s, evaluation {m['eval_s']} s, shut-down {m['close_s']} s")
    print(f"projected full run ({p['steps']:.0f} steps at {p['step_s']:.1f} s, {p['evals']:.0f} evaluations): "
          f"{p['total_s']:.0f} s = {p['total_h']:.2f} h ({r['shape']} episodes: {r['turns']} turns, replies "
          f"{r['reply_tokens']} tokens)")
    if "worst_case" in r:
        w = r["worst_case"]
        print(f"worst case, scaled from the last step (x{w['scale']:.1f} the generated tokens: {w['turns']} turns, "
              f"every reply at its cap): {w['wall_s']:.1f} s a step, full run {w['projection']['total_h']:.2f} h")
    print(f"wrote {path}")


def main(argv: Optional[list[str]] = None) -> None:
    run_hydra(preflight, "config", DEFAULT_RECIPE, argv)


if __name__ == "__main__":
    main()
