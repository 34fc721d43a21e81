"""Where a batch's training signal went: a pure function of its episodes, logged every step.

These are the checks that catch an update that teaches nothing (SkyRL #1492; rllm's silent per-step
no-op): how many generated tokens carry no advantage, how strong the advantage is by phase and turn
position, how many groups had nothing to compare, and what the critic's scores looked like.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import NamedTuple, Optional

from aac.phase import Phase


class Accounting(NamedTuple):
    metrics: dict[str, float]  # flat, `signal/...` and `critic/...` keys
    warnings: list[str]


def _histogram(values: Sequence[float], bins: int) -> list[int]:
    counts = [0] * bins
    for v in values:
        counts[min(int(v * bins), bins - 1)] += 1  # [0, 1/bins), ..., [1 - 1/bins, 1]
    return counts


def signal_accounting(groups: Sequence[Hashable], phases: Sequence[Sequence[Phase]], tokens: Sequence[Sequence[int]],
                      advantages: Sequence[Sequence[float]], rewards: Sequence[Sequence[float]],
                      scores: Mapping[str, Sequence[Optional[float]]], bins: int = 10,
                      warn_zero_share: float = 0.9) -> Accounting:
    """One batch: per episode i its group id, and per turn t its phase, generated-token count,
    advantage and reward; `scores` maps a judgment kind to the critic's scores (None: masked).

    Metrics: `signal/zero_adv_token_frac` (generated tokens whose advantage is exactly 0),
    `signal/abs_adv/{phase}` and `signal/abs_adv/turn_{t}` (mean |advantage| per turn),
    `signal/zero_spread_group_frac` (groups whose episode returns are all equal: no GRPO signal),
    `critic/{kind}/bin_{k}` (score counts in `bins` equal bins of [0, 1]) and `critic/{kind}/masked`.
    Warnings: the update is a no-op (no token has an advantage), or `warn_zero_share` of them have none.
    """
    n = len(groups)
    if not len(phases) == len(tokens) == len(advantages) == len(rewards) == n:
        raise ValueError(f"signal_accounting: {n} group ids, {len(phases)} phase lists, {len(tokens)} token lists, "
                         f"{len(advantages)} advantage lists and {len(rewards)} reward lists")
    if bins < 1:
        raise ValueError(f"signal_accounting: bins must be >= 1, got {bins}")
    metrics: dict[str, float] = {}
    total = zero = 0
    by_key: dict[str, list[float]] = {}
    for i in range(n):
        if not len(phases[i]) == len(tokens[i]) == len(advantages[i]) == len(rewards[i]):
            raise ValueError(f"signal_accounting: episode {i} has {len(phases[i])} phases, {len(tokens[i])} token "
                             f"counts, {len(advantages[i])} advantages and {len(rewards[i])} rewards")
        for t, (phase, count, adv) in enumerate(zip(phases[i], tokens[i], advantages[i])):
            total += count
            zero += count if adv == 0.0 else 0
            for key in (Phase(phase).value, f"turn_{t}"):
                by_key.setdefault(key, []).append(abs(adv))
    zero_frac = zero / total if total else 1.0
    metrics["signal/zero_adv_token_frac"] = zero_frac
    metrics["signal/generated_tokens"] = float(total)
    for key, values in by_key.items():
        metrics[f"signal/abs_adv/{key}"] = sum(values) / len(values)

    returns: dict[Hashable, list[float]] = {}
    for g, r in zip(groups, rewards):
        returns.setdefault(g, []).append(sum(r))
    flat = sum(max(v) == min(v) for v in returns.values())
    metrics["signal/zero_spread_group_frac"] = flat / len(returns) if returns else 1.0

    for kind, values in scores.items():
        valid = [v for v in values if v is not None]
        for k, count in enumerate(_histogram(valid, bins)):
            metrics[f"critic/{kind}/bin_{k}"] = float(count)
        metrics[f"critic/{kind}/masked"] = float(len(values) - len(valid))
        metrics[f"critic/{kind}/mean"] = sum(valid) / len(valid) if valid else float("nan")

    warnings = []
    if zero == total:
        warnings.append(f"no-op update: none of the batch's {total} generated tokens has a non-zero advantage "
                        f"({flat} of {len(returns)} groups have equal returns)")
    elif zero_frac >= warn_zero_share:
        warnings.append(f"{zero_frac:.0%} of the batch's generated tokens have zero advantage")
    return Accounting(metrics, warnings)
