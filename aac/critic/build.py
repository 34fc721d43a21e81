"""The critic a rollout worker scores with: `critic.kind` picks the LLM critic or the scripted one."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from aac.engines.base import Engine

if TYPE_CHECKING:
    from aac.config import CriticConfig
    from aac.critic.judgment import Critic
    from aac.env.domains import Caller


def make_critic(engine: Optional[Engine], cfg: CriticConfig, *, caller: Optional[Caller],
                stop_threshold: float) -> Critic:
    """`llm`: `PrivilegedCritic` on `engine`; `scripted`: `ScriptedCritic` (no engine), whose hypothesis
    scores pass `stop_threshold` (`rewards.stop_threshold`) at the `critic.scripted_k`-th informative call."""
    if cfg.kind == "scripted":
        from aac.critic.scripted import ScriptedCritic

        return ScriptedCritic(cfg, stop_threshold=stop_threshold, caller=caller)
    if engine is None:
        raise ValueError("critic.kind=llm needs an engine")
    from aac.critic.critic import PrivilegedCritic

    return PrivilegedCritic(engine, cfg, caller=caller)
