"""Training metrics: what a rollout batch says about the policy, and where metrics go.

Every metric is named for what it measures. They go to `metrics.jsonl` in the run dir, to
wandb (offline unless told otherwise) and, briefly, to the console; `plot` draws the curves.
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections import defaultdict
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

from aac.phase import Phase

if TYPE_CHECKING:
    from aac.config import TrainConfig
    from aac.rollout.workers import RolloutBatch

log = logging.getLogger("aac.train")


def _mean(xs: list[float]) -> float:
    return sum(xs) / len(xs) if xs else float("nan")


def rollout_metrics(batch: RolloutBatch, stop_threshold: float) -> dict[str, float]:
    """Per-step rollout metrics: rewards per phase, episode shape, parse failures, stops, sandbox calls."""
    from aac.rollout.record import call_counts

    m: dict[str, float] = {}
    by_phase: dict[str, list[float]] = defaultdict(list)
    fails: dict[str, list[float]] = defaultdict(list)
    eps = batch.episodes
    for ep in eps:
        for t in ep.turns:
            by_phase[t.phase].append(t.reward)
            fails[t.phase].append(0.0 if t.parse_ok else 1.0)
    for p in Phase:
        m[f"reward/{p.value}_mean"] = _mean(by_phase[p])
        m[f"parse_fail/{p.value}_rate"] = _mean(fails[p])
    m["reward/episode_total_mean"] = _mean([ep.total_reward for ep in eps])
    m["episode/turns_mean"] = _mean([len(ep.turns) for ep in eps])
    m["episode/queries_mean"] = _mean([ep.num_queries for ep in eps])
    m["episode/concluded_pct"] = 100 * _mean([float(ep.concluded) for ep in eps])
    m["episode/timed_out_pct"] = 100 * _mean([float(ep.timed_out) for ep in eps])
    # premature stop: said YES while the critic rated the final hypothesis <= the stop threshold
    premature = [
        float(ep.turns[-1].score is not None and ep.turns[-1].score <= stop_threshold)
        for ep in eps
        if ep.concluded and ep.turns
    ]
    # none judged (rewards.mask_hypothesis): unknown, not 0
    judged = any(t.judged == "hypothesis" for ep in eps for t in ep.turns)
    m["episode/premature_stop_pct"] = 100 * (sum(premature) / len(eps)) if eps and judged else float("nan")
    # what a stop was based on: the plans' informativeness summed per concluded episode (with the
    # scripted critic, 0/1 scores: the number of informative calls before stopping)
    m["episode/informativeness_at_stop_mean"] = _mean(
        [sum(t.score or 0.0 for t in ep.turns if t.judged == "informativeness") for ep in eps if ep.concluded])
    for k, v in batch.timings.items():
        m[f"time/{k}_s"] = v
    for i, n in sorted(batch.replica_episodes.items()):
        m[f"rollout/episodes_engine{i}"] = n
    for k, v in batch.critic_counts.items():  # this step's counts and rates, merged over workers
        m[f"critic/{k}"] = float(v)
    for k, v in call_counts(ep.record for ep in eps).items():  # a black box that hangs shows as timeouts
        m[f"sandbox/{k}"] = float(v)
    m["rollout/generated_tokens"] = float(batch.generated_tokens)
    m["rollout/turns"] = float(sum(len(ep.turns) for ep in eps))
    m["rollout/prompt_tokens"] = float(sum(len(t.prompt_ids) for ep in eps for t in ep.turns))
    m["rollout/engine_calls"] = float(batch.engine_calls)
    m["rollout/idle_slots_per_call"] = batch.idle_slots / batch.engine_calls if batch.engine_calls else 0.0
    return m


def signal_metrics(batch: RolloutBatch, advantages: list[list[float]], step: int) -> dict[str, float]:
    """Where a batch's training signal went (zero advantages, flat groups, critic scores); its warnings
    logged for `step`."""
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
        log.warning("step %d: %s", step, warning)
    return acc.metrics


def step_metrics(batch: RolloutBatch, advantages: list[list[float]], update: Mapping[str, object], step: int,
                 stop_threshold: float) -> dict[str, object]:
    """A training step's row from its batch and update: `rollout_metrics`, `signal_metrics`, the update's
    numbers (`update/*`) and the rollout's own rate (`rollout/tokens_per_s`, over the seconds it played)."""
    m: dict[str, object] = {**rollout_metrics(batch, stop_threshold), **signal_metrics(batch, advantages, step)}
    m.update({f"update/{k}": v for k, v in update.items() if isinstance(v, (int, float, bool))})
    m["rollout/tokens_per_s"] = batch.generated_tokens / max(batch.timings["played"], 1e-9)
    return m


