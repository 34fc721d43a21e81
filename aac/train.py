"""`python -m aac.train`: compose the config, build the pieces, run the AAC loop.

One step: rollouts (engine + sandbox + critic) → step rewards → advantages → GRPO update →
adapter sync (new version into the engine, checked on a probe) → log → checkpoint → eval.
"""

from __future__ import annotations

import hashlib
import json
import logging
import random
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import numpy as np
import torch
from omegaconf import DictConfig, OmegaConf

from aac import checkpoint
from aac.cli import run_hydra
from aac.config import validate
from aac.metrics import MetricsLog, plot, read, rollout_metrics

log = logging.getLogger("aac.train")
DEFAULT_RECIPE = "smollm2_cpu"
ACTOR = "actor"  # the engine's name for the trained adapter


class SyncError(RuntimeError):
    """The engine does not serve the adapter the learner holds."""


@dataclass
class DataOrder:
    """Which instances each step trains on: a seeded permutation per epoch, no replacement.

    A pure function of (seed, step), so a resumed run sees exactly the same order."""

    n: int
    per_step: int
    seed: int

    @property
    def steps_per_epoch(self) -> int:
        return max(1, self.n // self.per_step)

    def indices(self, step: int) -> list[int]:
        epoch, k = divmod(step, self.steps_per_epoch)
        perm = np.random.default_rng([self.seed, epoch]).permutation(self.n)
        if self.n < self.per_step:  # fewer instances than a step needs: cycle through them
            return [int(perm[i % self.n]) for i in range(self.per_step)]
        return [int(i) for i in perm[k * self.per_step : (k + 1) * self.per_step]]


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def config_hash(cfg: DictConfig) -> str:
    blob = json.dumps(OmegaConf.to_container(cfg, resolve=True), sort_keys=True, default=str)
    return hashlib.sha1(blob.encode()).hexdigest()[:12]


class Trainer:
    """Builds the engine, learner and rollout workers, and runs AAC steps."""

    def __init__(self, cfg: DictConfig, out_dir: Path):
        from aac.datasets import load_instances
        from aac.engines.remote import EngineHost, RemoteEngine
        from aac.learner import Learner
        from aac.models import resolve_model
        from aac.placement import Placed, start_ray
        from aac.rollout.workers import RolloutWorker

        self.cfg, self.out_dir = cfg, out_dir
        seed_everything(cfg.seed)
        self.instances = load_instances(cfg.env.data, split=cfg.env.split, limit=cfg.env.limit,
                                        on_bad_row=cfg.env.on_bad_row)
        if not self.instances:
            raise SystemExit(f"aac: no usable instances in {cfg.env.data} (split {cfg.env.split})")
        self.order = DataOrder(len(self.instances), cfg.rollout.functions_per_step, cfg.seed)
        per_epoch = self.order.steps_per_epoch
        self.total_steps = cfg.max_steps or per_epoch * cfg.learner.epochs
        log.info("%d instances, %d steps per epoch, %d steps", len(self.instances), per_epoch, self.total_steps)

        use_ray = cfg.rollout.placement == "ray"
        if use_ray:
            start_ray()
        model_path = resolve_model(cfg.model.name)
        r = cfg.rollout
        t0 = time.perf_counter()
        self.engine = Placed(EngineHost, cfg.model, r, cfg.seed, use_ray=use_ray, name="engine")
        self.learner = Placed(Learner, cfg.learner, model_path, cfg.seed, use_ray=use_ray, name="learner")
        engine_for_workers = RemoteEngine(self.engine.actor) if use_ray else self.engine.actor
        self.workers = [
            Placed(RolloutWorker, cfg, engine_for_workers, use_ray=use_ray, name=f"rollout{i}")
            for i in range(r.num_workers)
        ]
        log.info("engine (%s), learner (%s), %d rollout worker(s) up in %.1fs [%s]", r.engine,
                 cfg.learner.backend, r.num_workers, time.perf_counter() - t0, r.placement)

        self.ckpt_root = out_dir / "checkpoints"
        self.step = 0
        self.version = 0
        resumed = self._resume()
        if not resumed:
            self._sync(self.version)  # version 0: the fresh LoRA (B = 0), served as the actor
        self.metrics = MetricsLog(out_dir, cfg, OmegaConf.to_container(cfg, resolve=True))

    # ------------------------------------------------------------------ pieces of a step

    def rollout(self, groups: list[list[Any]], *, greedy: bool = False) -> Any:
        """Split the groups across workers, run them at once, merge the batches."""
        from aac.rollout.workers import RolloutBatch

        shares = [groups[i :: len(self.workers)] for i in range(len(self.workers))]
        futures = [
            w.submit("run", share, adapter=ACTOR, adapter_version=self.version,
                     seed=self.cfg.seed * 100_003 + self.step, greedy=greedy)
            for w, share in zip(self.workers, shares) if share
        ]
        batches = self.workers[0].gather(futures)
        merged = RolloutBatch(episodes=[], timings={}, critic_health={}, generated_tokens=0)
        for b in batches:
            merged.episodes += b.episodes
            merged.generated_tokens += b.generated_tokens
            for k, v in b.timings.items():
                merged.timings[k] = max(merged.timings.get(k, 0.0), v)  # workers run in parallel
            for k, v in b.critic_health.items():
                if isinstance(v, (int, float)):
                    merged.critic_health[k] = merged.critic_health.get(k, 0) + v
        return merged

    def advantages(self, batch: Any) -> list[list[float]]:
        """Per-turn advantages, computed group by group with the configured estimator."""
        from aac.rewards.advantages import step_advantages

        rw = self.cfg.rewards
        out: list[Optional[list[float]]] = [None] * len(batch.episodes)
        groups: dict[tuple, list[int]] = {}
        for i, ep in enumerate(batch.episodes):
            groups.setdefault((ep.group, ep.uid), []).append(i)
        for members in groups.values():
            traj = [[(t.phase, t.reward) for t in batch.episodes[i].turns] for i in members]
            for i, adv in zip(members, step_advantages(traj, rw.advantage, rw.w_step, rw.eps)):
                out[i] = adv
        return out  # type: ignore[return-value]

    def samples(self, batch: Any, advantages: list[list[float]]) -> list[Any]:
        from aac.learner import Sample

        return [
            Sample(prompt_ids=t.prompt_ids, completion_ids=t.token_ids, sampling_logprobs=t.logprobs, advantage=a)
            for ep, adv in zip(batch.episodes, advantages)
            for t, a in zip(ep.turns, adv)
            if t.token_ids
        ]

    def _sync(self, version: int, probe: Optional[Any] = None) -> dict[str, float]:
        """Hand the learner's adapter to the engine as `version`; check it on a probe."""
        t0 = time.perf_counter()
        path = self.out_dir / "adapters" / f"v{version:06d}"
        self.learner.save_adapter(str(path))
        if self.cfg.sync_adapter or version == 0:
            self.engine.load_adapter(ACTOR, str(path), version)
        out = {"time/sync_s": time.perf_counter() - t0}
        if probe is not None and self.cfg.check_sync:
            prompt_ids, completion_ids = probe
            ours = self.learner.token_logprobs(prompt_ids, completion_ids)
            theirs = self.engine.score(prompt_ids, completion_ids, ACTOR)
            gap = float(np.mean(np.abs(np.asarray(ours) - np.asarray(theirs))))
            out["sync/logprob_gap"] = gap
            if gap > self.cfg.sync_tolerance:
                raise SyncError(
                    f"engine log-probs differ from the learner's by {gap:.4f}/token "
                    f"(> sync_tolerance {self.cfg.sync_tolerance}) after loading adapter v{version}: "
                    "the engine is serving a stale adapter"
                )
        return out

    # ------------------------------------------------------------------ the loop

    def train_step(self) -> dict[str, Any]:
        idx = self.order.indices(self.step)
        groups = [[self.instances[i]] * self.cfg.rollout.group_size for i in idx]
        t0 = time.perf_counter()
        batch = self.rollout(groups)
        t_roll = time.perf_counter() - t0
        adv = self.advantages(batch)
        samples = self.samples(batch, adv)
        t0 = time.perf_counter()
        upd = self.learner.update(samples)
        t_upd = time.perf_counter() - t0
        self.version += 1
        probe_turn = next((t for ep in batch.episodes for t in ep.turns if t.token_ids), None)
        probe = (probe_turn.prompt_ids, probe_turn.token_ids[:32]) if probe_turn else None
        sync = self._sync(self.version, probe)
        m = rollout_metrics(batch, self.cfg.rewards.stop_threshold)
        m.update({f"update/{k}": v for k, v in upd.items() if isinstance(v, (int, float, bool))})
        m.update(sync)
        m["time/rollout_s"], m["time/update_s"] = t_roll, t_upd
        m["rollout/tokens_per_s"] = batch.generated_tokens / max(t_roll, 1e-9)
        m["adapter_version"] = self.version
        m["uids"] = [self.instances[i].uid for i in idx]
        return m

    def evaluate(self) -> dict[str, float]:
        """Greedy episodes on held-out instances: reward, queries, conclusions."""
        from aac.datasets import load_instances

        held = load_instances(self.cfg.eval.data, split=self.cfg.eval.split, limit=self.cfg.eval_limit,
                              on_bad_row="warn")
        batch = self.rollout([[inst] for inst in held], greedy=True)
        m = rollout_metrics(batch, self.cfg.rewards.stop_threshold)
        return {f"eval/{k}": v for k, v in m.items() if k.startswith(("reward/", "episode/"))}

    def save(self) -> None:
        state = {"step": self.step, "version": self.version, "config_hash": config_hash(self.cfg)}
        path = checkpoint.save(self.ckpt_root, self.step, learner=self.learner, trainer_state=state,
                               keep=self.cfg.keep_checkpoints)
        log.info("checkpoint %s", path)

    def _resume(self) -> bool:
        want = self.cfg.resume
        if want in (False, None, "false", "False"):
            return False
        path = checkpoint.latest(self.ckpt_root) if want in (True, "true", "True") else Path(str(want))
        if path is None or not path.exists():
            log.info("resume: no checkpoint under %s, starting fresh", self.ckpt_root)
            return False
        state = checkpoint.load(path, learner=self.learner)
        if state.get("config_hash") != config_hash(self.cfg):
            log.warning("resume: config differs from the checkpoint's; continuing with the new one")
        self.step, self.version = state["step"], state["version"]
        _truncate_metrics(self.out_dir / "metrics.jsonl", self.step)  # steps after the checkpoint rerun
        self.engine.load_adapter(ACTOR, str(path / "adapter"), self.version)
        log.info("resumed from %s at step %d (adapter v%d)", path, self.step, self.version)
        return True

    def run(self) -> dict[str, Any]:
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        cfg = self.cfg
        last: dict[str, Any] = {}
        with Progress(TextColumn("[bold]train"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                      TimeElapsedColumn(), disable=not cfg.logging.progress) as bar:
            task = bar.add_task("steps", total=self.total_steps, completed=self.step)
            while self.step < self.total_steps:
                m = self.train_step()
                self.step += 1
                if cfg.eval_every and self.step % cfg.eval_every == 0:
                    m.update(self.evaluate())
                self.metrics.write(self.step, m)
                log.info(
                    "step %d/%d reward %.3f | queries %.1f concluded %.0f%% | kl %.4f clip %.3f | "
                    "rollout %.1fs (%.0f tok/s) update %.1fs",
                    self.step, self.total_steps, m["reward/episode_total_mean"], m["episode/queries_mean"],
                    m["episode/concluded_pct"], m.get("update/kl", float("nan")),
                    m.get("update/clip_frac", float("nan")), m["time/rollout_s"], m["rollout/tokens_per_s"],
                    m["time/update_s"],
                )
                if self.step % cfg.save_every == 0 or self.step == self.total_steps:
                    self.save()
                bar.update(task, completed=self.step)
                last = m
        return last

    def close(self) -> None:
        self.metrics.close()
        for w in self.workers:
            w.close()
        for piece in (*self.workers, self.learner, self.engine):
            piece.kill()


def _truncate_metrics(path: Path, step: int) -> None:
    rows = [r for r in read(path) if r["step"] <= step]
    tmp = path.with_suffix(".tmp")
    tmp.write_text("".join(json.dumps(r) + "\n" for r in rows))
    tmp.replace(path)


def run_dir() -> Path:
    from hydra.core.hydra_config import HydraConfig

    return Path(HydraConfig.get().runtime.output_dir)


def train(cfg: DictConfig) -> dict[str, Any]:
    validate(cfg)
    out_dir = run_dir()
    out_dir.mkdir(parents=True, exist_ok=True)
    log.info("recipe %s: model %s, %s engine, %s learner -> %s", cfg.recipe_name, cfg.model.name,
             cfg.rollout.engine, cfg.learner.backend, out_dir)
    trainer = Trainer(cfg, out_dir)
    try:
        last = trainer.run()
    finally:
        trainer.close()
    rows = read(out_dir / "metrics.jsonl")
    png = plot(rows, out_dir / "metrics.png")
    summary = {k: v for k, v in last.items() if isinstance(v, (int, float))}
    summary["steps"] = trainer.step
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=1))
    log.info("done: %d steps; metrics %s, plot %s, checkpoints %s", trainer.step,
             out_dir / "metrics.jsonl", png, trainer.ckpt_root)
    return summary


def main() -> None:
    run_hydra(train, "config", DEFAULT_RECIPE)


if __name__ == "__main__":
    main()
