"""learner.fused_mlp keeps gradients and frees activations; learner.checkpoint_layers recomputes only its layers."""

from __future__ import annotations

import pytest
import torch

from aac.learner import Learner
from tests.test_packing import _gradients, _trained, group_samples


def _saved_bytes(learner: Learner, samples) -> int:
    """Bytes of the distinct storages autograd keeps for backward over one training forward."""
    storages: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        storages[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        return t

    learner.policy.train()
    _, batch = next(learner._micro_batches(samples))
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        learner._logps(batch)
    return sum(storages.values())


@pytest.mark.parametrize("prefix_sharing", [False, True], ids=["padded", "prefix_tree"])
def test_fused_mlp_keeps_loss_and_gradients(tiny_model_path, prefix_sharing):
    samples = group_samples()
    own = _trained(tiny_model_path, prefix_sharing=prefix_sharing)
    fused = _trained(tiny_model_path, prefix_sharing=prefix_sharing, fused_mlp=True)
    old = [[x - 0.1 * (i % 3) for i, x in enumerate(row)] for row in own.old_logprobs(samples)]
    assert fused.old_logprobs(samples) == [pytest.approx(o, abs=1e-6) for o in own.old_logprobs(samples)]
    m_own, g_own = _gradients(own, samples, old_logprobs=old)
    m_fused, g_fused = _gradients(fused, samples, old_logprobs=old)
    for key in ("loss", "pg_loss", "kl", "clip_frac"):
        assert m_fused[key] == pytest.approx(m_own[key], abs=1e-6)
    assert m_own["kl"] > 0 and m_own["clip_frac"] > 0  # the reference pass (no grad) and the clip both matter
    assert torch.allclose(g_fused, g_own, rtol=1e-5, atol=1e-7)
    assert g_own.abs().sum() > 0


def test_fused_mlp_keeps_two_intermediate_tensors_instead_of_four(tiny_model_path):
    samples = group_samples()
    own = _trained(tiny_model_path)
    fused = _trained(tiny_model_path, fused_mlp=True)
    cfg = own.policy.config
    _, batch = next(own._micro_batches(samples))
    # per layer and computed token: silu's input, both factors and the product -> gate and up
    expected = 2 * cfg.intermediate_size * batch.tokens * cfg.num_hidden_layers * 4
    freed = _saved_bytes(own, samples) - _saved_bytes(fused, samples)
    assert 0.95 * expected <= freed <= 1.05 * expected


def test_checkpoint_layers_recomputes_only_the_first_layers(tiny_model_path):
    samples = group_samples()
    calls: dict[int, list[int]] = {}
    for n in (None, 1, 0):
        learner = _trained(tiny_model_path, gradient_checkpointing=True, checkpoint_layers=n, kl_coef=0.0)
        layers = learner.policy.base_model.model.model.layers
        counts = [0] * len(layers)
        for i, layer in enumerate(layers):
            # a pre-hook: the recompute stops (checkpoint early stop) before the module returns
            layer.mlp.register_forward_pre_hook(lambda *a, i=i, c=counts: c.__setitem__(i, c[i] + 1))
        learner.compute_gradients(samples)
        calls[n] = counts
    micro = 1  # group_samples fit one micro-batch
    assert calls[None] == [2 * micro] * len(calls[None])  # forward + recompute in backward, every layer
    assert calls[1] == [2 * micro] + [micro] * (len(calls[1]) - 1)
    assert calls[0] == [micro] * len(calls[0])


@pytest.mark.parametrize("kw, match", [
    (dict(checkpoint_layers=1), "gradient_checkpointing=true"),
    (dict(gradient_checkpointing=True, checkpoint_layers=99), "checkpoint_layers must be an int in 0..2"),
    (dict(fused_mlp=True, lora_dropout=0.1), "lora_dropout=0"),
])
def test_bad_memory_settings_are_clear_errors(tiny_model_path, kw, match):
    with pytest.raises(ValueError, match=match):
        _trained(tiny_model_path, **kw)


def test_fused_mlp_over_a_bf16_base_keeps_the_float32_adapter(tiny_model_path):
    """The GPU situation: bf16 base weights, float32 LoRA (peft's autocast): same loss, gradients to bf16 rounding."""
    samples = group_samples()
    own, fused = (_trained(tiny_model_path, dtype="bfloat16", fused_mlp=f) for f in (False, True))
    m_own, g_own = _gradients(own, samples)
    m_fused, g_fused = _gradients(fused, samples)
    assert g_fused.dtype == torch.float32 and m_fused["loss"] == pytest.approx(m_own["loss"], abs=1e-6)
    assert (g_fused - g_own).abs().max() <= 0.02 * g_own.abs().max()
