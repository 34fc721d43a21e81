"""The device check for the day a GPU is lent: one H100 or H200, at most 8 minutes, with only torch,
transformers and peft installed (no vLLM, Ray or DeepSpeed; omegaconf travels with aac). It measures what
the flagship's projection assumes about the learner and writes one JSON and one summary line:

1. the LoRA learner's update at Qwen3-8B's width (random bf16 weights, the full vocabulary, gradient
   checkpointing, `micro_batch_tokens` 32768, prefix sharing, KL on): slices of 2 and 4 decoder layers are
   timed and their step time and peak memory extrapolated linearly to the 36 layers (t = a + b * layers);
   tokens/s and MFU (model FLOPs, no recomputation, against the GPU's dense bf16 peak) of the 36-layer model;
2. the sdpa kernel the prefix tree's masked, grouped-query attention gets (`kernel_in_use`);
3. each slice's peak memory (torch's allocated peak) beside the memory model's prediction
   (aac/learner/memory.py), and the 36-layer extrapolation beside the 36-layer prediction;
4. the bf16-vs-bf16 log-prob gap between two HF copies of one model (sdpa on a padded batch vs eager
   attention one row at a time): what bf16 kernels alone move a log-prob, beside the sync check's bound;
5. a one-rank NCCL all-reduce through `aac.learner.collective.all_reduce` (a CPU float64 tensor, as the
   learner ranks' metrics are).

    python benchmarks/gpu_check.py                    # on the GPU: gpu_check.json + one line
    python benchmarks/gpu_check.py --cpu-rehearsal    # the same code at a tiny GQA shape on the CPU (gloo)

Each part is timed and a failing part is recorded (`error`) without losing the others.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gpu_learner import build_random, flops_per_token, make_batch, peak_flops  # noqa: E402

from aac.config import LearnerConfig  # noqa: E402
from aac.learner import Learner  # noqa: E402
from aac.learner.memory import Batch, Dims, GiB, predict  # noqa: E402
from aac.models import QWEN3_8B, Shape  # noqa: E402

# the flagship's sync check bound for a bf16 engine and learner (aac/training/sync.py, LOW_PRECISION_TOLERANCE)
SYNC_BOUND_BF16 = 0.5
# the CPU rehearsal: Qwen3-8B's proportions (GQA 4:1) at a tiny width
TINY_GQA = Shape(vocab_size=1024, hidden_size=64, intermediate_size=192, num_hidden_layers=36, num_attention_heads=8,
                 num_key_value_heads=2, head_dim=8)


def _part(results: dict[str, Any], name: str, fn: Callable[[], dict[str, Any]]) -> None:
    t0 = time.perf_counter()
    try:
        results[name] = fn()
    except Exception as e:  # a device check reports what failed and goes on with the other parts
        results[name] = {"error": f"{type(e).__name__}: {e}", "traceback": traceback.format_exc(limit=4)}
    results[name]["seconds"] = round(time.perf_counter() - t0, 1)
    print(f"{name}: {json.dumps(results[name])[:400]}", flush=True)


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def _learner_cfg(micro_batch_tokens: int) -> LearnerConfig:
    return LearnerConfig(backend="torch", dtype="bfloat16", lora_r=16, lora_alpha=16, lr=1e-6, kl_coef=0.001,
                         gradient_checkpointing=True, micro_batch_tokens=micro_batch_tokens, prefix_sharing=True,
                         logprob_chunk=256)


def _slice(shape: Shape, layers: int, tokens: int, seq_len: int, steps: int, device: torch.device) -> dict[str, Any]:
    """One slice of `layers` decoder layers: the median update time and the peak memory, measured and predicted."""
    from aac.learner.tensor_peak import update_peak

    model = build_random(replace(shape, num_hidden_layers=layers), torch.bfloat16, device)
    cfg = _learner_cfg(tokens)
    learner = Learner(cfg, "", seed=0, base_model=model)
    batch = _batch(shape, tokens, seq_len)
    rows = learner._plan(batch)
    biggest = max((Batch.of_row(r) for r in rows), key=lambda b: b.tokens)
    predicted = predict(Dims.of(model.config), cfg, device=device.type, batch=biggest)
    if device.type == "cuda":
        learner.update(batch)  # warm-up: kernels, the allocator, AdamW's moments
        _sync(device)
        torch.cuda.reset_peak_memory_stats()
        measured = None
    else:
        measured = update_peak(learner, batch)["total"]  # warm-up included
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        m = learner.update(batch)
        _sync(device)
        times.append(time.perf_counter() - t0)
    if device.type == "cuda":
        measured = torch.cuda.max_memory_allocated()
    out = {"layers": layers, "step_s": sorted(times)[len(times) // 2], "tokens": m["tokens"],
           "micro_batches": m["micro_batches"], "rows": len(rows), "peak_gb": measured / GiB,
           "predicted_gb": predicted["total"] / GiB, "predicted_over_measured": predicted["total"] / measured}
    del learner, model
    if device.type == "cuda":
        torch.cuda.empty_cache()
    return out


def learner_update(shape: Shape, layers: tuple[int, int], tokens: int, seq_len: int, steps: int,
                   device: torch.device) -> dict[str, Any]:
    """Slices of `layers` decoder layers, extrapolated linearly to `shape.num_hidden_layers`."""
    a, b = (_slice(shape, n, tokens, seq_len, steps, device) for n in layers)
    full = shape.num_hidden_layers

    def extrapolate(key: str) -> float:  # a layer costs >= 0 (timing noise can order two tiny slices wrong)
        per_layer = max((b[key] - a[key]) / (b["layers"] - a["layers"]), 0.0)
        return a[key] + per_layer * (full - a["layers"])

    step_s, peak_gb = extrapolate("step_s"), extrapolate("peak_gb")
    full_model = build_random(shape, torch.bfloat16, torch.device("meta"))  # its FLOPs and dimensions only
    per_token = flops_per_token(full_model, seq_len, kl=True)
    tok_s = a["tokens"] / step_s
    peak = peak_flops(None)
    cfg = _learner_cfg(tokens)
    # the 36-layer prediction at the slices' biggest row (its path tokens and masks depend on the batch, not
    # on the layers)
    planned = _slice_batch(shape, tokens, seq_len)
    predicted = predict(Dims.of(full_model.config), cfg, device=device.type, batch=planned)
    return {"slices": [a, b], "layers": full, "step_s": step_s, "tokens_per_s": tok_s,
            "tflops_per_s": per_token * tok_s / 1e12, "mfu": per_token * tok_s / peak if peak else None,
            "peak_gb": peak_gb, "predicted_gb": predicted["total"] / GiB,
            "predicted_over_measured": predicted["total"] / GiB / peak_gb}


PROMPT_FRAC, SHARED_FRAC = 0.75, 0.8  # a turn's prompt share, and the share of that prompt all turns share


def _batch(shape: Shape, tokens: int, seq_len: int) -> list[Any]:
    """Turns of `seq_len` tokens sharing a prompt prefix, as many as make one prefix-shared row of about
    `tokens` unique tokens (the micro-batch the budget allows)."""
    shared = int(int(seq_len * PROMPT_FRAC) * SHARED_FRAC)
    turns = max(1, (tokens - shared) // (seq_len - shared))
    return make_batch(turns * seq_len, seq_len, PROMPT_FRAC, shape.vocab_size, seed=0, shared_frac=SHARED_FRAC)


def _slice_batch(shape: Shape, tokens: int, seq_len: int) -> Batch:
    """The biggest row of the slices' batch, as the learner plans it (no model needed)."""
    from aac.learner.packing import pack_plan

    rows = pack_plan([s.prompt_ids + s.completion_ids for s in _batch(shape, tokens, seq_len)], tokens)
    return max((Batch.of_row(r) for r in rows), key=lambda b: b.tokens)


