"""Samples (one per turn) into right-padded micro-batches that fit a token budget."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Optional

import torch

from aac.rewards.advantages import token_advantages


@dataclass
class Sample:
    """One generated turn: all its completion tokens get `advantage`; prompt tokens get no loss.

    `sampling_logprobs` are the engine's log-probs of `completion_ids` as it sampled them; they only
    enter the truncated importance weight (the PPO ratio's pi_old is the learner's own, docs/method.md §7.2).
    Empty: no weight (1).
    """

    prompt_ids: list[int]
    completion_ids: list[int]
    sampling_logprobs: list[float] = field(default_factory=list)
    advantage: float = 0.0

    def __len__(self) -> int:
        return len(self.prompt_ids) + len(self.completion_ids)

    def check(self) -> None:
        if not self.prompt_ids or not self.completion_ids:
            raise ValueError(f"Sample needs a non-empty prompt and completion, got {len(self.prompt_ids)} "
                             f"prompt and {len(self.completion_ids)} completion tokens")
        if self.sampling_logprobs and len(self.sampling_logprobs) != len(self.completion_ids):
            raise ValueError(f"Sample has {len(self.sampling_logprobs)} sampling_logprobs for "
                             f"{len(self.completion_ids)} completion tokens")


@dataclass
class MicroBatch:
    """Tensors of shape [B, L] (tokens) and [B, L-1] (per predicted token: position j scores token j+1)."""

    input_ids: torch.Tensor
    attention_mask: torch.Tensor
    old_logp: torch.Tensor  # the learner's pi_old; NaN where not given (then: this pass's, detached)
    sampling_logp: torch.Tensor  # the engine's; NaN where the sample brought none
    adv: torch.Tensor
    loss_mask: torch.Tensor
    first: int  # first position with loss in any row: logits are only computed from here on

    @property
    def tokens(self) -> int:
        return int(self.attention_mask.sum())

    def to(self, device: torch.device) -> MicroBatch:
        return MicroBatch(self.input_ids.to(device), self.attention_mask.to(device), self.old_logp.to(device),
                          self.sampling_logp.to(device), self.adv.to(device), self.loss_mask.to(device), self.first)


def plan_micro_batches(lengths: Sequence[int], budget: int) -> list[list[int]]:
    """Group indices so that rows x longest length <= budget (a longer sample rides alone).

    Longest first, so rows of one micro-batch have similar lengths and little padding.
    """
    batches: list[list[int]] = []
    current: list[int] = []
    for i in sorted(range(len(lengths)), key=lambda i: -lengths[i]):
        # sorted longest first: the first index of `current` sets its padded length
        if current and (len(current) + 1) * lengths[current[0]] > budget:
            batches.append(current)
            current = []
        current.append(i)
    if current:
        batches.append(current)
    return batches


def completion_logps(batch: MicroBatch, samples: Sequence[Sample], logp: torch.Tensor) -> list[list[float]]:
    """Per sample (a row of `batch`), its completion tokens' entries of a [B, L-1] `logp`."""
    return [logp[row, len(s.prompt_ids) - 1:len(s) - 1].tolist() for row, s in enumerate(samples)]


def collate(samples: Sequence[Sample], pad_id: int = 0,
            old_logprobs: Optional[Sequence[list[float]]] = None) -> MicroBatch:
    """Right-padded tensors; `old_logprobs[i]` (optional) is sample i's pi_old per completion token."""
    width = max(len(s) for s in samples)
    shape = (len(samples), width)
    input_ids = torch.full(shape, pad_id, dtype=torch.long)
    attention_mask = torch.zeros(shape, dtype=torch.long)
    old_logp = torch.full((len(samples), width - 1), float("nan"))
    sampling_logp = torch.full((len(samples), width - 1), float("nan"))
    adv = torch.zeros(len(samples), width - 1)
    loss_mask = torch.zeros(len(samples), width - 1, dtype=torch.bool)
    for row, s in enumerate(samples):
        p, c = len(s.prompt_ids), len(s.completion_ids)
        input_ids[row, : p + c] = torch.tensor(s.prompt_ids + s.completion_ids)
        attention_mask[row, : p + c] = 1
        token_adv, mask = token_advantages(p, c, s.advantage)
        # drop position 0 (nothing predicts it): position j now holds token j+1's values
        adv[row, : p + c - 1] = torch.tensor(token_adv[1:])
        loss_mask[row, : p + c - 1] = torch.tensor(mask[1:], dtype=torch.bool)
        if s.sampling_logprobs:
            sampling_logp[row, p - 1 : p + c - 1] = torch.tensor(s.sampling_logprobs)
        if old_logprobs is not None:
            old_logp[row, p - 1 : p + c - 1] = torch.tensor(old_logprobs[row])
    first = min(len(s.prompt_ids) for s in samples) - 1
    return MicroBatch(input_ids, attention_mask, old_logp, sampling_logp, adv, loss_mask, first)
