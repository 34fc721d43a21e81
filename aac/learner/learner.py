"""The GRPO learner: LoRA policy, micro-batches by token budget, one optimizer step per update.

One `update(samples)` is one optimizer step over all the samples (the turns of a batch of groups):
the token-mean loss is taken over every completion token of the batch, so micro-batching changes
memory, not the gradient. A batch whose advantages are all zero carries no policy signal and is
skipped without a forward pass (weights, optimizer and scheduler untouched).
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Optional

import torch
from peft import get_peft_model_state_dict, set_peft_model_state_dict
from transformers import PreTrainedModel

from aac.learner.backends import make_backend
from aac.learner.batching import Sample, collate, plan_micro_batches
from aac.learner.grpo import grpo_loss
from aac.learner.policy import add_lora, load_adapter_weights, load_base_model, token_logps
from aac.learner.sft_loss import sft_loss

LOSS_METRICS = ("loss", "pg_loss", "kl", "clip_frac")


def _snapshot(value: Any) -> Any:
    """Clone every tensor in a nested state: optimizer state dicts hold views of live buffers."""
    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    if isinstance(value, dict):
        return {k: _snapshot(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_snapshot(v) for v in value)
    return value


def _device() -> torch.device:
    if torch.cuda.is_available():
        return torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
    return torch.device("cpu")


class Learner:
    """`cfg` is a `LearnerConfig`; `base_model` (a loaded HF model) replaces loading `model_path`."""

    def __init__(self, cfg: Any, model_path: str, seed: int = 0, *, base_model: Optional[PreTrainedModel] = None):
        self.cfg = cfg
        self.device = _device()
        base = base_model if base_model is not None else load_base_model(model_path, cfg.dtype)
        self.pad_id = base.config.pad_token_id if base.config.pad_token_id is not None else 0
        self.policy = add_lora(base, cfg, seed)
        if getattr(cfg, "init_adapter", None):  # a warm start (e.g. aac.sft's adapter) instead of B = 0
            load_adapter_weights(self.policy, cfg.init_adapter)
        self.backend = make_backend(self.policy, cfg, self.device)
        self.steps = 0  # optimizer steps taken

    def trainable_parameters(self) -> dict[str, torch.nn.Parameter]:
        return {n: p for n, p in self.policy.named_parameters() if p.requires_grad}

    def compute_gradients(self, samples: Sequence[Sample]) -> dict[str, float]:
        """This batch's gradients (micro-batches accumulated) on the trainable parameters; no step."""
        if not samples:
            raise ValueError("Learner: no samples")
        for s in samples:
            s.check()
        cfg = self.cfg
        loss_tokens = sum(len(s.completion_ids) for s in samples)
        totals = dict.fromkeys(LOSS_METRICS, 0.0)
        tokens = micro_batches = 0
        self.backend.zero_grad()
        self.policy.train()
        for indices in plan_micro_batches([len(s) for s in samples], cfg.micro_batch_tokens):
            batch = collate([samples[i] for i in indices], self.pad_id).to(self.device)
            ref = None
            if cfg.kl_coef != 0.0:
                with torch.no_grad(), self.policy.disable_adapter():
                    ref = token_logps(self.backend, batch)
            logp = token_logps(self.backend, batch)
            # no engine log-probs: on-policy, ratio 1 (the surrogate's gradient is adv * grad logp)
            old = torch.where(torch.isnan(batch.old_logp), logp.detach(), batch.old_logp)
            loss, metrics = grpo_loss(logp, old, ref, batch.adv, batch.loss_mask, cfg.clip_eps, cfg.kl_coef,
                                      num_tokens=loss_tokens)
            self.backend.backward(loss)
            totals["loss"] += loss.item()
            for key, value in metrics.items():
                totals[key] += value.item()
            tokens += batch.tokens
            micro_batches += 1
        return {**totals, "tokens": tokens, "loss_tokens": loss_tokens, "micro_batches": micro_batches}

    def update(self, samples: Sequence[Sample]) -> dict[str, Any]:
        """One optimizer step; metrics: loss, pg_loss, kl, clip_frac (NaN when skipped), tokens,
        loss_tokens, micro_batches, tokens_per_s, grad_norm, skipped, steps."""
        if not samples:
            raise ValueError("Learner.update: no samples")
        if all(s.advantage == 0.0 for s in samples):
            return {**dict.fromkeys(LOSS_METRICS, math.nan), "tokens": sum(len(s) for s in samples),
                    "loss_tokens": sum(len(s.completion_ids) for s in samples), "micro_batches": 0,
                    "tokens_per_s": 0.0, "grad_norm": math.nan, "skipped": True, "steps": self.steps}
        start = time.perf_counter()
        metrics = self.compute_gradients(samples)
        grad_norm = self.backend.step()
        self.steps += 1
        elapsed = time.perf_counter() - start
        return {**metrics, "tokens_per_s": metrics["tokens"] / elapsed, "grad_norm": grad_norm,
                "skipped": False, "steps": self.steps}

    def sft_update(self, samples: Sequence[Sample]) -> dict[str, Any]:
        """One optimizer step of token-mean NLL on the completion tokens (prompt tokens masked);
        metrics: loss (the batch's mean NLL per completion token), loss_tokens, grad_norm, steps."""
        if not samples:
            raise ValueError("Learner.sft_update: no samples")
        for s in samples:
            s.check()
        loss_tokens = sum(len(s.completion_ids) for s in samples)
        total = 0.0
        self.backend.zero_grad()
        self.policy.train()
        for indices in plan_micro_batches([len(s) for s in samples], self.cfg.micro_batch_tokens):
            batch = collate([samples[i] for i in indices], self.pad_id).to(self.device)
            loss = sft_loss(token_logps(self.backend, batch), batch.loss_mask, num_tokens=loss_tokens)
            self.backend.backward(loss)
            total += loss.item()
        grad_norm = self.backend.step()
        self.steps += 1
        return {"loss": total, "loss_tokens": loss_tokens, "grad_norm": grad_norm, "steps": self.steps}

    @torch.no_grad()
    def token_logprobs(self, prompt_ids: list[int], completion_ids: list[int]) -> list[float]:
        """Per-token log-probs of `completion_ids` after `prompt_ids` under the current policy."""
        sample = Sample(list(prompt_ids), list(completion_ids))
        sample.check()
        batch = collate([sample], self.pad_id).to(self.device)
        self.policy.eval()
        logp = token_logps(self.backend, batch)
        start = len(prompt_ids) - 1
        return logp[0, start:start + len(completion_ids)].tolist()

    def save_adapter(self, path: str | Path) -> None:
        """peft format (adapter_config.json + adapter_model.safetensors): PeftModel.from_pretrained
        and vLLM's LoRARequest both load it."""
        self.policy.save_pretrained(str(path), safe_serialization=True)

    def state_dict(self) -> dict[str, Any]:
        """A snapshot (copies, not views of live tensors): adapter, optimizer, scheduler, steps."""
        adapter = {k: v.detach().cpu().clone() for k, v in get_peft_model_state_dict(self.policy).items()}
        return {"adapter": adapter, **_snapshot(self.backend.state_dict()), "steps": self.steps}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        result = set_peft_model_state_dict(self.policy, state["adapter"])
        unexpected = getattr(result, "unexpected_keys", [])
        if unexpected:
            raise ValueError(f"Learner.load_state_dict: adapter keys not in this model, e.g. {unexpected[0]}")
        self.backend.load_state_dict(state)
        self.steps = state["steps"]
