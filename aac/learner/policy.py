"""The actor: a `from_pretrained` base model + a peft LoRA adapter; the reference is the same model
with the adapter disabled (no second copy of the weights)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from peft import LoraConfig, PeftModel, get_peft_model
from transformers import AutoModelForCausalLM, PreTrainedModel

from aac.learner.batching import MicroBatch

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def torch_dtype(name: str) -> torch.dtype:
    if name not in DTYPES:
        raise ValueError(f"learner.dtype={name!r} is not one of: {', '.join(DTYPES)}")
    return DTYPES[name]


def load_base_model(model_path: str, dtype: str) -> PreTrainedModel:
    return AutoModelForCausalLM.from_pretrained(model_path, dtype=torch_dtype(dtype))


def _target_modules(value: Any) -> str | list[str]:
    if isinstance(value, str):
        return value
    return [str(v) for v in value]  # a list or an OmegaConf ListConfig


def add_lora(model: PreTrainedModel, cfg: Any, seed: int) -> PeftModel:
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
    policy.config.use_cache = False
    return policy


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


def token_logps(forward: Callable[..., Any], batch: MicroBatch) -> torch.Tensor:
    """[B, L-1] log-probs of tokens 1..L-1; positions before `batch.first` (prompt only) are 0.

    Logits are computed only from `batch.first` on (`logits_to_keep`): the shared prompt prefix of
    a micro-batch costs no vocabulary projection. Log-softmax runs in float32.
    """
    rows, width = batch.input_ids.shape
    keep = torch.arange(batch.first, width - 1, device=batch.input_ids.device)
    logits = forward(input_ids=batch.input_ids, attention_mask=batch.attention_mask, logits_to_keep=keep,
                     use_cache=False).logits.float()
    targets = batch.input_ids[:, batch.first + 1:].unsqueeze(-1)
    logp = logits.gather(-1, targets).squeeze(-1) - torch.logsumexp(logits, dim=-1)
    return torch.cat([logp.new_zeros(rows, batch.first), logp], dim=1)
