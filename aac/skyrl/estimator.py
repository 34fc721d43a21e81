"""Our advantage estimators (`rewards.advantage`: turn by default, episode, final) as one SkyRL advantage
estimator, "aac", registered with SkyRL's `AdvantageEstimatorRegistry`.

SkyRL's step-wise training makes one row per turn; its own step-wise branch hands an estimator only
each trajectory's last row and broadcasts that advantage to every turn (aac/skyrl/trainer.py hands
ours every row). Here every row is a step: its reward is the sum of its token rewards, its episode
ends at the next `is_last_step`, its group is its `index` (the prompt's uid), and its phase is fixed
by its place in the episode (`phase_of_turn`). The advantages are `aac.rewards.step_advantages` of
those groups, the numbers `aac.train` computes, spread over each row's response tokens.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Optional

from aac.env.protocol import phase_of_turn
from aac.rewards.advantages import step_advantages
from aac.skyrl.translate import ESTIMATOR

if TYPE_CHECKING:
    import torch


def episodes_of(is_last_step: Sequence[bool]) -> list[range]:
    """The rows of each episode: consecutive, each run ending at a last step."""
    out, start = [], 0
    for row, last in enumerate(is_last_step):
        if last:
            out.append(range(start, row + 1))
            start = row + 1
    if start != len(is_last_step):
        raise ValueError(f"{ESTIMATOR}: is_last_step leaves rows {start}..{len(is_last_step) - 1} in no episode")
    return out


def step_credit(token_level_rewards: torch.Tensor, response_mask: torch.Tensor, index: Sequence[object],
                is_last_step: Optional[Sequence[bool]] = None, *, advantage: str, w_step: float, eps: float,
                **_: Any) -> tuple[torch.Tensor, torch.Tensor]:
    """SkyRL's estimator signature (returns advantages and returns, both [rows, tokens]); the rest of
    its keyword arguments (config, gamma, values, ...) do not enter our estimators."""
    if is_last_step is None:
        raise ValueError(f"advantage estimator {ESTIMATOR!r} scores every turn: it needs the step-wise rows and "
                         "is_last_step, which aac.skyrl's trainer gives it (python -m aac.skyrl)")
    rewards = token_level_rewards.sum(dim=-1).tolist()
    groups: dict[object, list[range]] = {}
    for episode in episodes_of(is_last_step):
        groups.setdefault(index[episode[0]], []).append(episode)
    per_row = [0.0] * len(rewards)
    for episodes in groups.values():
        steps = [[(phase_of_turn(t), rewards[row]) for t, row in enumerate(episode)] for episode in episodes]
        for episode, values in zip(episodes, step_advantages(steps, advantage, w_step, eps)):
            for row, value in zip(episode, values):
                per_row[row] = value
    import torch

    scores = torch.tensor(per_row, dtype=token_level_rewards.dtype, device=token_level_rewards.device)
    advantages = scores[:, None] * response_mask.to(scores.dtype)
    return advantages, advantages.clone()


def register_estimator(advantage: str, w_step: float, eps: float) -> None:
    """Register "aac" with SkyRL's registry (replacing an earlier registration), with these settings
    (`rewards.advantage`, `rewards.w_step`, `rewards.eps`)."""
    from aac.skyrl._skyrl import AdvantageEstimatorRegistry

    if ESTIMATOR in AdvantageEstimatorRegistry.list_available():
        AdvantageEstimatorRegistry.unregister(ESTIMATOR)
    AdvantageEstimatorRegistry.register(ESTIMATOR, functools.partial(
        step_credit, advantage=str(advantage), w_step=float(w_step), eps=float(eps)))
