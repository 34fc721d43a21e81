"""Step rewards of one episode under the configured schedule, and what a failed critic masked.

`aac_potential` (default, aac/rewards/potential.py) is computed by episode; the paper's table and
its ablations (aac/rewards/table.py) step by step. Critic scores are per step: None where the step
asked for no judgment (`judgment_kind` is None) or the critic gave no valid rating or no reply.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Optional

from aac.config import RewardConfig
from aac.rewards.potential import potential_rewards
from aac.rewards.table import step_reward
from aac.rewards.terms import format_penalty, judgment_kind

if TYPE_CHECKING:
    from aac.env.protocol import StepRecord


def _check_lengths(steps: Sequence[StepRecord], scores: Sequence[Optional[float]], who: str) -> None:
    if len(steps) != len(scores):
        raise ValueError(f"{who}: {len(steps)} steps but {len(scores)} scores")


def episode_rewards(steps: Sequence[StepRecord], scores: Sequence[Optional[float]], cfg: RewardConfig) -> list[float]:
    """The reward of each step of one episode; `scores[i]` belongs to `steps[i]`."""
    _check_lengths(steps, scores, "episode_rewards")
    if cfg.schedule == "aac_potential":
        return potential_rewards(steps, scores, cfg)
    return [step_reward(step, score, cfg) for step, score in zip(steps, scores)]


def format_penalties(steps: Sequence[StepRecord], cfg: RewardConfig) -> list[float]:
    """The format penalty (`format_penalty`: 0 or -p_parse) each step's reward holds; `final` pays none."""
    return [0.0 if cfg.schedule == "final" else format_penalty(step, cfg) for step in steps]


def masked_judgments(steps: Sequence[StepRecord], scores: Sequence[Optional[float]], cfg: RewardConfig) -> list[Optional[str]]:
    """Per step, the judgment kind whose score is missing (so its judged terms were left out), else
    None: count these to watch the critic (`collections.Counter(filter(None, ...))`)."""
    _check_lengths(steps, scores, "masked_judgments")
    return [judgment_kind(step, cfg) if score is None else None for step, score in zip(steps, scores)]
