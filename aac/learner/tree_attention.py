"""Attention over a prefix-shared row (`aac.learner.packing`): each segment's queries attend to the
keys and values of its own root path only, so a row costs what its samples' own rows would cost in
attention (no dense [N, N] mask over the whole row, whose work grows with the row's square).

Registered with transformers as `prefix_tree+sdpa` (Llama, Qwen3 and most decoders default to sdpa):
a forward given `prefix_segments` runs the segments; any other forward (a padded batch, the sync
probe) is plain sdpa with its own mask.

Grouped-query heads (Qwen3-8B: 32 query, 8 KV): on the CPU, sdpa's flash kernel takes them with the
mask (`enable_gqa`). On CUDA no fused kernel takes a mask and `enable_gqa` together (FlashAttention
takes no mask, the memory-efficient kernel no grouped heads), so sdpa would fall to the math kernel
(a [H, L, L] score tensor per segment): there the KV heads are expanded to the query heads first (a
copy of the row's keys and values, groups times, per layer), and the memory-efficient kernel runs.
`kernel_in_use` says which kernel sdpa picks for a model's heads on a device.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

import torch
from torch.nn.functional import scaled_dot_product_attention
from transformers import AttentionInterface
from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, AttentionMaskInterface
from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

if TYPE_CHECKING:
    from transformers import PretrainedConfig

PREFIX = "prefix_tree+"


def _segments_attention(module: torch.nn.Module, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                        segments: list[Any], scaling: Optional[float]) -> torch.Tensor:
    """query [1, H, N, d], key/value [1, KV, N, d] (after RoPE) -> [1, N, H, d].

    One gather of every segment's path (its backward is one scatter-add into the shared prefixes'
    keys, not one per segment); grouped-query heads through sdpa's `enable_gqa`, not copies."""
    index = torch.cat([seg.path for seg in segments])
    lengths = [len(seg.path) for seg in segments]
    # split, not one slice per segment: a split's backward is one cat of the parts' gradients, where
    # each slice's backward zero-fills a whole [1, H, N, d] gradient to copy its part in
    keys, values = key.index_select(2, index).split(lengths, 2), value.index_select(2, index).split(lengths, 2)
    queries = query.split([seg.end - seg.start for seg in segments], 2)  # the segments tile the row in order
    groups = getattr(module, "num_key_value_groups", 1)
    gqa = groups > 1 and not expand_kv(query)
    parts = [scaled_dot_product_attention(q, *_heads(k, v, groups), attn_mask=seg.bias(query.dtype), scale=scaling,
                                          enable_gqa=gqa)
             for seg, q, k, v in zip(segments, queries, keys, values)]
    return torch.cat(parts, dim=2).transpose(1, 2).contiguous()


def expand_kv(query: torch.Tensor) -> bool:
    """Whether grouped KV heads are expanded before sdpa: on CUDA (see the module docstring)."""
    return query.is_cuda


def _heads(key: torch.Tensor, value: torch.Tensor, groups: int) -> tuple[torch.Tensor, torch.Tensor]:
    """key, value [1, KV, L, d] with each KV head repeated for its `groups` query heads where `expand_kv`."""
    if groups == 1 or not expand_kv(key):
        return key, value
    return key.repeat_interleave(groups, dim=1), value.repeat_interleave(groups, dim=1)


def kernel_in_use(config: PretrainedConfig, device: torch.device, dtype: torch.dtype, length: int = 256) -> str:
    """The sdpa kernel a prefix-tree segment of `length` tokens runs for `config`'s heads on `device`,
    and how grouped heads reach it."""
    from torch.nn.attention import SDPBackend

    heads, kv = config.num_attention_heads, getattr(config, "num_key_value_heads", None) or config.num_attention_heads
    dim = getattr(config, "head_dim", None) or config.hidden_size // heads
    query = torch.zeros(1, heads, length, dim, device=device, dtype=dtype)
    key = torch.zeros(1, kv, length, dim, device=device, dtype=dtype)
    mask = torch.zeros(length, length, device=device, dtype=dtype)
    key, value = _heads(key, key, heads // kv)
    gqa = key.shape[1] != heads
    kernel = SDPBackend(torch._fused_sdp_choice(query, key, value, attn_mask=mask, enable_gqa=gqa)).name
    how = "grouped heads (enable_gqa)" if gqa else "KV heads expanded" if kv != heads else "no grouped heads"
    return f"sdpa {kernel.lower()} on {device.type}, {how}"


def use_prefix_tree(model: Any) -> None:
    """Switch `model` from sdpa to the prefix-tree attention (sdpa for everything else)."""
    impl = model.config._attn_implementation
    if impl == PREFIX + "sdpa":
        return
    if impl != "sdpa":
        raise ValueError(f"learner.prefix_sharing needs sdpa attention, the model uses {impl}: "
                         "set learner.prefix_sharing=false")
    own = ALL_ATTENTION_FUNCTIONS[impl]

    def attention(module: torch.nn.Module, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                  attention_mask: Optional[torch.Tensor], scaling: Optional[float] = None,
                  prefix_segments: Optional[list[Any]] = None, **kwargs: Any) -> tuple[torch.Tensor, None]:
        if prefix_segments is None:
            return own(module, query, key, value, attention_mask, scaling=scaling, **kwargs)
        return _segments_attention(module, query, key, value, prefix_segments, scaling), None

    AttentionInterface.register(PREFIX + impl, attention)
    AttentionMaskInterface.register(PREFIX + impl, ALL_MASK_ATTENTION_FUNCTIONS[impl])
    model.config._attn_implementation = PREFIX + impl
