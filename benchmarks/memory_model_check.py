"""The learner's memory model (`aac.learner.memory.predict`) against the peak an update really holds, measured
tensor by tensor on the CPU (`aac.learner.tensor_peak.update_peak`: weights, adapter and AdamW state, plus the
highest point of live tensor storage an update adds), at small shapes with random weights: the tiny Qwen3, a
narrow bf16 model with the flagship's GQA ratio, and 2-layer slices at a quarter of and at Qwen3-8B's width.

    python benchmarks/memory_model_check.py            # every row (minutes on 2 cores)
    python benchmarks/memory_model_check.py --quick    # the rows tests/test_memory_model.py checks

Prints one markdown row per setting: predicted and measured MiB and their ratio (the prediction is made
for the CPU, `device="cpu"`: its segments kernel), then what a one-rank DeepSpeed learner adds over the
torch one at each ZeRO stage beside the predicted `zero_buffers`.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gpu_learner import build_random, make_batch  # noqa: E402

from aac.config import LearnerConfig  # noqa: E402
from aac.learner import Learner  # noqa: E402
from aac.learner.memory import Batch, Dims, predict  # noqa: E402
from aac.learner.tensor_peak import update_peak  # noqa: E402
from aac.models import QWEN3_8B, Shape  # noqa: E402

TINY = Shape(vocab_size=1024, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
             num_key_value_heads=2, head_dim=32)
NARROW = Shape(vocab_size=2048, hidden_size=256, intermediate_size=768, num_hidden_layers=2, num_attention_heads=8,
               num_key_value_heads=2, head_dim=32)
QUARTER = Shape(vocab_size=4096, hidden_size=1024, intermediate_size=3072, num_hidden_layers=2, num_attention_heads=8,
                num_key_value_heads=2, head_dim=128)
SLICE = Shape(**{**vars(QWEN3_8B), "num_hidden_layers": 2, "vocab_size": 8192})
# (name, shape, dtype, tokens per micro-batch, tokens per turn, learner overrides)
QUICK = [("tiny fp32 ckpt", TINY, "float32", 256, 64, {"gradient_checkpointing": True}),
         ("narrow bf16 ckpt", NARROW, "bfloat16", 256, 128, {"gradient_checkpointing": True}),
         ("narrow bf16 no ckpt", NARROW, "bfloat16", 256, 128, {})]
FULL = QUICK + [("narrow bf16 fused_mlp ckpt", NARROW, "bfloat16", 512, 128,
                 {"gradient_checkpointing": True, "fused_mlp": True}),
                ("quarter-width 2 layers bf16 ckpt", QUARTER, "bfloat16", 1024, 512, {"gradient_checkpointing": True}),
                ("Qwen3-8B width 2 layers bf16 ckpt", SLICE, "bfloat16", 1024, 512, {"gradient_checkpointing": True})]


def measure(shape: Shape, dtype: str, tokens: int, seq_len: int, **overrides: Any) -> dict[str, Any]:
    """Predicted and measured peak bytes of one update (one micro-batch: the batch fits `tokens`)."""
    model = build_random(shape, getattr(torch, dtype), torch.device("cpu"))
    cfg = LearnerConfig(**{"backend": "torch", "lora_r": 16, "lora_alpha": 16, "dtype": dtype, "kl_coef": 0.001,
                           "micro_batch_tokens": tokens, "lr": 1e-6, **overrides})
    learner = Learner(cfg, "", seed=0, base_model=model)
    batch = make_batch(tokens, seq_len, 0.5, shape.vocab_size, seed=0, shared_frac=0.5)
    (row,) = learner._plan(batch)  # one micro-batch: the prediction is for its exact row
    measured = update_peak(learner, batch)
    predicted = predict(Dims.of(model.config), cfg, device="cpu", batch=Batch.of_row(row))
    return {"predicted": predicted["total"], "measured": measured["total"], "tokens": len(row.tokens),
            "ratio": predicted["total"] / measured["total"]}


def zero_overhead(shape: Shape, stages: tuple[int, ...] = (0, 1, 2), tokens: int = 128) -> dict[int, int]:
    """Per DeepSpeed ZeRO stage, the bytes a one-rank DeepSpeed learner adds at its highest point over the
    plain torch learner's, counted from its construction (where ZeRO copies the adapter) through two updates."""
    from aac.learner.tensor_peak import TensorPeak

    batch = make_batch(2 * tokens, tokens // 2, 0.5, shape.vocab_size, seed=0, shared_frac=0.5)
    peaks = {}
    for stage in (None, *stages):
        model = build_random(shape, torch.float32, torch.device("cpu"))
        cfg = LearnerConfig(backend="torch" if stage is None else "deepspeed", zero_stage=stage or 0, lora_r=16,
                            lora_alpha=16, lr=1e-4, micro_batch_tokens=tokens)
        with TensorPeak(list(model.parameters())) as tp:
            learner = Learner(cfg, "", seed=0, base_model=model)
            learner.update(batch)
            learner.update(batch)
        peaks[stage] = tp.peak
        del learner, model
    return {stage: peaks[stage] - peaks[None] for stage in stages}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    print("| setting | unique tokens | predicted MiB | measured MiB | predicted / measured | s |")
    print("|---|---|---|---|---|---|")
    for name, shape, dtype, tokens, seq_len, overrides in QUICK if args.quick else FULL:
        t0 = time.perf_counter()
        r = measure(shape, dtype, tokens, seq_len, **overrides)
        print(f"| {name} | {r['tokens']} | {r['predicted'] / 2**20:.1f} | {r['measured'] / 2**20:.1f} | "
              f"{r['ratio']:.3f} | {time.perf_counter() - t0:.0f} |", flush=True)
    print("\n| narrow fp32, DeepSpeed one rank | added over torch MiB | predicted zero_buffers MiB |\n|---|---|---|")
    for stage, added in zero_overhead(NARROW).items():
        cfg = LearnerConfig(backend="deepspeed", zero_stage=stage, lora_r=16)
        print(f"| ZeRO {stage} | {added / 2**20:.2f} | {predict(Dims.of_shape(NARROW), cfg)['zero_buffers'] / 2**20:.2f} |")


if __name__ == "__main__":
    main()
