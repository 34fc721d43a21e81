"""A recipe's full run projected from a few measured steps: start-up, the first step (it carries the
engines' warm-up), the later steps' mean for every step after it, a checkpoint per `save_every`
steps (and the last), a held-out evaluation per `eval_every` steps, and the shut-down."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional


@dataclass
class Measured:
    startup_s: float  # process start to the first step (imports, data, engines, learner, the first sync)
    steps_s: list[float]  # each measured step's wall time, in order
    save_s: float  # one checkpoint
    close_s: float  # the run's pieces closed
    eval_s: Optional[float] = None  # one held-out evaluation (None: not measured)


def saves(total_steps: int, save_every: int) -> int:
    """Checkpoints a run of `total_steps` writes: every `save_every` steps and after the last."""
    periodic = total_steps // save_every if save_every else 0
    return periodic + int(not save_every or total_steps % save_every != 0)


def project(m: Measured, total_steps: int, save_every: int, eval_every: int) -> dict[str, float]:
    """Seconds of each part of the full run and their sum (`total_s`); `step_s` is the per-step time used
    for the steps not measured. Evaluations count 0 s when not measured (`evals` says how many)."""
    if not m.steps_s:
        raise ValueError("project: no measured step")
    later = m.steps_s[1:] or m.steps_s
    step_s = sum(later) / len(later)
    measured = m.steps_s[:total_steps]
    steps_total = sum(measured) + max(total_steps - len(measured), 0) * step_s
    evals = total_steps // eval_every if eval_every else 0
    parts = {"startup_s": m.startup_s, "steps_s": steps_total, "saves_s": saves(total_steps, save_every) * m.save_s,
             "evals_s": evals * (m.eval_s or 0.0), "close_s": m.close_s}
    return {**parts, "total_s": sum(parts.values()), "total_h": sum(parts.values()) / 3600, "step_s": step_s,
            "steps": total_steps, "evals": evals}
