"""The AAC loop. One step: rollouts (engine + sandbox + critic) → step rewards → advantages → GRPO
update → adapter sync (new version into the engine, checked on a probe) → log → checkpoint → eval.

The pieces come from `aac.assembly.build_run`; what a step does with them is small named functions
(`launch_step`, `batch_advantages`, `AdapterSync`, `HeldOutEval`), each phase timed by `timed` into a
`time/*_s` metric: rollout, advantages (with the update's samples and the probe's turns), update,
rollout_ahead_wait, sync, sync_check (the probe before the update included), metrics, eval."""

from __future__ import annotations

import contextlib
import logging
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

from omegaconf import OmegaConf

import aac.checkpoint as checkpoint
from aac.assembly import build_run
from aac.config import TrainConfig
from aac.env.instance import Instance
from aac.env.protocol import ProtocolConfig
from aac.learner.batching import Sample
from aac.metrics import MetricsLog, step_metrics, timed
from aac.progress import bar
from aac.rollout.driver import SamplingSpec
from aac.rollout.fanout import LaunchedStep, launch_step
from aac.rollout.workers import RolloutBatch
from aac.training.budget import TimeBudget
from aac.training.data_order import DataOrder, seed_everything, training_instances
from aac.training.episode_log import EpisodeLog
from aac.training.held_out import HeldOutEval
from aac.training.pipeline import RolloutAhead, lag_metrics
from aac.training.samples import learner_samples, turn_advantages
from aac.training.state import LearnerStates, ResumePoint, newest_checkpoint, resume, run_config
from aac.training.supervisor import RestartLimit, Supervisor
from aac.training.sync import ACTOR, AdapterSync, check_served, default_tolerance, probe_of

if TYPE_CHECKING:
    from aac.assembly import LearnerHandle
    from aac.engines import Engine

log = logging.getLogger("aac.train")


def log_critic_card(cfg: TrainConfig) -> None:
    """The critic's report card at the start, or a warning that it was never checked (a scripted critic is a
    rule: it has none)."""
    from aac.critic import NEVER_CHECKED, card_status

    if cfg.critic.kind == "llm":
        status = card_status(cfg.critic.card)
        (log.warning if status.startswith(NEVER_CHECKED) else log.info)("critic: %s", status)


def log_step(step: int, total: int, m: dict[str, object], kl_term: bool) -> None:
    """A step's one log line (kl nan: the run has no KL term, where 0.0000 would read as a policy that did not move).
    The rollout's own seconds and rate, `ahead` when it played during the previous step's update (the step then
    waited `time/rollout_s` + `time/rollout_ahead_wait_s` for it, not its length)."""
    log.info("step %d/%d reward %.3f | queries %.1f concluded %.0f%% | kl %.4f clip %.3f | "
             "rollout %.1fs%s (%.0f tok/s) update %.1fs", step, total,
             m["reward/episode_total_mean"], m["episode/queries_mean"], m["episode/concluded_pct"],
             m.get("update/kl", float("nan")) if kl_term else float("nan"), m.get("update/clip_frac", float("nan")),
             m["time/played_s"], " ahead" if m["rollout/ahead"] else "", m["rollout/tokens_per_s"], m["time/update_s"])


