"""Synthetic advantages for preflight (`preflight.synthetic_advantages`): random replies all score alike,
so every advantage is 0 and the learner skips the update (nothing to time). A batch like that gets +1 and
-1 alternating over the episodes of each group (mean 0 in the group, as GRPO's are), every turn of an
episode its episode's: the update then runs every token of the batch, as a real one would."""

from __future__ import annotations

from collections.abc import Sequence


def synthetic_advantages(groups: Sequence[int], advantages: list[list[float]]) -> tuple[list[list[float]], bool]:
    """`advantages` (per episode, per turn) unchanged where any is nonzero; else the synthetic ones, with
    True. `groups[i]`: episode i's group."""
    if any(a != 0.0 for turns in advantages for a in turns):
        return advantages, False
    seen: dict[int, int] = {}
    out = []
    for group, turns in zip(groups, advantages):
        k = seen.get(group, 0)
        seen[group] = k + 1
        out.append([1.0 if k % 2 == 0 else -1.0] * len(turns))
    return out, True