def attention_kernel(shape: Shape, device: torch.device) -> dict[str, Any]:
    from transformers import Qwen3Config

    from aac.learner.tree_attention import kernel_in_use

    config = Qwen3Config(**asdict(shape))
    return {"kernel": kernel_in_use(config, device, torch.bfloat16, length=2048)}


def logprob_gap(shape: Shape, layers: int, rows: int, seq_len: int, device: torch.device) -> dict[str, Any]:
    """Mean |log p| difference per token between two bf16 copies of one model, run two ways."""
    from aac.learner.batching import Sample, collate
    from aac.learner.policy import token_logps

    a = build_random(replace(shape, num_hidden_layers=layers), torch.bfloat16, device).eval()
    b = copy.deepcopy(a)
    b.set_attn_implementation("eager")
    g = torch.Generator().manual_seed(1)
    samples = [Sample(torch.randint(3, shape.vocab_size, (seq_len // 2,), generator=g).tolist(),
                      torch.randint(3, shape.vocab_size, (seq_len // 2 - 8 * i,), generator=g).tolist())
               for i in range(rows)]
    with torch.no_grad():
        padded = token_logps(a, collate(samples, 0).to(device))
        gaps, fp32 = [], []
        for row, s in enumerate(samples):
            alone = token_logps(b, collate([s], 0).to(device))[0]
            lo, hi = len(s.prompt_ids) - 1, len(s) - 1
            gaps.append((padded[row, lo:hi] - alone[lo:hi]).abs())
        ref = build_random(replace(shape, num_hidden_layers=layers), torch.float32, device).eval()
        ref.load_state_dict({k: v.float() for k, v in a.state_dict().items()})
        exact = token_logps(ref, collate(samples, 0).to(device))
        for row, s in enumerate(samples):
            lo, hi = len(s.prompt_ids) - 1, len(s) - 1
            fp32.append((padded[row, lo:hi] - exact[row, lo:hi]).abs())
    gap, to_fp32 = torch.cat(gaps), torch.cat(fp32)
    return {"layers": layers, "tokens": len(gap), "mean_abs_gap": gap.mean().item(), "max_abs_gap": gap.max().item(),
            "bf16_vs_fp32_mean_abs_gap": to_fp32.mean().item(), "sync_bound": SYNC_BOUND_BF16,
            "within_bound": gap.mean().item() < SYNC_BOUND_BF16}


def all_reduce_one_rank(device: torch.device) -> dict[str, Any]:
    import torch.distributed as dist

    from aac.learner.backends import free_port
    from aac.learner.collective import all_reduce, group_device

    backend = "nccl" if device.type == "cuda" else "gloo"
    dist.init_process_group(backend, init_method=f"tcp://127.0.0.1:{free_port()}", rank=0, world_size=1)
    try:
        metrics = torch.tensor([1.5, -2.0, 3.0], dtype=torch.float64)  # on the CPU, as Learner._all_reduce builds it
        t0 = time.perf_counter()
        all_reduce(metrics)
        all_reduce(metrics, op=dist.ReduceOp.MAX)
        return {"backend": backend, "group_device": str(group_device()), "values": metrics.tolist(),
                "back_on": str(metrics.device), "ok": metrics.tolist() == [1.5, -2.0, 3.0],
                "ms": (time.perf_counter() - t0) * 1e3}
    finally:
        dist.destroy_process_group()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cpu-rehearsal", action="store_true", help="the same code at a tiny GQA shape on the CPU")
    ap.add_argument("--json", default="gpu_check.json", help="where the results go")
    ap.add_argument("--steps", type=int, default=3, help="timed updates per slice (after one warm-up)")
    args = ap.parse_args()
    rehearsal = args.cpu_rehearsal
    if not rehearsal and not torch.cuda.is_available():
        raise SystemExit("gpu_check: torch sees no CUDA device; --cpu-rehearsal runs the same code on the CPU")
    device = torch.device("cpu" if rehearsal else "cuda")
    shape = TINY_GQA if rehearsal else QWEN3_8B
    tokens, seq_len, steps = (256, 64, 1) if rehearsal else (32768, 2048, args.steps)
    t0 = time.perf_counter()
    results: dict[str, Any] = {
        "device": "cpu (rehearsal)" if rehearsal else torch.cuda.get_device_name(),
        "torch": torch.__version__, "transformers": __import__("transformers").__version__,
        "peft": __import__("peft").__version__, "shape": asdict(shape), "micro_batch_tokens": tokens}
    _part(results, "learner_update", lambda: learner_update(shape, (2, 4) if not rehearsal else (1, 2), tokens,
                                                            seq_len, steps, device))
    _part(results, "attention", lambda: attention_kernel(shape, device))
    _part(results, "logprob_gap", lambda: logprob_gap(shape, 2, 4 if not rehearsal else 2, 512 if not rehearsal else 32,
                                                      device))
    _part(results, "all_reduce", lambda: all_reduce_one_rank(device))
    results["total_s"] = round(time.perf_counter() - t0, 1)
    Path(args.json).write_text(json.dumps(results, indent=1))
    u, g, r = results["learner_update"], results["logprob_gap"], results["all_reduce"]
    mfu = f"{u['mfu']:.1%}" if u.get("mfu") else "n/a"
    print(f"gpu_check on {results['device']}: update {u.get('tokens_per_s', float('nan')):.4g} tok/s at "
          f"{shape.num_hidden_layers} layers (MFU {mfu}), peak {u.get('peak_gb', float('nan')):.2f} GiB vs "
          f"{u.get('predicted_gb', float('nan')):.2f} predicted; attention {results['attention'].get('kernel')}; "
          f"bf16 logprob gap {g.get('mean_abs_gap', float('nan')):.3g} (bound {SYNC_BOUND_BF16}); all-reduce "
          f"{r.get('backend')} {'ok' if r.get('ok') else 'FAILED'}; {results['total_s']} s -> {args.json}")


if __name__ == "__main__":
    main()