class Trainer:
    """Builds a training run's pieces and runs AAC steps on them."""

    def __init__(self, cfg: TrainConfig, out_dir: Path, run: Optional[tuple[TrainConfig, Optional[ResumePoint]]] = None):
        """`run`: what `run_config(cfg, out_dir)` gave, where the caller already asked (aac.train checks it first)."""
        cfg, point = run or run_config(cfg, out_dir)  # a resumed run's own config
        self.cfg, self.out_dir = cfg, out_dir
        self.budget = TimeBudget(cfg.time_budget_s, cfg.time_budget_min_steps)  # counts from here
        seed_everything(cfg.seed)
        self.instances = training_instances(cfg)
        self.order = DataOrder(len(self.instances), cfg.rollout.functions_per_step, cfg.seed)
        self.total_steps = cfg.max_steps or self.order.steps_per_epoch * cfg.learner.epochs
        log.info("%d instances, %d steps per epoch, %d steps", len(self.instances), self.order.steps_per_epoch,
                 self.total_steps)
        t0 = time.perf_counter()
        log_critic_card(cfg)
        self.pieces = build_run(cfg)
        log.info("engine (%s), learner (%s), %d rollout worker(s) up in %.1fs [%s]", cfg.rollout.engine,
                 cfg.learner.backend, cfg.rollout.num_workers, time.perf_counter() - t0, cfg.rollout.placement)
        tolerance = cfg.sync_tolerance or default_tolerance(cfg.model.dtype, cfg.learner.dtype)
        self.adapter_sync = AdapterSync(self.pieces, out_dir / "adapters", sync_adapter=cfg.sync_adapter, keep=cfg.keep_adapters,
                                        check_sync=cfg.check_sync, tolerance=tolerance, check_every=cfg.sync_check_every)
        self.supervised = Supervisor(self.pieces, cfg.max_actor_restarts, self._restore, cfg.watchdog)
        self.held_out = HeldOutEval(cfg, self.pieces)
        self.ckpt_root, self.states = out_dir / "checkpoints", LearnerStates(out_dir / "learner")
        self.step, self.version, ahead = resume(cfg, point, self.learner, out_dir / "metrics.jsonl")
        self.ahead = RolloutAhead(cfg.rollout.max_off_policy_steps, self.total_steps, collected=ahead)
        # what a rebuilt piece restores: this version's learner state (and the updates after it) and adapter
        # (version 0: the fresh LoRA, B = 0, or learner.init_adapter)
        self.supervised("start", lambda: (self.states.commit(self.learner, self.version),
                                          self.adapter_sync.sync(self.version)))
        self.metrics = MetricsLog(out_dir, cfg, OmegaConf.to_container(cfg, resolve=True))
        self.episode_log = EpisodeLog.for_run(out_dir, cfg, self.instances, resumed_at=self.step)

    @property
    def engine(self) -> Engine:
        assert self.pieces.actor is not None  # a training run's pieces
        return self.pieces.actor

    @property
    def learner(self) -> LearnerHandle:
        assert self.pieces.learner is not None
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
        return turn_advantages(batch, self.cfg.rewards)

    def samples(self, batch: RolloutBatch, advantages: list[list[float]]) -> list[Sample]:
        return learner_samples(batch, advantages)

    # ------------------------------------------------------------------ the loop

    def _restore(self, rebuilt: list[str]) -> None:
        if self.learner.name in rebuilt:
            self.states.restore(self.learner)
        if set(rebuilt) - {self.learner.name}:  # an engine or worker: the rollout sent ahead is lost with it
            self.ahead.drop()
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
        with timed(m, "time/advantages_s"):
            adv = self.advantages(batch)
            samples, probe = self.samples(batch, adv), probe_of(batch, self.cfg.sync_probe_tokens)
        before = self.supervised("probe", lambda: self.adapter_sync.probe_before(probe, self.version + 1))
        if self.ahead.plays_ahead(nxt):  # step t+1's rollout runs while step t updates
            self.ahead.launch(nxt, self.version, lambda: self.launch(self.groups(nxt), step=nxt))
        self.supervised("sync check", self.adapter_sync.check_pending)  # the last sync's, deferred
        self.episode_log.write(nxt, batch, adv)  # while the next rollout plays
        with timed(m, "time/update_s"):
            upd = self.supervised("update", lambda: self.states.update(self.learner, samples))
        if self.ahead.on:  # the adapter is written while the rollout sent ahead plays
            self.supervised("adapter sync", lambda: self.adapter_sync.save(self.version + 1))
        with timed(m, "time/rollout_ahead_wait_s"):
            self.supervised("rollout", self.ahead.collect)
        m.update(lag_metrics(self.version - served, upd))
        self.version += 1
        defer = self.ahead.plays_ahead(nxt)  # checked while the next step's rollout plays
        m.update(self.supervised("adapter sync", lambda: self.adapter_sync.sync(self.version, probe, before, defer=defer)))
        m["faults/actor_restarts"], m["faults/retried_phases"] = self.supervised.restarts, self.supervised.retries - retries
        with timed(m, "time/metrics_s"):
            m.update(step_metrics(batch, adv, upd, self.step + 1, self.cfg.rewards.stop_threshold))
        m["rollout/ahead"], m["adapter_version"] = float(ahead is not None), self.version
        m["uids"] = [self.instances[i].uid for i in idx]  # what step t trained on
        return m

    def evaluate(self) -> dict[str, float]:
        return self.supervised("held-out evaluation", lambda: self.held_out.metrics(self.rollout))

    def save(self) -> None:
        """Checkpoint the last complete step: the adapter its sync wrote, the learner's state (written now: the
        checkpoint cadence is the learner state's) and the rollout collected ahead."""
        self.supervised("sync check", self.adapter_sync.check_pending)  # a deferred one: the adapter saved is checked
        if self.states.saved != self.version:
            self.supervised("checkpoint", lambda: self.states.commit(self.learner, self.version))
        state = {"step": self.step, "version": self.version, "config_hash": checkpoint.config_hash(self.cfg)}
        path = checkpoint.save(self.ckpt_root, self.step, adapter=self.adapter_sync.path(self.version),
                               learner_state=self.states.path(self.version), trainer_state=state, ahead=self.ahead.collected,
                               keep=self.cfg.keep_checkpoints)
        log.info("checkpoint %s", path)

    def run(self) -> dict[str, Any]:
        cfg, last = self.cfg, {}
        self.budget.steps_start()
        with bar(self.total_steps, "train", enabled=cfg.logging.progress, completed=self.step) as advance:
            while self.step < self.total_steps:
                try:
                    m = self.train_step()
                except RestartLimit as e:  # a checkpoint of the last complete step where its pieces hold it
                    with contextlib.suppress(RestartLimit):
                        if e.held:
                            self.save()
                    raise SystemExit(f"aac: {e}; {newest_checkpoint(self.ckpt_root)}") from None
                self.step += 1
                if cfg.eval_every and self.step % cfg.eval_every == 0:
                    with timed(m, "time/eval_s"):
                        m.update(self.evaluate())
                self.metrics.write(self.step, m)
                self.episode_log.table(self.metrics.wandb, self.step)
                log_step(self.step, self.total_steps, m, kl_term=bool(cfg.learner.kl_coef))
                spent = self.budget.step_done()
                if (cfg.save_every and self.step % cfg.save_every == 0) or self.step == self.total_steps or spent:
                    self.save()
                advance(1)
                last = m
                if spent and self.step < self.total_steps:
                    self.budget.log_end(self.step, self.total_steps)
                    break
        return last

    def close(self) -> None:
        self.metrics.close()
        self.pieces.close()
