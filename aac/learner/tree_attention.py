"""Attention over a prefix-shared row (`aac.learner.packing`): each segment's queries attend to the
keys and values of its own root path only, so a row costs what its samples' own rows would cost in
attention (no dense [N, N] mask over the whole row, whose work grows with the row's square).

Registered with transformers as `prefix_tree+sdpa` (Llama, Qwen3 and most decoders default to sdpa):
a forward given `prefix_segments` runs the segments; any other forward (a padded batch, the sync
probe) is plain sdpa with its own mask.
"""

from __future__ import annotations

from typing import Any, Optional

import torch
from torch.nn.functional import scaled_dot_product_attention
from transformers import AttentionInterface
from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, AttentionMaskInterface
from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

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
    gqa = getattr(module, "num_key_value_groups", 1) > 1
    parts = [scaled_dot_product_attention(q, k, v, attn_mask=seg.bias(query.dtype), scale=scaling, enable_gqa=gqa)
             for seg, q, k, v in zip(segments, queries, keys, values)]
    return torch.cat(parts, dim=2).transpose(1, 2).contiguous()


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
