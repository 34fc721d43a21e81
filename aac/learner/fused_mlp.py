"""A SwiGLU MLP's activation and down projection (base + LoRA) as one autograd op (`learner.fused_mlp`).

Autograd keeps four [tokens, intermediate] tensors per layer for `down(silu(gate) * up)`: silu's
input, both factors of the product, and the product itself (the LoRA A's input). The op keeps only
`gate` and `up` and recomputes the rest in backward, elementwise: no matrix product is redone, and
SmolLM2's update holds ~24% less (benchmarks/RESULTS.md, Update). Gradients are autograd's formulas;
a forward without grad (the reference, pi_old) runs the module's own forward.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Optional

import torch
import torch.nn.functional as F
from torch import nn
from torch.autograd.function import FunctionCtx

SILU = ("silu", "swish")


class _SwiGLUDown(torch.autograd.Function):
    @staticmethod
    def forward(ctx: FunctionCtx, gate: torch.Tensor, up: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor],
                lora_a: Optional[torch.Tensor], lora_b: Optional[torch.Tensor], scale: float) -> torch.Tensor:
        product = F.silu(gate) * up
        out = F.linear(product, weight, bias)
        hidden = None
        if lora_a is not None:  # as peft: the adapter in its own dtype, the sum back in the base's
            hidden = F.linear(product.to(lora_a.dtype), lora_a)
            out = (out + F.linear(hidden, lora_b) * scale).to(out.dtype)
        ctx.save_for_backward(gate, up, weight, lora_a, lora_b, hidden)
        ctx.scale = scale
        return out

    @staticmethod
    def backward(ctx: FunctionCtx, grad: torch.Tensor) -> tuple[Optional[torch.Tensor], ...]:
        gate, up, weight, lora_a, lora_b, hidden = ctx.saved_tensors
        silu = F.silu(gate)
        grad_product = grad @ weight
        grad_a = grad_b = None
        if lora_a is not None:
            scaled = grad.to(lora_b.dtype) * ctx.scale
            grad_hidden = scaled @ lora_b
            grad_product = grad_product + (grad_hidden @ lora_a).to(grad_product.dtype)
            flat = hidden.shape[-1]
            grad_b = scaled.reshape(-1, scaled.shape[-1]).T @ hidden.reshape(-1, flat)
            product = (silu * up).to(lora_a.dtype)
            grad_a = grad_hidden.reshape(-1, flat).T @ product.reshape(-1, product.shape[-1])
        sig = torch.sigmoid(gate)
        grad_up = grad_product * silu
        grad_gate = grad_product * up * sig * (1 + gate * (1 - sig))  # silu's derivative, as autograd's
        return grad_gate, grad_up, None, None, grad_a, grad_b, None


def _down_parts(down: nn.Module) -> tuple[nn.Linear, Optional[torch.Tensor], Optional[torch.Tensor], float]:
    """(base linear, LoRA A, LoRA B, scaling) of a down projection: a plain linear, or a peft LoRA
    linear with its adapter on (no adapter terms when it is disabled or merged)."""
    if not hasattr(down, "lora_A"):
        return down, None, None, 1.0
    if down.disable_adapters or down.merged or not down.active_adapters:
        return down.base_layer, None, None, 1.0
    (name,) = down.active_adapters
    return down.base_layer, down.lora_A[name].weight, down.lora_B[name].weight, down.scaling[name]


def _check(down: nn.Module) -> None:
    base = down.base_layer if hasattr(down, "lora_A") else down
    if not isinstance(base, nn.Linear) or base.weight.requires_grad:
        raise ValueError("learner.fused_mlp needs a frozen nn.Linear down projection (LoRA training): "
                         "set learner.fused_mlp=false")
    if hasattr(down, "lora_A"):
        for name in down.lora_A:
            if not isinstance(down.lora_dropout[name], nn.Identity) or down.use_dora.get(name):
                raise ValueError("learner.fused_mlp needs learner.lora_dropout=0 and no DoRA: "
                                 "set learner.fused_mlp=false")
        if len(down.lora_A) > 1:
            raise ValueError("learner.fused_mlp supports one LoRA adapter: set learner.fused_mlp=false")


def _fused_forward(mlp: nn.Module) -> Callable[[torch.Tensor], torch.Tensor]:
    own = mlp.forward

    def forward(x: torch.Tensor) -> torch.Tensor:
        if not torch.is_grad_enabled():
            return own(x)
        base, lora_a, lora_b, scale = _down_parts(mlp.down_proj)
        return _SwiGLUDown.apply(mlp.gate_proj(x), mlp.up_proj(x), base.weight, base.bias, lora_a, lora_b, scale)

    return forward


def use_fused_mlp(model: nn.Module) -> int:
    """Route every SwiGLU MLP of `model` (gate_proj, up_proj, down_proj, silu) through the fused op;
    returns how many. A model without one is a clear error."""
    act = getattr(getattr(model, "config", None), "hidden_act", None)
    mlps = [m for m in model.modules() if all(hasattr(m, a) for a in ("gate_proj", "up_proj", "down_proj", "act_fn"))]
    if act not in SILU or not mlps:
        raise ValueError(f"learner.fused_mlp needs SwiGLU MLPs (gate/up/down projections, silu); this model has "
                         f"hidden_act={act!r} and {len(mlps)} such modules: set learner.fused_mlp=false")
    for mlp in mlps:
        _check(mlp.down_proj)
        mlp.forward = _fused_forward(mlp)
    return len(mlps)
