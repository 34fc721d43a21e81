"""The supervised warm-start loss: token-mean negative log-likelihood of the completion tokens."""

from __future__ import annotations

from typing import Optional

import torch


def sft_loss(logp: torch.Tensor, mask: torch.Tensor, num_tokens: Optional[float] = None) -> torch.Tensor:
    """Mean of -log p over the tokens where `mask` is 1 (the reply; prompt tokens carry no loss).

    `num_tokens` is the completion-token count of the whole update batch, so the losses of its
    micro-batches add up to the batch's (as in `grpo_loss`); default: the mask's own count."""
    on = mask.bool()
    n = on.sum().clamp(min=1) if num_tokens is None else num_tokens
    return torch.where(on, -logp, 0.0).sum() / n
