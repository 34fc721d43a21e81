"""Attention over a prefix-shared row (`aac.learner.packing`): each token attends to the keys and values of
its own root path only, so a row costs what its samples' own rows would cost in attention (no dense
[N, N] mask over the whole row, whose work grows with the row's square).

Registered with transformers as `prefix_tree+sdpa` (Llama, Qwen3 and most decoders default to sdpa):
a forward given the tree (`tree_inputs`) runs one of two kernels; any other forward (a padded batch,
the sync probe) is plain sdpa with its own mask.

- `flex` (CUDA): one FlexAttention call per row and layer, over a block-sparse mask made from the tree
  (`block_mask`: key j is visible to query i iff j <= i < `PrefixTree.ends`[j], O(N) to build, no
  [N, N] tensor); grouped-query heads (Qwen3-8B: 32 query, 8 KV) through its `enable_gqa`, no copies of
  the keys and values. Compiled once, with dynamic shapes: rows of any length share one kernel. The
  mask goes in as the model's `attention_mask` (a 4D BlockMask), so transformers builds no dense one.
- `segments` (the CPU): one sdpa call per segment on the keys of its root path (one gather for the row)
  and a padded bias. torch's FlexAttention has no CPU backward (torch 2.13 raises), and one dense sdpa
  call over the row's tree mask measured 0.1-0.9x this loop's speed (forward + backward) on flagship-like rows
  of 4-8k tokens (benchmarks/bench_tree_attention.py). sdpa's CPU flash kernel takes the mask and grouped heads together
  (`enable_gqa`). On CUDA, where it was the learner's kernel before `flex` and is what
  benchmarks/gpu_check.py times beside it, no fused kernel does (FlashAttention takes no mask, the
  memory-efficient kernel no grouped heads), so there the KV heads are expanded to the query heads first
  (a copy of the row's keys and values, groups times, per layer).

`kernel_in_use` says which kernel a model's tree attention runs on a device.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Optional

import torch
from torch.nn.attention.flex_attention import BlockMask
from torch.nn.functional import scaled_dot_product_attention
from transformers import AttentionInterface
from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, AttentionMaskInterface
from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

if TYPE_CHECKING:
    from transformers import PretrainedConfig

    from aac.learner.packing import PrefixTree, Segment

PREFIX = "prefix_tree+"
BLOCK = 128  # FlexAttention's block: the mask's sparsity is decided per BLOCK x BLOCK tile


def tree_kernel(device: torch.device | str) -> str:
    """`flex` on CUDA, `segments` elsewhere (see the module docstring)."""
    return "flex" if torch.device(device).type == "cuda" else "segments"


def tree_inputs(tree: PrefixTree) -> dict[str, Any]:
    """The forward's keyword arguments that run the tree attention on the tree's device."""
    if tree_kernel(tree.ends.device) == "flex":
        return {"attention_mask": block_mask(tree.ends, BLOCK)}
    return {"prefix_segments": tree.segments()}


def block_mask(ends: torch.Tensor, block: int = BLOCK) -> BlockMask:
    """The prefix tree's FlexAttention BlockMask [1, 1, N, N] from its `ends` (`packing.subtree_ends`).

    Per tile of queries a and keys b < a: no key of b reaches a when every subtree of b ends before a's
    first query; all of b is seen by all of a when every subtree of b ends after a's last query (a full
    tile: no mask evaluated). Diagonal tiles are partial; tiles above it empty."""
    n = len(ends)
    tiles = -(-n // block)
    padded = torch.zeros(tiles * block, dtype=ends.dtype, device=ends.device)  # pad keys: ends 0, seen by none
    padded[:n] = ends
    hi = padded.view(tiles, block).amax(1)
    lo = padded.view(tiles, block).amin(1)
    a = torch.arange(tiles, device=ends.device)
    q_first, q_end = (a * block)[:, None], ((a + 1) * block)[:, None]  # a partial last tile is never full
    below = a[None, :] < a[:, None]
    full = below & (lo[None, :] >= q_end)
    partial = (below & (hi[None, :] > q_first) & ~full) | torch.eye(tiles, dtype=torch.bool, device=ends.device)

    def ordered(tile: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Per query tile, the count of its key tiles and their indices first."""
        count = tile.sum(-1, dtype=torch.int32)
        index = torch.argsort((~tile).to(torch.int8), dim=-1, stable=True).to(torch.int32)
        return count[None, None], index[None, None]

    def on_path(b: torch.Tensor, h: torch.Tensor, q: torch.Tensor, kv: torch.Tensor) -> torch.Tensor:
        return (kv <= q) & (q < padded[kv])

    (count, index), (full_count, full_index) = ordered(partial), ordered(full)
    return BlockMask.from_kv_blocks(count, index, full_count, full_index, BLOCK_SIZE=block, mask_mod=on_path,
                                    seq_lengths=(n, n))


