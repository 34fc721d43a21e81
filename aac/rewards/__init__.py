"""Step rewards (the SPEC §6 schedule and its ablations) and advantage estimators (SPEC §7)."""

from aac.rewards.advantages import ESTIMATORS, group_normalize, step_advantages, token_advantages
from aac.rewards.schedule import (
    HYPOTHESIS,
    INFORMATIVENESS,
    SCHEDULES,
    b_term,
    episode_rewards,
    judgment_kind,
    length_penalty,
    step_reward,
)

__all__ = [
    "ESTIMATORS", "HYPOTHESIS", "INFORMATIVENESS", "SCHEDULES", "b_term", "episode_rewards",
    "group_normalize", "judgment_kind", "length_penalty", "step_advantages", "step_reward",
    "token_advantages",
]
