"""The GRPO loss: clipped surrogate on per-token advantages, k3 KL to the reference, token mean; and
the truncated importance weight that corrects for the engine's sampling numerics (TIS)."""

from __future__ import annotations

from typing import Optional

import torch


def truncated_is_weight(old_logp: torch.Tensor, sampling_logp: torch.Tensor, mask: torch.Tensor,
                        cap: Optional[float]) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """min(pi_learner / pi_engine, cap) per token (SkyRL's and verl's TIS), detached; 1 where the engine
    gave no log-prob (NaN) or `cap` is None.

    `old_logp` is the learner's pi_old: the engine sampled with the same weights, so the ratio is only
    the numeric gap of its kernels (bf16) to the learner's. Sums over the masked tokens with an engine
    log-prob, for the caller to pool across micro-batches: tokens, gap (sum |old - sampling|), weight
    (sum of the untruncated ratio), weight_max, truncated (tokens above the cap).
    """
    on = mask.bool() & ~torch.isnan(sampling_logp)
    log_ratio = torch.where(on, old_logp.detach() - sampling_logp, 0.0)
    ratio = torch.exp(log_ratio)
    weight = ratio if cap is None else ratio.clamp(max=cap)
    sums = {
        "tokens": on.sum(),
        "gap": torch.where(on, log_ratio.abs(), 0.0).sum(),
        "weight": torch.where(on, ratio, 0.0).sum(),
        "weight_max": torch.where(on, ratio, 0.0).max(),
        "truncated": (on & (ratio > cap)).sum() if cap is not None else on.new_zeros((), dtype=torch.long),
    }
    return torch.where(on, weight, 1.0), sums


def grpo_loss(logp: torch.Tensor, old_logp: torch.Tensor, ref_logp: Optional[torch.Tensor], adv: torch.Tensor,
              mask: torch.Tensor, clip_eps: float, kl_coef: float, num_tokens: Optional[float] = None,
              is_weight: Optional[torch.Tensor] = None) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Token-mean GRPO loss over the tokens where `mask` is 1; all tensors share one shape.

    `num_tokens` is the token count of the whole update batch: with it, the losses (and metrics) of
    its micro-batches add up to the loss of the batch as one, so accumulated gradients match.
    Default: the mask's own token count. `ref_logp=None` or `kl_coef=0` drops the KL term.
    `is_weight` (detached, e.g. `truncated_is_weight`) scales each token's surrogate.
    Metrics (detached, normalised like the loss): pg_loss, kl, clip_frac.
    """
    on = mask.bool()
    n = on.sum().clamp(min=1) if num_tokens is None else num_tokens
    # masked positions may hold any finite junk: zero their log-ratios so exp() cannot overflow
    log_ratio = torch.where(on, logp - old_logp, 0.0)
    ratio = torch.exp(log_ratio)
    unclipped = ratio * adv
    clipped = ratio.clamp(1.0 - clip_eps, 1.0 + clip_eps) * adv
    pg = -torch.minimum(unclipped, clipped)
    if is_weight is not None:
        pg = pg * is_weight
    if ref_logp is not None and kl_coef != 0.0:
        d = torch.where(on, ref_logp - logp, 0.0)
        kl = torch.exp(d) - d - 1.0  # k3: unbiased, always >= 0
    else:
        kl = torch.zeros_like(pg)
    per_token = pg + kl_coef * kl
    loss = torch.where(on, per_token, 0.0).sum() / n
    with torch.no_grad():
        metrics = {
            "pg_loss": torch.where(on, pg, 0.0).sum() / n,
            "kl": torch.where(on, kl, 0.0).sum() / n,
            "clip_frac": (on & (clipped < unclipped)).sum() / n,
        }
    return loss, metrics
