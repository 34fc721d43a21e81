"""The actor: a `from_pretrained` base model + a peft LoRA adapter; the reference is the same model
with the adapter disabled (no second copy of the weights)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Optional

import torch
from peft import LoraConfig, PeftModel, get_peft_model
from torch import nn
from torch.utils.checkpoint import checkpoint
from transformers import AutoModelForCausalLM, PreTrainedModel
from transformers.modeling_layers import GradientCheckpointingLayer

from aac.learner.batching import MicroBatch
from aac.learner.fused_mlp import use_fused_mlp
from aac.learner.packing import PackedBatch
from aac.learner.tree_attention import tree_inputs

if TYPE_CHECKING:
    from aac.config import LearnerConfig

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def torch_dtype(name: str) -> torch.dtype:
    if name not in DTYPES:
        raise ValueError(f"learner.dtype={name!r} is not one of: {', '.join(DTYPES)}")
    return DTYPES[name]


def load_base_model(model_path: str, dtype: str) -> PreTrainedModel:
    return AutoModelForCausalLM.from_pretrained(model_path, dtype=torch_dtype(dtype))


def _target_modules(value: str | Iterable[object]) -> str | list[str]:
    if isinstance(value, str):
        return value
    return [str(v) for v in value]  # a list or an OmegaConf ListConfig


def add_lora(model: PreTrainedModel, cfg: LearnerConfig, seed: int) -> PeftModel:
    """Wrap `model` with a fresh LoRA adapter (B = 0, so the policy starts equal to the base).

    peft keeps the adapter weights in float32 over a bf16/fp16 base (autocast_adapter_dtype).
    """
    for p in model.parameters():
        p.requires_grad_(False)
    lora = LoraConfig(r=cfg.lora_r, lora_alpha=cfg.lora_alpha, lora_dropout=cfg.lora_dropout,
                      target_modules=_target_modules(cfg.target_modules), task_type="CAUSAL_LM")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)  # the adapter's A init; the caller's RNG stream is left alone
        policy = get_peft_model(model, lora)
    if cfg.gradient_checkpointing:
        policy.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    _checkpoint_first(policy, cfg)
    if cfg.fused_mlp:
        use_fused_mlp(policy)
    policy.config.use_cache = False
    return policy


def _checkpoint_first(policy: PeftModel, cfg: LearnerConfig) -> None:
    """Leave decoder layers from `learner.checkpoint_layers` on un-checkpointed."""
    n = cfg.checkpoint_layers
    if n is None:
        return
    layers = [m for m in policy.modules() if isinstance(m, GradientCheckpointingLayer)]
    if not cfg.gradient_checkpointing or isinstance(n, bool) or not isinstance(n, int) or not 0 <= n <= len(layers):
        raise ValueError(f"learner.checkpoint_layers must be an int in 0..{len(layers)} (the model's layers) with "
                         f"learner.gradient_checkpointing=true, got {n!r}")
    for layer in layers[n:]:
        layer.gradient_checkpointing = False


def load_adapter_weights(policy: PeftModel, path: str) -> None:
    """Load a saved peft adapter (a folder with adapter_model.safetensors, or a checkpoint holding
    one in adapter/) into `policy`'s fresh LoRA; its rank and target modules must match."""
    from pathlib import Path

    from peft import set_peft_model_state_dict
    from safetensors.torch import load_file

    folder = Path(path).expanduser()
    folder = folder / "adapter" if not (folder / "adapter_model.safetensors").exists() else folder
    file = folder / "adapter_model.safetensors"
    if not file.exists():
        raise FileNotFoundError(f"learner.init_adapter={path}: no adapter_model.safetensors there or in adapter/")
    state = load_file(str(file))
    own = {k: v.shape for k, v in policy.state_dict().items() if "lora_" in k}
    try:
        result = set_peft_model_state_dict(policy, state)
    except RuntimeError as e:  # shape mismatch: another rank
        raise ValueError(f"learner.init_adapter={path} does not fit this LoRA (learner.lora_r, "
                         f"target_modules): {str(e).splitlines()[0]}") from None
    unexpected = getattr(result, "unexpected_keys", None)
    if unexpected or len(state) != len(own):
        raise ValueError(f"learner.init_adapter={path} does not fit this model's LoRA ({len(state)} tensors "
                         f"for {len(own)}{', e.g. ' + unexpected[0] if unexpected else ''})")


