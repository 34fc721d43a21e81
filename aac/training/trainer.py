"""The AAC loop. One step: rollouts (engine + sandbox + critic) → step rewards → advantages → GRPO
update → adapter sync (new version into the engine, checked on a probe) → log → checkpoint → eval.

The pieces come from `aac.assembly.build_run`; what a step does with them is small named functions
(`play_step`, `batch_advantages`, `AdapterSync`, `HeldOutEval`), each phase timed by `timed`."""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any, Optional

from omegaconf import OmegaConf

from aac import checkpoint
from aac.assembly import build_run
from aac.config import TrainConfig
from aac.env.instance import Instance
from aac.env.protocol import ProtocolConfig
from aac.learner.batching import Sample
from aac.metrics import MetricsLog, rollout_metrics, signal_metrics, timed
from aac.rewards.advantages import batch_advantages
from aac.rollout.driver import SamplingSpec
from aac.rollout.fanout import LaunchedStep, launch_step
from aac.rollout.workers import RolloutBatch
from aac.training.data_order import DataOrder, seed_everything
from aac.training.held_out import HeldOutEval
from aac.training.pipeline import RolloutAhead, lag_metrics
from aac.training.state import LearnerStates, resume
from aac.training.supervisor import RestartLimit, Supervisor
from aac.training.sync import ACTOR, AdapterSync, check_served, default_tolerance, probe_of

log = logging.getLogger("aac.train")


