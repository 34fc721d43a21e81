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
from aac.cli import output_dir, run_hydra
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
        from aac.assembly import EngineSet, critic_engine, training_protocol
        from aac.critic import NEVER_CHECKED, card_status
        from aac.datasets import load_instances
        from aac.learner import Learner
        from aac.learner.allocator import learner_env
        from aac.models import resolve_model
        from aac.placement import Placed, start_ray
        from aac.rollout.workers import RolloutWorker

        self.cfg, self.out_dir = cfg, out_dir
        seed_everything(cfg.seed)
        self.instances = load_instances(cfg.env.data, split=cfg.env.split, limit=cfg.env.limit,
                                        on_bad_row=cfg.env.on_bad_row, domain=cfg.env.domain)
        if not self.instances:
            raise SystemExit(f"aac: no usable instances in {cfg.env.data} (split {cfg.env.split})")
        self.order = DataOrder(len(self.instances), cfg.rollout.functions_per_step, cfg.seed)
        per_epoch = self.order.steps_per_epoch
        self.total_steps = cfg.max_steps or per_epoch * cfg.learner.epochs
        log.info("%d instances, %d steps per epoch, %d steps", len(self.instances), per_epoch, self.total_steps)

        use_ray = cfg.rollout.placement == "ray"
        if use_ray:
            start_ray(threads=cfg.rollout.cpu_threads)
        r = cfg.rollout
        t0 = time.perf_counter()
        self.engines = EngineSet(cfg.model, r, cfg.seed, use_ray=use_ray)
        self.engine = self.engines.actor(lora_rank=cfg.learner.lora_r)
        critic = critic_engine(self.engines, cfg.critic)
        if cfg.critic.kind == "llm":  # the scripted critic is a rule: it has no report card
            status = card_status(cfg.critic.card)  # the critic's report card, or that it was never checked
            (log.warning if status.startswith(NEVER_CHECKED) else log.info)("critic: %s", status)
        if critic is not None and critic is not self.engine:
            log.info("critic: its own engine (%s serving %s)", cfg.critic.backend or r.engine,
                     cfg.critic.model or cfg.model.name)
        self.learner = Placed(Learner, cfg.learner, resolve_model(cfg.model.name), cfg.seed, use_ray=use_ray,
                              name="learner", num_gpus=cfg.learner.num_gpus, env=learner_env(cfg.learner))
        protocol = training_protocol(cfg.env)
        self.workers = [
            Placed(RolloutWorker, r, cfg.env, cfg.critic, cfg.rewards, protocol, self.engine, critic,
                   use_ray=use_ray, name=f"rollout{i}")
            for i in range(r.num_workers)
        ]
        log.info("engine (%s), learner (%s), %d rollout worker(s) up in %.1fs [%s]", r.engine,
                 cfg.learner.backend, r.num_workers, time.perf_counter() - t0, r.placement)
        self._held_out: Optional[tuple[list, Any]] = None  # eval instances and scorers, built on first use
        self._pool: Any = None

        self.ckpt_root = out_dir / "checkpoints"
        self.step = 0
        self.version = 0
        resumed = self._resume()
        if not resumed:
            self._sync(self.version)  # version 0: the fresh LoRA (B = 0) or learner.init_adapter, served as the actor
        self.metrics = MetricsLog(out_dir, cfg, OmegaConf.to_container(cfg, resolve=True))

    # ------------------------------------------------------------------ pieces of a step

    def rollout(self, instances: list[list[Any]], *, sampling: Any = None, protocol: Any = None) -> Any:
        """Play one episode per (group, instance) across the workers; merge their batches.

        `instances[g]` are group g's episodes. Episode keys are their position in this call, and the
        step seeds them, so the same step samples the same tokens whatever the split across workers."""
        from aac.critic import with_rates
        from aac.rollout.driver import EpisodeSpec
        from aac.rollout.workers import RolloutBatch

        pairs = [(g, inst) for g, group in enumerate(instances) for inst in group]
        specs = [EpisodeSpec(key, inst, g) for key, (g, inst) in enumerate(pairs)]
        shares = [specs[i :: len(self.workers)] for i in range(len(self.workers))]
        futures = [
            w.submit("run", share, adapter=ACTOR, seed=self.cfg.seed * 100_003 + self.step, sampling=sampling,
                     protocol=protocol)
            for w, share in zip(self.workers, shares) if share
        ]
        batches = self.workers[0].gather(futures)
        merged = RolloutBatch(episodes=[])
        for b in batches:
            merged.episodes += b.episodes
            merged.generated_tokens += b.generated_tokens
            merged.engine_calls += b.engine_calls
            merged.idle_slots += b.idle_slots
            for k, v in b.timings.items():
                merged.timings[k] = max(merged.timings.get(k, 0.0), v)  # workers run in parallel
            for k, v in b.critic_counts.items():
                merged.critic_counts[k] = merged.critic_counts.get(k, 0) + v
        merged.episodes.sort(key=lambda e: e.key)
        merged.critic_counts = with_rates(merged.critic_counts) if merged.critic_counts else {}
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

    def _signal(self, batch: Any, advantages: list[list[float]]) -> dict[str, float]:
        """Where this batch's training signal went (zero advantages, flat groups, critic scores)."""
        from aac.rewards.accounting import signal_accounting
        from aac.rewards.terms import HYPOTHESIS, INFORMATIVENESS

        eps = batch.episodes
        acc = signal_accounting(
            groups=[(ep.group, ep.uid) for ep in eps], phases=[[t.phase for t in ep.turns] for ep in eps],
            tokens=[[len(t.token_ids) for t in ep.turns] for ep in eps], advantages=advantages,
            rewards=[[t.reward for t in ep.turns] for ep in eps],
            scores={kind: [t.score for ep in eps for t in ep.turns if t.judged == kind]
                    for kind in (INFORMATIVENESS, HYPOTHESIS)})
        for warning in acc.warnings:
            log.warning("step %d: %s", self.step + 1, warning)
        return acc.metrics

    def samples(self, batch: Any, advantages: list[list[float]]) -> list[Any]:
        from aac.learner import Sample

        return [
            Sample(prompt_ids=t.prompt_ids, completion_ids=t.token_ids, sampling_logprobs=t.logprobs, advantage=a)
            for ep, adv in zip(batch.episodes, advantages)
            for t, a in zip(ep.turns, adv)
            if t.token_ids
        ]

    def _sync(self, version: int, probe: Optional[Any] = None, before: Optional[list[float]] = None) -> dict[str, float]:
        """Hand the learner's adapter to the engine as `version`; check it on a probe.

        `before` is the learner's log-probs of the probe under the previous version. The engine is
        stale when its gap to the learner exceeds `sync_tolerance` (the numeric floor) and it is
        not closer to the new weights than to the previous ones: a bf16 engine sits ~0.15/token from
        an fp32 learner when synced, so the floor alone cannot tell (benchmarks/RESULTS.md)."""
        t0 = time.perf_counter()
        path = self.out_dir / "adapters" / f"v{version:06d}"
        self.learner.save_adapter(str(path))
        if self.cfg.sync_adapter or version == 0:
            self.engine.load_adapter(ACTOR, str(path), version)
        out = {"time/sync_s": time.perf_counter() - t0}
        if probe is not None and self.cfg.check_sync:
            prompt_ids, completion_ids = probe
            theirs = np.asarray(self.engine.score(prompt_ids, completion_ids, ACTOR))
            gap = float(np.mean(np.abs(np.asarray(self.learner.token_logprobs(prompt_ids, completion_ids)) - theirs)))
            out["sync/logprob_gap"] = gap
            if before is not None:
                out["sync/logprob_gap_previous"] = float(np.mean(np.abs(np.asarray(before) - theirs)))
            if gap > self.cfg.sync_tolerance and gap >= out.get("sync/logprob_gap_previous", 0.0):
                raise SyncError(
                    f"engine log-probs differ from the learner's by {gap:.4f}/token (> sync_tolerance "
                    f"{self.cfg.sync_tolerance}, and no closer than to the previous weights) after loading "
                    f"adapter v{version}: the engine is serving a stale adapter"
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
        probe_turn = next((t for ep in batch.episodes for t in ep.turns if t.token_ids), None)
        probe = (probe_turn.prompt_ids, probe_turn.token_ids[:32]) if probe_turn else None
        before = self.learner.token_logprobs(*probe) if probe and self.cfg.check_sync else None
        t0 = time.perf_counter()
        upd = self.learner.update(samples)
        t_upd = time.perf_counter() - t0
        self.version += 1
        sync = self._sync(self.version, probe, before)
        m = rollout_metrics(batch, self.cfg.rewards.stop_threshold)
        m.update(self._signal(batch, adv))
        m.update({f"update/{k}": v for k, v in upd.items() if isinstance(v, (int, float, bool))})
        m.update(sync)
        m["time/rollout_s"], m["time/update_s"] = t_roll, t_upd
        m["rollout/tokens_per_s"] = batch.generated_tokens / max(t_roll, 1e-9)
        m["adapter_version"] = self.version
        m["uids"] = [self.instances[i].uid for i in idx]
        return m

    def evaluate(self) -> dict[str, float]:
        """Held-out episodes in the PAU setting (`eval.*`: window, call budget, sampling), scored as
        `aac.eval` scores them (LM judge, code match): its metrics for the same episodes, plus rewards."""
        from aac.assembly import eval_protocol
        from aac.eval.harness import scorers
        from aac.eval.report import summarize
        from aac.eval.scoring import score_episodes
        from aac.rollout.driver import SamplingSpec

        cfg, e = self.cfg, self.cfg.eval
        if self._held_out is None:
            from aac.datasets import load_instances
            from aac.env.domains import open_pool

            held = load_instances(e.data, split=e.split, limit=cfg.eval_limit, on_bad_row="warn",
                                  domain=cfg.env.domain)
            self._pool = open_pool(cfg.env)  # code match runs here, in the driver
            self._held_out = (held, scorers(cfg, self.engines, self._pool))
        held, (judge, matcher) = self._held_out
        sampling = SamplingSpec.from_config(e, cfg.rollout.top_p, logprobs=True)
        batch = self.rollout([[inst] for inst in held], sampling=sampling, protocol=eval_protocol(e, cfg.env))
        episodes = [ep.record for ep in batch.episodes]
        scores: dict[str, dict] = {}
        score_episodes(episodes, {i.uid: i for i in held}, judge, matcher, gold=False, batch_size=e.batch_size,
                       on_done=lambda recs: scores.update((r["uid"], r) for r in recs))
        report = summarize({}, episodes, scores)
        m = rollout_metrics(batch, cfg.rewards.stop_threshold)
        out = {f"eval/{k}": v for k, v in m.items() if k.startswith(("reward/", "episode/"))}
        out.update({"eval/description_score": report["description_score"]["mean"],
                    "eval/code_match": report["code_match"]["mean"], "eval/queries_mean": report["queries_mean"],
                    "eval/concluded_pct": report["concluded_pct"], "eval/format_error_rate": report["format_error_rate"]})
        return out

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
        from aac.progress import bar

        cfg = self.cfg
        last: dict[str, Any] = {}
        with bar(self.total_steps, "train", enabled=cfg.logging.progress, completed=self.step) as advance:
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
                if (cfg.save_every and self.step % cfg.save_every == 0) or self.step == self.total_steps:
                    self.save()
                advance(1)
                last = m
        return last

    def close(self) -> None:
        self.metrics.close()
        for w in self.workers:
            w.close()
        if self._pool is not None:
            self._pool.close()
        for piece in (*self.workers, self.learner):
            piece.kill()
        self.engines.close()


def _truncate_metrics(path: Path, step: int) -> None:
    rows = [r for r in read(path) if r["step"] <= step]
    tmp = path.with_suffix(".tmp")
    tmp.write_text("".join(json.dumps(r) + "\n" for r in rows))
    tmp.replace(path)


def train(cfg: DictConfig) -> dict[str, Any]:
    validate(cfg)
    out_dir = output_dir(cfg)
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