def last_hidden(forward: Callable[..., Any], **inputs: Any) -> torch.Tensor:
    """The final (normed) hidden states [B, L, H] of a forward that computes no logits at all."""
    none = torch.zeros(0, dtype=torch.long, device=inputs["input_ids"].device)
    return forward(**inputs, logits_to_keep=none, output_hidden_states=True, use_cache=False).hidden_states[-1]


def _head_logps(head: nn.Module, hidden: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    logits = head(hidden).float()
    return logits.gather(-1, targets.unsqueeze(-1)).squeeze(-1) - torch.logsumexp(logits, dim=-1)


def head_logps(head: nn.Module, hidden: torch.Tensor, targets: torch.Tensor, chunk: int) -> torch.Tensor:
    """log p(targets[t]) from hidden[t] ([T, H], [T] -> [T]), `chunk` positions at a time.

    Each chunk's float32 logits [chunk, vocab] are recomputed in backward (checkpointing) rather than
    kept, so the whole [T, vocab] never exists; 0: all positions at once, nothing recomputed."""
    if chunk < 0:
        raise ValueError(f"learner.logprob_chunk must be >= 0, got {chunk}")
    if not chunk:
        return _head_logps(head, hidden, targets)
    step = functools.partial(_head_logps, head)
    parts = [checkpoint(step, hidden[s:s + chunk], targets[s:s + chunk], use_reentrant=False)
             if hidden.requires_grad else step(hidden[s:s + chunk], targets[s:s + chunk])
             for s in range(0, len(targets), chunk)]
    return torch.cat(parts)


def token_logps(forward: Callable[..., Any], batch: MicroBatch, head: Optional[nn.Module] = None,
                chunk: int = 0) -> torch.Tensor:
    """[B, L-1] log-probs of tokens 1..L-1; positions before `batch.first` (prompt only) are 0.

    Logits are computed only from `batch.first` on (`logits_to_keep`): the shared prompt prefix of
    a micro-batch costs no vocabulary projection. Log-softmax runs in float32. `chunk` > 0 (with
    `head`, the model's lm_head): through `head_logps`, never all logits at once.
    """
    rows, width = batch.input_ids.shape
    targets = batch.input_ids[:, batch.first + 1:]
    if chunk:
        hidden = last_hidden(forward, input_ids=batch.input_ids, attention_mask=batch.attention_mask)
        hidden = hidden[:, batch.first:-1]
        logp = head_logps(head, hidden.reshape(-1, hidden.shape[-1]), targets.reshape(-1), chunk).view(rows, -1)
    else:
        keep = torch.arange(batch.first, width - 1, device=batch.input_ids.device)
        logits = forward(input_ids=batch.input_ids, attention_mask=batch.attention_mask, logits_to_keep=keep,
                         use_cache=False).logits.float()
        logp = logits.gather(-1, targets.unsqueeze(-1)).squeeze(-1) - torch.logsumexp(logits, dim=-1)
    return torch.cat([logp.new_zeros(rows, batch.first), logp], dim=1)


def packed_logps(forward: Callable[..., Any], head: nn.Module, batch: PackedBatch, chunk: int) -> torch.Tensor:
    """[T] log-probs of a packed batch's loss tokens: logits only where a loss token is predicted."""
    hidden = last_hidden(forward, input_ids=batch.input_ids, position_ids=batch.position_ids,
                         **tree_inputs(batch.tree))[0]
    return head_logps(head, hidden[batch.source], batch.targets, chunk)
