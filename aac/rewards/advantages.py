"""From step rewards to advantages (docs/method.md §7): one group = the G episodes of one function.

Group normalisation is `(x - mean) / (std + eps)` with the *population* std (ddof = 0): it is
defined for any group size, and it is what GRPO implementations use. A group of one, or of equal
values, gets exactly 0 (not the rounding residue of the mean over eps), so a batch without signal
is recognisably one.

- `final`: the last step's reward per episode, normalised in the group, broadcast to every step
  (the release's estimator, kept as an ablation).
- `episode`: the sum of step rewards, normalised in the group, broadcast.
- `turn` (default): the episode advantage plus `w_step * (r - mu_k) / (sigma_k + eps)`, where
  mu_k, sigma_k are over all steps of the same phase kind k in the group. There is no per-index
  baseline: episode lengths are the policy's choice, so steps are compared by kind, not position.

`local[i][t]`, when given, is the part of step t's reward left out of episode i's return (the episode
advantage) and credited by the step advantage alone (`rewards.format_in_return=false`: its format penalty).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from typing import Any, Optional

from aac.config import Advantage
from aac.phase import Phase

ESTIMATORS = tuple(Advantage)  # defined once, in aac.config


def group_normalize(values: Sequence[float], eps: float) -> list[float]:
    """(x - mean) / (population std + eps)."""
    if not values:
        return []
    if max(values) == min(values):
        return [0.0] * len(values)
    mean = sum(values) / len(values)
    std = math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))
    return [(v - mean) / (std + eps) for v in values]


def step_advantages(group: Sequence[Sequence[tuple[Any, float]]], estimator: str, w_step: float,
                    eps: float, local: Optional[Sequence[Sequence[float]]] = None) -> list[list[float]]:
    """Per-step advantages for one group: `group[i][t] = (phase kind, reward)` of step t of episode i."""
    if any(len(episode) == 0 for episode in group):
        raise ValueError("step_advantages: an episode with no steps")
    if local is not None and estimator != "turn":
        raise ValueError(f"step_advantages: a local part of the rewards needs the turn estimator, not {estimator!r}")
    if estimator == "final":
        episode_adv = group_normalize([episode[-1][1] for episode in group], eps)
    else:
        left_out = [sum(parts) for parts in local] if local is not None else [0.0] * len(group)
        episode_adv = group_normalize([sum(r for _, r in episode) - out for episode, out in zip(group, left_out)], eps)
    advantages = [[a] * len(episode) for a, episode in zip(episode_adv, group)]
    if estimator != "turn":
        return advantages

    positions: dict[Phase, list[tuple[int, int]]] = {}
    for i, episode in enumerate(group):
        for t, (kind, _) in enumerate(episode):
            positions.setdefault(Phase(kind), []).append((i, t))
    for where in positions.values():
        for (i, t), z in zip(where, group_normalize([group[i][t][1] for i, t in where], eps)):
            advantages[i][t] += w_step * z
    return advantages


def batch_advantages(groups: Sequence[Hashable], trajectories: Sequence[Sequence[tuple[Phase, float]]],
                     estimator: str, w_step: float, eps: float,
                     local: Optional[Sequence[Sequence[float]]] = None) -> list[list[float]]:
    """Per-step advantages of a whole batch: episode i belongs to group `groups[i]` (its function and
    group index) and is the trajectory `trajectories[i]` of (phase, reward) (with `local[i]`, as in
    `step_advantages`); each group is normalised on its own (`step_advantages`), in episode order."""
    members: dict[Hashable, list[int]] = {}
    for i, g in enumerate(groups):
        members.setdefault(g, []).append(i)
    out: list[list[float]] = [[] for _ in trajectories]
    for idx in members.values():
        parts = None if local is None else [local[i] for i in idx]
        for i, adv in zip(idx, step_advantages([trajectories[i] for i in idx], estimator, w_step, eps, parts)):
            out[i] = adv
    return out


def token_advantages(prompt_len: int, completion_len: int, advantage: float) -> tuple[list[float], list[int]]:
    """Per-token advantages and loss mask over `prompt + completion`: only generated tokens count."""
    if prompt_len < 0 or completion_len < 0:
        raise ValueError(f"token_advantages: negative length ({prompt_len}, {completion_len})")
    mask = [0] * prompt_len + [1] * completion_len
    return [0.0] * prompt_len + [float(advantage)] * completion_len, mask
