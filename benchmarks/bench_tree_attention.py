"""The learner's prefix-tree attention on the CPU, side by side on flagship-shaped rows
(`gpu_learner.flagship_batch`: shared 350-token prompts, groups of 8, 12 turns of 55-150-token replies,
packed by `aac.learner.packing.pack_plan`), per layer call at a model's heads:

- `segments`: aac's CPU kernel, one sdpa call per segment (aac/learner/tree_attention.py);
- `dense`: one sdpa call over the row's [N, N] tree mask (the fused alternative the CPU has: one call per
  row and layer, but work that grows with the row's square);
- `flex`: FlexAttention over the tree's BlockMask, compiled for this row's shape (the CPU can: forward only,
  no backward and no dynamic-shape compile in torch 2.13) - CUDA's kernel, its block sparsity on the CPU.

    python benchmarks/bench_tree_attention.py     # rows of 4096 and 8192 tokens, narrow and Qwen3-8B heads

Times are medians over `--rounds` interleaved rounds (kernels in turn, so load drifts fall on all), fp32.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gpu_learner import flagship_batch  # noqa: E402
from memory_model_check import NARROW  # noqa: E402

from aac.learner.packing import PrefixTree, pack_plan  # noqa: E402
from aac.models import QWEN3_8B  # noqa: E402

HEADS = {"narrow (8 q / 2 kv, d 32)": (8, 2, 32), "Qwen3-8B (32 q / 8 kv, d 128)": (32, 8, 128)}


def kernels(tree: PrefixTree, heads: int, kv: int, dim: int) -> dict:
    from torch.nn.attention.flex_attention import flex_attention
    from torch.nn.functional import scaled_dot_product_attention

    from aac.learner import tree_attention as ta

    n = len(tree.row.tokens)
    i = torch.arange(n)
    dense_mask = (i[None] <= i[:, None]) & (i[:, None] < tree.ends[None])
    module = SimpleNamespace(num_key_value_groups=heads // kv)
    flex = torch.compile(flex_attention, dynamic=False)
    mask = ta.block_mask(tree.ends)
    return {
        "segments": lambda q, k, v: ta._segments_attention(module, q, k, v, tree.segments(), None),
        "dense": lambda q, k, v: scaled_dot_product_attention(q, k, v, attn_mask=dense_mask, enable_gqa=True),
        "flex": lambda q, k, v: flex(q.detach(), k.detach(), v.detach(), block_mask=mask, enable_gqa=True),
    }


def attention_rows(budgets: list[int], rounds: int) -> None:
    samples = flagship_batch(NARROW.vocab_size)
    print("| heads | row tokens | segments | density | kernel | forward ms | forward+backward ms | x segments (fwd, fwd+bwd) |\n"
          "|---|---:|---:|---:|---|---:|---:|---|", flush=True)
    for budget in budgets:
        row = max(pack_plan([s.prompt_ids + s.completion_ids for s in samples], budget), key=lambda r: len(r.tokens))
        tree = PrefixTree.of(row)
        n = len(row.tokens)
        density = sum(s.mask.sum().item() for s in tree.segments()) / n ** 2
        for label, (heads, kv, dim) in HEADS.items():
            g = torch.Generator().manual_seed(0)
            q, k, v = (torch.randn(1, h, n, dim, generator=g).requires_grad_() for h in (heads, kv, kv))
            fns = kernels(tree, heads, kv, dim)
            with torch.no_grad():
                ref = fns["segments"](q, k, v)
                fns["flex"](q, k, v)  # compile
                assert torch.allclose(fns["flex"](q, k, v).transpose(1, 2), ref, atol=1e-4)
                assert torch.allclose(fns["dense"](q, k, v).transpose(1, 2), ref, atol=1e-4)
            fwd: dict[str, list[float]] = {name: [] for name in fns}
            both: dict[str, list[float]] = {name: [] for name in fns if name != "flex"}
            for _ in range(rounds):
                for name, fn in fns.items():
                    with torch.no_grad():
                        t0 = time.perf_counter()
                        fn(q, k, v)
                        fwd[name].append(time.perf_counter() - t0)
                    if name in both:
                        t0 = time.perf_counter()
                        out = fn(q, k, v)
                        torch.autograd.grad(out, (q, k, v), torch.ones_like(out))
                        both[name].append(time.perf_counter() - t0)
            f = {name: statistics.median(t) * 1e3 for name, t in fwd.items()}
            b = {name: statistics.median(t) * 1e3 for name, t in both.items()}
            for name in fns:
                back = f"{b[name]:.1f}" if name in b else "(no CPU backward)"
                ratio = f"{f['segments'] / f[name]:.2f}" + (f", {b['segments'] / b[name]:.2f}" if name in b else "")
                print(f"| {label} | {n} | {len(tree.segments())} | {density:.3f} | {name} | {f[name]:.1f} | {back} | "
                      f"{ratio} |", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--budgets", default="4096,8192", help="micro_batch_tokens: the biggest row of each is timed")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; Qwen3-8B heads {QWEN3_8B.num_attention_heads}"
          f"/{QWEN3_8B.num_key_value_heads}", flush=True)
    attention_rows([int(b) for b in args.budgets.split(",")], args.rounds)


if __name__ == "__main__":
    main()
