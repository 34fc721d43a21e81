"""What the learner trains on from a rollout batch: each turn's advantage (the configured estimator, group
by group) and each generated turn as a `Sample`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aac.learner.batching import Sample
from aac.rewards.advantages import batch_advantages

if TYPE_CHECKING:
    from aac.config import RewardConfig
    from aac.rollout.workers import RolloutBatch


def turn_advantages(batch: RolloutBatch, rewards: RewardConfig) -> list[list[float]]:
    """Per-turn advantages, group by group, with `rewards.advantage` (format penalties kept out of the return
    unless `rewards.format_in_return`)."""
    local = None if rewards.format_in_return else [[t.format_penalty for t in ep.turns] for ep in batch.episodes]
    return batch_advantages([(ep.group, ep.uid) for ep in batch.episodes],
                            [[(t.phase, t.reward) for t in ep.turns] for ep in batch.episodes],
                            rewards.advantage, rewards.w_step, rewards.eps, local)


def learner_samples(batch: RolloutBatch, advantages: list[list[float]]) -> list[Sample]:
    """Every turn that generated tokens, with its advantage."""
    return [Sample(prompt_ids=t.prompt_ids, completion_ids=t.token_ids, sampling_logprobs=t.logprobs, advantage=a)
            for ep, adv in zip(batch.episodes, advantages) for t, a in zip(ep.turns, adv) if t.token_ids]
