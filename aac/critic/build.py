"""The critic a rollout worker scores with: `critic.kind` picks the LLM critic, the scripted one or the mutants one."""

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
    scores pass `stop_threshold` (`rewards.stop_threshold`) at the `critic.scripted_k`-th informative call;
    `mutants`: `MutantsCritic` (no engine), whose hypothesis score is the share of the row's mutants killed."""
    if cfg.kind in ("scripted", "mutants"):
        from aac.critic.mutants import MutantsCritic
        from aac.critic.scripted import ScriptedCritic

        scripted = ScriptedCritic(cfg, stop_threshold=stop_threshold, caller=caller)
        # the mutants critic scores rows that kept no mutant by the scripted rule
        return scripted if cfg.kind == "scripted" else MutantsCritic(cfg, fallback=scripted, caller=caller)
    if engine is None:
        raise ValueError("critic.kind=llm needs an engine")
    from aac.critic.critic import PrivilegedCritic

    return PrivilegedCritic(engine, cfg, caller=caller)