@functools.cache
def _flex() -> Callable[..., torch.Tensor]:
    """FlexAttention compiled once for rows of any length (its uncompiled form materializes the scores)."""
    from torch.nn.attention.flex_attention import flex_attention

    return torch.compile(flex_attention, dynamic=True)


def _flex_attention(module: torch.nn.Module, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                    mask: BlockMask, scaling: Optional[float]) -> torch.Tensor:
    """query [1, H, N, d], key/value [1, KV, N, d] -> [1, N, H, d]: the whole row in one call."""
    out = _flex()(query, key, value, block_mask=mask, scale=scaling, enable_gqa=query.shape[1] != key.shape[1])
    return out.transpose(1, 2).contiguous()


def _segments_attention(module: torch.nn.Module, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                        segments: list[Segment], scaling: Optional[float]) -> torch.Tensor:
    """query [1, H, N, d], key/value [1, KV, N, d] (after RoPE) -> [1, N, H, d].

    One gather of every segment's path (its backward is one scatter-add into the shared prefixes'
    keys, not one per segment); grouped-query heads through sdpa's `enable_gqa` where `expand_kv` is off."""
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
    """Whether the segments kernel expands grouped KV heads before sdpa: on CUDA (see the module docstring)."""
    return query.is_cuda


def _heads(key: torch.Tensor, value: torch.Tensor, groups: int) -> tuple[torch.Tensor, torch.Tensor]:
    """key, value [1, KV, L, d] with each KV head repeated for its `groups` query heads where `expand_kv`."""
    if groups == 1 or not expand_kv(key):
        return key, value
    return key.repeat_interleave(groups, dim=1), value.repeat_interleave(groups, dim=1)


def kernel_in_use(config: PretrainedConfig, device: torch.device, dtype: torch.dtype, length: int = 256) -> str:
    """The kernel a model's prefix-tree attention runs on `device`, and how grouped heads reach it (for the
    segments kernel: the sdpa kernel a segment of `length` tokens gets)."""
    heads, kv = config.num_attention_heads, getattr(config, "num_key_value_heads", None) or config.num_attention_heads
    grouped = "grouped heads (enable_gqa)" if kv != heads else "no grouped heads"
    if tree_kernel(device) == "flex":
        return f"flex_attention on {device.type}, one call per row and layer, {grouped}"
    from torch.nn.attention import SDPBackend

    dim = getattr(config, "head_dim", None) or config.hidden_size // heads
    query = torch.zeros(1, heads, length, dim, device=device, dtype=dtype)
    key = torch.zeros(1, kv, length, dim, device=device, dtype=dtype)
    mask = torch.zeros(length, length, device=device, dtype=dtype)
    key, value = _heads(key, key, heads // kv)
    gqa = key.shape[1] != heads
    kernel = SDPBackend(torch._fused_sdp_choice(query, key, value, attn_mask=mask, enable_gqa=gqa)).name
    how = grouped if gqa or kv == heads else "KV heads expanded"
    return f"sdpa {kernel.lower()} on {device.type} per segment, {how}"


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
                  attention_mask: Optional[torch.Tensor | BlockMask], scaling: Optional[float] = None,
                  prefix_segments: Optional[list[Segment]] = None, **kwargs: Any) -> tuple[torch.Tensor, None]:
        if prefix_segments is not None:
            return _segments_attention(module, query, key, value, prefix_segments, scaling), None
        if isinstance(attention_mask, BlockMask):  # `tree_inputs`' on a flex device
            return _flex_attention(module, query, key, value, attention_mask, scaling), None
        return own(module, query, key, value, attention_mask, scaling=scaling, **kwargs)

    AttentionInterface.register(PREFIX + impl, attention)
    AttentionMaskInterface.register(PREFIX + impl, ALL_MASK_ATTENTION_FUNCTIONS[impl])
    model.config._attn_implementation = PREFIX + impl