class Trainer:
    """Builds a training run's pieces and runs AAC steps on them."""

    def __init__(self, cfg: TrainConfig, out_dir: Path):
        from aac.critic import NEVER_CHECKED, card_status
        from aac.datasets import load_instances

        self.cfg, self.out_dir = cfg, out_dir
        self.started = time.perf_counter()  # what cfg.time_budget_s counts from
        seed_everything(cfg.seed)
        self.instances = load_instances(cfg.env.data, split=cfg.env.split, limit=cfg.env.limit,
                                        on_bad_row=cfg.env.on_bad_row, domain=cfg.env.domain)
        if not self.instances:
            raise SystemExit(f"aac: no usable instances in {cfg.env.data} (split {cfg.env.split})")
        self.order = DataOrder(len(self.instances), cfg.rollout.functions_per_step, cfg.seed)
        self.total_steps = cfg.max_steps or self.order.steps_per_epoch * cfg.learner.epochs
        log.info("%d instances, %d steps per epoch, %d steps", len(self.instances), self.order.steps_per_epoch,
                 self.total_steps)
        t0 = time.perf_counter()
        if cfg.critic.kind == "llm":  # the scripted critic is a rule: it has no report card
            status = card_status(cfg.critic.card)  # the critic's report card, or that it was never checked
            (log.warning if status.startswith(NEVER_CHECKED) else log.info)("critic: %s", status)
        self.pieces = build_run(cfg)
        log.info("engine (%s), learner (%s), %d rollout worker(s) up in %.1fs [%s]", cfg.rollout.engine,
                 cfg.learner.backend, cfg.rollout.num_workers, time.perf_counter() - t0, cfg.rollout.placement)
        tolerance = cfg.sync_tolerance or default_tolerance(cfg.model.dtype, cfg.learner.dtype)
        self.adapter_sync = AdapterSync(self.pieces, out_dir / "adapters", sync_adapter=cfg.sync_adapter,
                                        check_sync=cfg.check_sync, tolerance=tolerance, keep=cfg.keep_adapters)
        self.supervised = Supervisor(self.pieces, cfg.max_actor_restarts, self._restore)
        self.held_out = HeldOutEval(cfg, self.pieces)
        self.ckpt_root = out_dir / "checkpoints"
        self.states = LearnerStates(out_dir / "learner")
        self.ahead = RolloutAhead(cfg.rollout.max_off_policy_steps)
        self.step, self.version, self.ahead.ready = resume(cfg, self.ckpt_root, self.learner, out_dir / "metrics.jsonl")
        self.first_step = self.step
        # what a rebuilt piece restores: this version's learner state and adapter (version 0: the fresh
        # LoRA, B = 0, or learner.init_adapter)
        self.supervised("start", lambda: (self.states.commit(self.learner, self.version),
                                          self.adapter_sync.sync(self.version)))
        self.metrics = MetricsLog(out_dir, cfg, OmegaConf.to_container(cfg, resolve=True))

    @property
    def engine(self) -> Any:
        return self.pieces.actor

    @property
    def learner(self) -> Any:
        return self.pieces.learner

    # ------------------------------------------------------------------ pieces of a step (hooks for experiments)

    def rollout(self, groups: list[list[Instance]], *, sampling: Optional[SamplingSpec] = None,
                protocol: Optional[ProtocolConfig] = None, step: Optional[int] = None) -> RolloutBatch:
        """Play one episode per (group, instance) across the workers, seeded by the step."""
        return self.launch(groups, sampling=sampling, protocol=protocol, step=step).result()

    def launch(self, groups: list[list[Instance]], *, step: Optional[int] = None, **kwargs: Any) -> LaunchedStep:
        step = self.step if step is None else step
        return launch_step(self.pieces.workers, groups, adapter=ACTOR, seed=self.cfg.seed * 100_003 + step, **kwargs)

    def groups(self, step: int) -> list[list[Instance]]:
        return [[self.instances[i]] * self.cfg.rollout.group_size for i in self.order.indices(step)]

    def advantages(self, batch: RolloutBatch) -> list[list[float]]:
        """Per-turn advantages, group by group, with the configured estimator."""
        rw = self.cfg.rewards
        local = None if rw.format_in_return else [[t.format_penalty for t in ep.turns] for ep in batch.episodes]
        return batch_advantages([(ep.group, ep.uid) for ep in batch.episodes],
                                [[(t.phase, t.reward) for t in ep.turns] for ep in batch.episodes],
                                rw.advantage, rw.w_step, rw.eps, local)

    def samples(self, batch: RolloutBatch, advantages: list[list[float]]) -> list[Sample]:
        return [Sample(prompt_ids=t.prompt_ids, completion_ids=t.token_ids, sampling_logprobs=t.logprobs, advantage=a)
                for ep, adv in zip(batch.episodes, advantages) for t, a in zip(ep.turns, adv) if t.token_ids]

    # ------------------------------------------------------------------ the loop

    def _restore(self, rebuilt: list[str]) -> None:
        if self.learner.name in rebuilt:
            self.states.restore(self.learner, self.version)
        # an engine serves this version's adapter again (a sync that died before writing it retries it whole)
        if any(name.startswith("engine") for name in rebuilt) and self.adapter_sync.path(self.version).exists():
            self.adapter_sync.load(self.version)

    def train_step(self) -> dict[str, Any]:
        idx, nxt = self.order.indices(self.step), self.step + 1
        m: dict[str, Any] = {}
        retries = self.supervised.retries
        with timed(m, "time/rollout_s"):
            ahead = self.ahead.take(self.step)
            batch, served = (ahead.batch, ahead.served) if ahead else (
                self.supervised("rollout", lambda: self.rollout(self.groups(self.step))), self.version)
        check_served(batch, served)
        adv = self.advantages(batch)
        samples = self.samples(batch, adv)
        probe = probe_of(batch, self.cfg.sync_probe_tokens)
        before = self.supervised("probe", lambda: self.adapter_sync.probe_before(probe))
        if self.ahead.k and nxt < self.total_steps:  # step t+1's rollout runs while step t updates
            self.ahead.launch(nxt, self.version, lambda: self.launch(self.groups(nxt), step=nxt))
        with timed(m, "time/update_s"):
            upd = self.supervised("update", lambda: self.states.update(self.learner, samples, self.version))
        with timed(m, "time/rollout_ahead_wait_s"):
            self.supervised("rollout", self.ahead.collect)
        m.update(lag_metrics(self.version - served, upd))
        self.version += 1
        m.update(self.supervised("adapter sync", lambda: self.adapter_sync.sync(self.version, probe, before)))
        m["faults/actor_restarts"], m["faults/retried_phases"] = self.supervised.restarts, self.supervised.retries - retries
        m.update(rollout_metrics(batch, self.cfg.rewards.stop_threshold))
        m.update(signal_metrics(batch, adv, self.step + 1))
        m.update({f"update/{k}": v for k, v in upd.items() if isinstance(v, (int, float, bool))})
        m["rollout/tokens_per_s"] = batch.generated_tokens / max(m["time/rollout_s"], 1e-9)
        m["adapter_version"] = self.version
        m["uids"] = [self.instances[i].uid for i in idx]  # what step t trained on
        return m

    def evaluate(self) -> dict[str, float]:
        return self.supervised("held-out evaluation", lambda: self.held_out.metrics(self.rollout))

    def save(self) -> None:
        """Checkpoint the last complete step from the files its sync and update left (no piece is asked,
        so a run whose learner is gone still checkpoints)."""
        state = {"step": self.step, "version": self.version, "config_hash": checkpoint.config_hash(self.cfg)}
        path = checkpoint.save(self.ckpt_root, self.step, adapter=self.adapter_sync.path(self.version),
                               learner_state=self.states.path(self.version), trainer_state=state, ahead=self.ahead.ready,
                               keep=self.cfg.keep_checkpoints)
        log.info("checkpoint %s", path)

    def budget_spent(self) -> bool:
        """Whether `time_budget_s` ran out, once `time_budget_min_steps` steps of this process ran."""
        budget = self.cfg.time_budget_s
        return (budget is not None and self.step - self.first_step >= self.cfg.time_budget_min_steps
                and time.perf_counter() - self.started >= budget)

    def run(self) -> dict[str, Any]:
        from aac.progress import bar

        cfg, last = self.cfg, {}
        with bar(self.total_steps, "train", enabled=cfg.logging.progress, completed=self.step) as advance:
            while self.step < self.total_steps:
                try:
                    m = self.train_step()
                except RestartLimit as e:
                    self.save()  # the last complete step
                    raise SystemExit(f"aac: {e}; checkpoint of step {self.step} in {self.ckpt_root}") from None
                self.step += 1
                if cfg.eval_every and self.step % cfg.eval_every == 0:
                    m.update(self.evaluate())
                self.metrics.write(self.step, m)
                log.info("step %d/%d reward %.3f | queries %.1f concluded %.0f%% | kl %.4f clip %.3f | "
                         "rollout %.1fs (%.0f tok/s) update %.1fs", self.step, self.total_steps,
                         m["reward/episode_total_mean"], m["episode/queries_mean"], m["episode/concluded_pct"],
                         m.get("update/kl", float("nan")) if cfg.learner.kl_coef else float("nan"),  # nan: no KL term
                         m.get("update/clip_frac", float("nan")),
                         m["time/rollout_s"], m["rollout/tokens_per_s"], m["time/update_s"])
                spent = self.budget_spent()
                if (cfg.save_every and self.step % cfg.save_every == 0) or self.step == self.total_steps or spent:
                    self.save()
                advance(1)
                last = m
                if spent and self.step < self.total_steps:
                    log.info("time budget %gs spent at step %d of %d (%.0fs since start): training ends here",
                             cfg.time_budget_s, self.step, self.total_steps, time.perf_counter() - self.started)
                    break
        return last

    def close(self) -> None:
        self.metrics.close()
        self.pieces.close()