class MetricsLog:
    """Appends one JSON line per step; mirrors to wandb when enabled."""

    def __init__(self, out_dir: Path, cfg: TrainConfig, config_dict: dict):
        self.path = out_dir / "metrics.jsonl"
        self.wandb = None
        if cfg.logging.wandb_mode != "disabled":
            try:
                import wandb

                self.wandb = wandb.init(
                    project=cfg.logging.project,
                    name=cfg.logging.run_name or out_dir.name,
                    dir=str(out_dir),
                    mode=cfg.logging.wandb_mode,
                    config=config_dict,
                    reinit="finish_previous",
                )
            except Exception as e:  # logging must never stop training
                log.warning("wandb disabled: %s", e)

    def write(self, step: int, metrics: dict[str, Any]) -> None:
        row = {"step": step, **{k: _clean(v) for k, v in metrics.items()}}
        with open(self.path, "a") as f:
            f.write(json.dumps(row) + "\n")
        if self.wandb is not None:
            self.wandb.log({k: v for k, v in row.items() if isinstance(v, (int, float))}, step=step)

    def close(self) -> None:
        if self.wandb is not None:
            self.wandb.finish()


def _clean(v: object) -> object:
    if isinstance(v, float) and (math.isnan(v) or math.isinf(v)):
        return None
    return v


@contextmanager
def timed(into: dict[str, float], key: str) -> Iterator[None]:
    """Add the wall time of the block to `into[key]` (every phase of a step is timed so)."""
    t0 = time.perf_counter()
    try:
        yield
    finally:
        into[key] = into.get(key, 0.0) + time.perf_counter() - t0


def truncate(path: Path, step: int) -> None:
    """Drop the rows after `step` (a resumed run redoes those steps)."""
    rows = [r for r in read(path) if r["step"] <= step]
    tmp = path.with_suffix(".tmp")
    tmp.write_text("".join(json.dumps(r) + "\n" for r in rows))
    tmp.replace(path)


def read(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def plot(rows: list[dict[str, Any]], out: Path, keys: Optional[list[str]] = None) -> Optional[Path]:
    """Save the training curves as one PNG (a panel per metric)."""
    if not rows:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    # behaviour beside the reward: a rising reward alone can be a policy gaming the objective
    keys = keys or [
        "reward/episode_total_mean", "episode/queries_mean", "episode/concluded_pct", "episode/premature_stop_pct",
        "parse_fail/input_rate", "parse_fail/reflect_rate", "critic/hypothesis/mean", "critic/informativeness/mean",
    ]
    keys = [k for k in keys if any(r.get(k) is not None for r in rows)]
    cols = 4
    fig, axes = plt.subplots(math.ceil(len(keys) / cols), cols, figsize=(4 * cols, 3 * math.ceil(len(keys) / cols)),
                             squeeze=False)
    for ax, key in zip(axes.flat, keys):
        pts = [(r["step"], r[key]) for r in rows if r.get(key) is not None]
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", ms=3)
        ax.set_title(key, fontsize=9)
        ax.set_xlabel("step", fontsize=8)
    for ax in list(axes.flat)[len(keys):]:
        ax.axis("off")
    fig.tight_layout()
    fig.savefig(out, dpi=90)
    plt.close(fig)
    return out
