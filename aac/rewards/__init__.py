"""Step rewards (the default `aac_potential`, the docs/method.md §6 table and its ablations), advantage
estimators (docs/method.md §7) and the training-signal accounting of a batch."""

from aac.rewards.accounting import signal_accounting
from aac.rewards.advantages import (
    ESTIMATORS,
    batch_advantages,
    group_normalize,
    step_advantages,
    token_advantages,
)
from aac.rewards.potential import potential_rewards
from aac.rewards.schedule import episode_rewards, format_penalties, masked_judgments
from aac.rewards.table import step_reward
from aac.rewards.terms import (
    HYPOTHESIS,
    INFORMATIVENESS,
    SCHEDULES,
    b_term,
    graded_text,
    judgment_kind,
    length_penalty,
)

__all__ = [
    "ESTIMATORS", "HYPOTHESIS", "INFORMATIVENESS", "SCHEDULES", "b_term", "batch_advantages", "episode_rewards", "format_penalties", "graded_text",
    "group_normalize", "judgment_kind", "length_penalty", "masked_judgments", "potential_rewards",
    "signal_accounting", "step_advantages", "step_reward", "token_advantages",
]
