"""`preflight.shape=typical`: the steps measured at the flagship's typical episode, the recipe's worst case
scaled from them.

A model with random weights (`model=qwen3_8b_random`) never ends a reply or an episode: every turn runs to its
token cap and every episode to `env.max_steps` (the flagship: 40 turns of up to 1,024 tokens), so a step takes
many minutes and measures a case no trained model plays. Capped at `preflight.typical_turns` turns and each
phase's reply at `preflight.typical_reply_tokens`, the same steps measure a typical step; the worst case is
then the typical step's rollout and update scaled by the generated tokens an episode would reach under the
recipe's own caps (the rest of the step, the sync and what waits on it, as measured): a projection from
measured rates, labelled so.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from omegaconf import open_dict

from aac.phase import PHASE_NAMES

if TYPE_CHECKING:
    from omegaconf import DictConfig

    from aac.config import RolloutConfig


def phase_caps(rollout: RolloutConfig) -> dict[str, int]:
    """Each phase's reply budget under a rollout config: its per-phase cap, else its per-turn one."""
    return {p: int(rollout.max_tokens_per_phase.get(p, rollout.max_tokens_per_turn)) for p in PHASE_NAMES}


def capped(cfg: DictConfig) -> DictConfig:
    """`cfg` with episodes and replies no longer than the typical ones (a cap never raises a recipe's own)."""
    out = cfg.copy()
    caps, typical = phase_caps(cfg.rollout), cfg.preflight.typical_reply_tokens
    with open_dict(out):
        out.env.max_steps = min(cfg.env.max_steps, cfg.preflight.typical_turns)
        out.rollout.max_tokens_per_phase = {p: min(caps[p], typical.get(p, caps[p])) for p in PHASE_NAMES}
    return out


def worst_step(row: dict[str, float], episodes: int, recipe: DictConfig) -> dict[str, float]:
    """The recipe's worst step scaled from a measured one (`row`: the numbers of aac.preflight's step row, of
    `episodes` episodes): every episode at `env.max_steps` turns, each reply at its phase's cap."""
    caps = phase_caps(recipe.rollout)
    per_episode = recipe.env.max_steps * sum(caps.values()) / len(caps)
    scale = per_episode * episodes / row["generated_tokens"]
    rollout, update = row.get("rollout_s") or 0.0, row.get("update_s") or 0.0
    rest = max(row["wall_s"] - rollout - update, 0.0)
    return {"scale": scale, "generated_tokens": per_episode * episodes, "rollout_s": rollout * scale,
            "update_s": update * scale, "wall_s": (rollout + update) * scale + rest}
