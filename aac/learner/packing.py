"""Prefix-shared micro-batches: the samples of a micro-batch as one row of unique tokens (a prefix tree).

The turns of a GRPO group repeat long prompt prefixes (system prompt, header, context examples,
whole first prompts). Sorted lexicographically, each sequence shares with its predecessor the
longest prefix it shares with any earlier one, so the tree in depth-first order is, sequence by
sequence, the tokens after that common prefix (a "segment"): the row is the prefix tree in depth-first
order. Each token attends to the keys of its own root path (`aac.learner.tree_attention`) at its depth
as position id: the same keys, values and positions as in the sample's own row, so log-probs equal the
unshared forward's up to float summation order, and a shared prefix's activations get the gradient of
every sample that reads them, as each copy would.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Optional

import torch


@dataclass
class PackedRow:
    """One micro-batch: `tokens` (depth-first) at `positions`; per sample, its tokens' row indices."""

    samples: list[int]  # indices into the packed sequences
    tokens: list[int]
    positions: list[int]
    paths: list[list[int]]  # paths[k]: row index of each token of sequence samples[k]
    shared: list[int]  # shared[k]: how many of those are earlier sequences' tokens


def _common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def pack_plan(sequences: Sequence[Sequence[int]], budget: int) -> list[PackedRow]:
    """Rows of at most `budget` unique tokens (a longer sequence rides alone), in lexicographic order
    so that neighbours, which share the longest prefixes, land in the same row."""
    if budget <= 0:
        raise ValueError(f"learner.micro_batch_tokens must be > 0, got {budget}")
    rows: list[PackedRow] = []
    row: Optional[PackedRow] = None
    for i in sorted(range(len(sequences)), key=lambda i: list(sequences[i])):
        seq = list(sequences[i])
        shared = _common_prefix(sequences[row.samples[-1]], seq) if row else 0
        if row and len(row.tokens) + len(seq) - shared > budget:
            rows.append(row)
            row, shared = None, 0
        if row is None:
            row = PackedRow([], [], [], [], [])
        start = len(row.tokens)
        row.paths.append((row.paths[-1][:shared] if shared else []) + list(range(start, start + len(seq) - shared)))
        row.tokens.extend(seq[shared:])
        row.positions.extend(range(shared, len(seq)))
        row.samples.append(i)
        row.shared.append(shared)
    if row:
        rows.append(row)
    return rows


@dataclass
class Segment:
    """Row positions [start, end) are the new tokens of a sequence whose tokens sit at `path` (the
    new ones last); `mask[i, j]`: new token i sees path token j (its ancestors and itself)."""

    start: int
    end: int
    path: torch.Tensor
    mask: torch.Tensor
    _bias: dict[torch.dtype, torch.Tensor] = field(default_factory=dict, repr=False, compare=False)

    def to(self, device: torch.device) -> Segment:
        return Segment(self.start, self.end, self.path.to(device), self.mask.to(device))

    def bias(self, dtype: torch.dtype) -> torch.Tensor:
        """`mask` as sdpa's additive float mask (0 / -inf), made once for every layer and pass: sdpa
        converts a boolean mask on each call."""
        if dtype not in self._bias:
            self._bias[dtype] = torch.zeros(self.mask.shape, dtype=dtype, device=self.mask.device).masked_fill_(
                ~self.mask, float("-inf"))
        return self._bias[dtype]


def subtree_ends(positions: Sequence[int]) -> list[int]:
    """ends[j]: the row index just past token j's subtree. In depth-first order a token's subtree is the
    run of deeper tokens right after it, so key j is on query i's root path iff j <= i < ends[j]."""
    ends, open_ = [len(positions)] * len(positions), []
    for i, depth in enumerate(positions):
        while open_ and positions[open_[-1]] >= depth:
            ends[open_.pop()] = i
        open_.append(i)
    return ends


@dataclass
class PrefixTree:
    """A packed row's attention structure: `ends` (`subtree_ends`, on the row's device) for the fused
    kernel, the row's segments (made on first use) for the per-segment one."""

    row: PackedRow
    ends: torch.Tensor
    _segments: Optional[list[Segment]] = field(default=None, repr=False, compare=False)

    @classmethod
    def of(cls, row: PackedRow) -> PrefixTree:
        return cls(row, torch.tensor(subtree_ends(row.positions)))

    def to(self, device: torch.device) -> PrefixTree:
        return PrefixTree(self.row, self.ends.to(device))

    def segments(self) -> list[Segment]:
        if self._segments is None:
            self._segments = [seg.to(self.ends.device) for seg in segments(self.row)]
        return self._segments


def segments(row: PackedRow) -> list[Segment]:
    """The row's segments in row order: together they cover every row position once."""
    out = []
    for path, shared in zip(row.paths, row.shared):
        if shared == len(path):  # a duplicate sequence: its tokens are another's
            continue
        seen = torch.ones(len(path) - shared, len(path), dtype=torch.bool).tril(diagonal=shared)
        out.append(Segment(path[shared], path[-1] + 1, torch.tensor(path), seen))
    return out


@dataclass
class PackedBatch:
    """A packed row's model inputs ([1, N] and its prefix tree) and its loss tokens as flat [T] vectors.

    `source[t]` is the row index whose logits predict loss token t (`targets[t]`); loss tokens are the
    samples' completion tokens, sample by sample (`counts[k]` of sample k of the row)."""

    input_ids: torch.Tensor
    position_ids: torch.Tensor
    tree: PrefixTree
    source: torch.Tensor
    targets: torch.Tensor
    old_logp: torch.Tensor  # NaN where not given (then: this pass's, detached)
    sampling_logp: torch.Tensor  # NaN where the sample brought none
    adv: torch.Tensor
    loss_mask: torch.Tensor  # all True: every flat entry is a loss token
    counts: list[int]

    @property
    def tokens(self) -> int:
        return self.input_ids.shape[1]

    def to(self, device: torch.device) -> PackedBatch:
        return PackedBatch(**{k: v.to(device) if isinstance(v, (torch.Tensor, PrefixTree)) else v
                              for k, v in self.__dict__.items()})

    def split(self, logp: torch.Tensor) -> list[list[float]]:
        """Per sample of the row, its entries of a flat [T] `logp`."""
        return [part.tolist() for part in logp.split(self.counts)]


def collate_packed(row: PackedRow, prompt_lengths: Sequence[int], sampling_logprobs: Sequence[list[float]],
                   advantages: Sequence[float], old_logprobs: Optional[Sequence[list[float]]] = None) -> PackedBatch:
    """`prompt_lengths`, `sampling_logprobs`, `advantages`, `old_logprobs`: per sample of the row, in
    `row.samples` order."""
    source, targets, old, sampling, adv, counts = [], [], [], [], [], []
    for k, path in enumerate(row.paths):
        p, n = prompt_lengths[k], len(path) - prompt_lengths[k]
        source += path[p - 1:-1]
        targets += [row.tokens[j] for j in path[p:]]
        sampling += list(sampling_logprobs[k]) or [float("nan")] * n
        old += list(old_logprobs[k]) if old_logprobs is not None else [float("nan")] * n
        adv += [float(advantages[k])] * n
        counts.append(n)
    return PackedBatch(
        input_ids=torch.tensor([row.tokens]), position_ids=torch.tensor([row.positions]),
        tree=PrefixTree.of(row), source=torch.tensor(source), targets=torch.tensor(targets),
        old_logp=torch.tensor(old), sampling_logp=torch.tensor(sampling), adv=torch.tensor(adv),
        loss_mask=torch.ones(len(targets), dtype=torch.bool), counts=counts)
