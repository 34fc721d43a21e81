"""The device check for the day a GPU is lent: one H100 or H200, under 9 minutes, on a bare machine (Python,
torch, transformers and peft; no omegaconf, Hydra, Ray, vLLM or DeepSpeed; `aac` not installed: this
script puts the tree it sits in on `sys.path`). It measures what the flagship's projection assumes about
the learner and writes one JSON, rewritten after every part (a run cut off keeps what it measured):

0. `environment`: Python, torch (its CUDA), transformers, peft, the GPU, its driver and memory, where aac
   was imported from;
1. `tree_attention`: the learner's two prefix-tree kernels (aac/learner/tree_attention.py) on the biggest
   32768-token row of a flagship-shaped batch (`gpu_learner.flagship_batch`: shared prompts of 350
   tokens, groups of 8, 12 turns of 55-150-token replies, packed by aac's own `pack_plan`) at Qwen3-8B's
   heads: the per-segment sdpa loop (KV heads expanded) and one FlexAttention call (its compile, then
   forward + backward), their agreement, peak memory, and a second row length's first call (a recompile
   shows there);
2. `learner_update` and 3. `learner_update_flagship`: the LoRA learner's update at Qwen3-8B's width (random
   bf16 weights, the full vocabulary, gradient checkpointing, `micro_batch_tokens` 32768, prefix sharing,
   KL on) on turns of 2048 tokens sharing a prompt prefix (the 32k row), then on the flagship-shaped batch:
   slices of 2 and 4 decoder layers timed, their step time and peak memory extrapolated linearly to 36
   layers (t = a + b * layers); tokens/s and MFU (model FLOPs, no recomputation, against the GPU's dense
   bf16 peak); each slice's peak memory beside the memory model's prediction (aac/learner/memory.py);
4. `logprob_gap`: the bf16-vs-bf16 log-prob gap between two HF copies of one model (sdpa on a padded batch
   vs eager attention one row at a time), beside the sync check's bound;
5. `all_reduce`: a one-rank NCCL all-reduce through `aac.learner.collective.all_reduce`.

    python benchmarks/gpu_check.py --out $OUT/gpu_check.json   # on the GPU
    python benchmarks/gpu_check.py --cpu-rehearsal              # the same code at a tiny GQA shape on the CPU

A failing part is recorded (`error`) without losing the others. Memory is freed between slices. Parts
not started by `--deadline-s` (default 480 s) are listed under `skipped`.
"""

from __future__ import annotations

import argparse
import copy
import gc
import json
import platform
import shutil
import statistics
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import asdict, replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # aac from this tree: nothing is installed on a lent machine

import torch  # noqa: E402
from gpu_learner import build_random, flagship_batch, flops_per_token, make_batch, peak_flops  # noqa: E402

from aac.config import LearnerConfig  # noqa: E402
from aac.learner import Learner, Sample  # noqa: E402
from aac.learner.memory import Batch, Dims, GiB, predict  # noqa: E402
from aac.learner.packing import PrefixTree, pack_plan  # noqa: E402
from aac.models import QWEN3_8B, Shape  # noqa: E402

# the flagship's sync check bound for a bf16 engine and learner (aac/training/sync.py, LOW_PRECISION_TOLERANCE)
SYNC_BOUND_BF16 = 0.5
# the CPU rehearsal: Qwen3-8B's proportions (GQA 4:1) at a tiny width
TINY_GQA = Shape(vocab_size=1024, hidden_size=64, intermediate_size=192, num_hidden_layers=36, num_attention_heads=8,
                 num_key_value_heads=2, head_dim=8)
PROMPT_FRAC, SHARED_FRAC = 0.75, 0.8  # the 32k row's turns: the prompt's share, and the share all turns share


class Check:
    """The results so far, written to `out` after every part; parts not started by `deadline` are skipped."""

    def __init__(self, out: Path, deadline_s: float):
        self.out, self.deadline = out, time.perf_counter() + deadline_s
        self.results: dict[str, Any] = {}

    def write(self) -> None:
        self.out.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.out.with_name(self.out.name + ".tmp")
        tmp.write_text(json.dumps(self.results, indent=1))
        tmp.replace(self.out)

    def part(self, name: str, fn: Callable[[], dict[str, Any]]) -> None:
        if time.perf_counter() > self.deadline:
            self.results.setdefault("skipped", []).append(name)
            print(f"{name}: skipped (past the deadline)", flush=True)
            self.write()
            return
        t0 = time.perf_counter()
        try:
            self.results[name] = fn()
        except Exception as e:  # a device check reports what failed and goes on with the other parts
            self.results[name] = {"error": f"{type(e).__name__}: {e}", "traceback": traceback.format_exc(limit=4)}
        self.results[name]["seconds"] = round(time.perf_counter() - t0, 1)
        print(f"{name}: {json.dumps(self.results[name])[:400]}", flush=True)
        self.write()


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def _free(device: torch.device) -> None:
    """Drop what the last slice left (the caching allocator's blocks too) and restart the peak count."""
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()


def environment(device: torch.device) -> dict[str, Any]:
    import peft
    import transformers

    import aac
    from aac.hardware import driver_cuda_version

    out: dict[str, Any] = {"python": platform.python_version(), "torch": torch.__version__,
                           "torch_cuda": torch.version.cuda, "transformers": transformers.__version__,
                           "peft": peft.__version__, "aac_from": str(Path(aac.__file__).parent)}
    if device.type != "cuda":
        return {**out, "device": "cpu (rehearsal)"}
    props = torch.cuda.get_device_properties(0)
    driver = None
    if shutil.which("nvidia-smi"):
        driver = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                capture_output=True, text=True, timeout=30).stdout.strip().splitlines()[0]
    return {**out, "device": torch.cuda.get_device_name(), "memory_gib": props.total_memory / GiB,
            "driver": driver, "driver_cuda": driver_cuda_version(), "gpus": torch.cuda.device_count()}


def _learner_cfg(micro_batch_tokens: int) -> LearnerConfig:
    return LearnerConfig(backend="torch", dtype="bfloat16", lora_r=16, lora_alpha=16, lr=1e-6, kl_coef=0.001,
                         gradient_checkpointing=True, micro_batch_tokens=micro_batch_tokens, prefix_sharing=True,
                         logprob_chunk=256)


def _biggest_row(samples: list[Sample], tokens: int) -> Batch:
    """The biggest row of a batch as the learner plans it (no model needed)."""
    rows = pack_plan([s.prompt_ids + s.completion_ids for s in samples], tokens)
    return max((Batch.of_row(r) for r in rows), key=lambda b: b.tokens)


def _slice(shape: Shape, layers: int, tokens: int, samples: list[Sample], steps: int,
           device: torch.device) -> dict[str, Any]:
    """One slice of `layers` decoder layers: the median update time and the peak memory, measured and predicted."""
    from aac.learner.tensor_peak import update_peak

    _free(device)
    model = build_random(replace(shape, num_hidden_layers=layers), torch.bfloat16, device)
    cfg = _learner_cfg(tokens)
    learner = Learner(cfg, "", seed=0, base_model=model)
    predicted = predict(Dims.of(model.config), cfg, device=device.type, batch=_biggest_row(samples, tokens))
    if device.type == "cuda":
        learner.update(samples)  # warm-up: kernels (FlexAttention's compile), the allocator, AdamW's moments
        _sync(device)
        torch.cuda.reset_peak_memory_stats()
        times = []
        for _ in range(steps):
            t0 = time.perf_counter()
            m = learner.update(samples)
            _sync(device)
            times.append(time.perf_counter() - t0)
        measured = torch.cuda.max_memory_allocated()
    else:  # the rehearsal: one update after the warm-up, timed under the tensor count
        peak = update_peak(learner, samples)
        measured, times, m = peak["total"], [peak["seconds"]], peak["metrics"]
    out = {"layers": layers, "step_s": statistics.median(times), "tokens": m["tokens"],
           "micro_batches": m["micro_batches"], "peak_gb": measured / GiB, "predicted_gb": predicted["total"] / GiB,
           "predicted_over_measured": predicted["total"] / measured}
    del learner, model
    _free(device)
    return out


def learner_update(shape: Shape, layers: tuple[int, int], tokens: int, samples: list[Sample], steps: int,
                   device: torch.device) -> dict[str, Any]:
    """Slices of `layers` decoder layers on `samples`, extrapolated linearly to `shape.num_hidden_layers`."""
    a, b = (_slice(shape, n, tokens, samples, steps, device) for n in layers)
    full = shape.num_hidden_layers

    def extrapolate(key: str) -> float:  # a layer costs >= 0 (timing noise can order two tiny slices wrong)
        per_layer = max((b[key] - a[key]) / (b["layers"] - a["layers"]), 0.0)
        return a[key] + per_layer * (full - a["layers"])

    step_s, peak_gb = extrapolate("step_s"), extrapolate("peak_gb")
    full_model = build_random(shape, torch.bfloat16, torch.device("meta"))  # its FLOPs and dimensions only
    rows = pack_plan([s.prompt_ids + s.completion_ids for s in samples], tokens)
    # the keys a query attends to, on average: its depth in the tree, itself included
    attended = statistics.fmean(p + 1 for r in rows for p in r.positions)
    per_token = flops_per_token(full_model, attended, kl=True)
    tok_s = a["tokens"] / step_s
    peak = peak_flops(None)
    cfg = _learner_cfg(tokens)
    # the 36-layer prediction at the biggest row (its path tokens and masks depend on the batch, not the layers)
    predicted = predict(Dims.of(full_model.config), cfg, device=device.type, batch=_biggest_row(samples, tokens))
    return {"slices": [a, b], "layers": full, "rows": len(rows), "generated": sum(len(s.completion_ids) for s in samples),
            "mean_attended": attended, "step_s": step_s, "tokens_per_s": tok_s,
            "tflops_per_s": per_token * tok_s / 1e12, "mfu": per_token * tok_s / peak if peak else None,
            "peak_gb": peak_gb, "predicted_gb": predicted["total"] / GiB,
            "predicted_over_measured": predicted["total"] / GiB / peak_gb}


def shared_prefix_turns(shape: Shape, tokens: int, seq_len: int) -> list[Sample]:
    """Turns of `seq_len` tokens sharing a prompt prefix, as many as make one prefix-shared row of about
    `tokens` unique tokens (the micro-batch the budget allows)."""
    shared = int(int(seq_len * PROMPT_FRAC) * SHARED_FRAC)
    turns = max(1, (tokens - shared) // (seq_len - shared))
    return make_batch(turns * seq_len, seq_len, PROMPT_FRAC, shape.vocab_size, seed=0, shared_frac=SHARED_FRAC)


def tree_attention(shape: Shape, samples: list[Sample], tokens: int, steps: int, device: torch.device) -> dict[str, Any]:
    """The two tree kernels on the batch's biggest row at `shape`'s heads: time, peak memory and agreement.

    On the CPU (the rehearsal) FlexAttention has no backward and no dynamic-shape compile: its unfused form
    runs the forward only there."""
    from transformers import Qwen3Config

    from aac.learner import tree_attention as ta

    rows = sorted(pack_plan([s.prompt_ids + s.completion_ids for s in samples], tokens), key=lambda r: -len(r.tokens))
    tree, other = PrefixTree.of(rows[0]).to(device), PrefixTree.of(rows[-1]).to(device)
    heads, kv, dim = shape.num_attention_heads, shape.num_key_value_heads, shape.head_dim
    module = SimpleNamespace(num_key_value_groups=heads // kv)
    scale = dim ** -0.5
    grad = device.type == "cuda"
    out: dict[str, Any] = {"kernel": ta.kernel_in_use(Qwen3Config(**asdict(shape)), device, torch.bfloat16),
                           "row_tokens": len(tree.row.tokens), "segments": len(tree.segments()),
                           "path_tokens": sum(len(s.path) for s in tree.segments()), "backward": grad}

    def inputs(t: PrefixTree) -> list[torch.Tensor]:
        g = torch.Generator(device=device).manual_seed(0)
        n = len(t.row.tokens)
        return [torch.randn(1, h, n, dim, generator=g, device=device, dtype=torch.bfloat16).requires_grad_(grad)
                for h in (heads, kv, kv)]

    flex = ta._flex() if grad else torch.nn.attention.flex_attention.flex_attention

    def run(kernel: str, t: PrefixTree, qkv: list[torch.Tensor]) -> tuple[torch.Tensor, list[torch.Tensor]]:
        if kernel == "segments":
            o = ta._segments_attention(module, *qkv, t.segments(), scale)
        else:
            o = flex(*qkv, block_mask=ta.block_mask(t.ends), scale=scale, enable_gqa=heads != kv).transpose(1, 2)
        if not grad:
            return o, []
        return o, list(torch.autograd.grad(o, qkv, torch.ones_like(o)))

    results = {}
    with torch.set_grad_enabled(grad):
        qkv = inputs(tree)
        for kernel in ("segments", "flex"):
            _free(device)
            t0 = time.perf_counter()
            results[kernel] = run(kernel, tree, qkv)  # the first call: flex compiles here
            _sync(device)
            first = time.perf_counter() - t0
            times = []
            for _ in range(steps):
                t0 = time.perf_counter()
                run(kernel, tree, qkv)
                _sync(device)
                times.append(time.perf_counter() - t0)
            step = statistics.median(times)
            out[kernel] = {"first_call_s": first, "step_s": step, "tokens_per_s": len(tree.row.tokens) / step,
                           "peak_gb": torch.cuda.max_memory_allocated() / GiB if grad else None}
        t0 = time.perf_counter()
        run("flex", other, inputs(other))  # another row length: a recompile would show here
        _sync(device)
        out["flex"]["other_length_first_call_s"] = time.perf_counter() - t0
        out["flex"]["other_length_tokens"] = len(other.row.tokens)
    (o_seg, g_seg), (o_flex, g_flex) = results["segments"], results["flex"]
    out["max_abs_diff"] = {"out": (o_seg.float() - o_flex.float()).abs().max().item(),
                           **{f"grad_{n}": (a.float() - b.float()).abs().max().item() for n, a, b in zip("qkv", g_seg, g_flex)}}
    out["flex_speedup"] = out["segments"]["step_s"] / out["flex"]["step_s"]
    return out


def logprob_gap(shape: Shape, layers: int, rows: int, seq_len: int, device: torch.device) -> dict[str, Any]:
    """Mean |log p| difference per token between two bf16 copies of one model, run two ways."""
    from aac.learner.batching import collate
    from aac.learner.policy import token_logps

    _free(device)
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


def _summary(r: dict[str, Any], shape: Shape, out: Path) -> str:
    def update(key: str) -> str:
        u = r.get(key, {})
        mfu = f"{u['mfu']:.1%}" if u.get("mfu") else "n/a"
        return (f"{u.get('tokens_per_s', float('nan')):.4g} tok/s (MFU {mfu}, peak {u.get('peak_gb', float('nan')):.2f} "
                f"GiB vs {u.get('predicted_gb', float('nan')):.2f} predicted)")

    a, g, ar = r.get("tree_attention", {}), r.get("logprob_gap", {}), r.get("all_reduce", {})
    return (f"gpu_check on {r.get('environment', {}).get('device')}: update at {shape.num_hidden_layers} layers, 32k row "
            f"{update('learner_update')}, flagship batch {update('learner_update_flagship')}; tree attention "
            f"flex x{a.get('flex_speedup', float('nan')):.3g} the segments loop; bf16 logprob gap "
            f"{g.get('mean_abs_gap', float('nan')):.3g} (bound {SYNC_BOUND_BF16}); all-reduce {ar.get('backend')} "
            f"{'ok' if ar.get('ok') else 'FAILED'}; skipped {r.get('skipped', [])}; {r['total_s']} s -> {out}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cpu-rehearsal", action="store_true", help="the same code at a tiny GQA shape on the CPU")
    ap.add_argument("--out", default="gpu_check.json", help="the JSON, rewritten after every part")
    ap.add_argument("--steps", type=int, default=3, help="timed updates per slice (after one warm-up)")
    ap.add_argument("--deadline-s", type=float, default=480.0, help="no part starts after this many seconds")
    args = ap.parse_args()
    rehearsal = args.cpu_rehearsal
    if not rehearsal and not torch.cuda.is_available():
        raise SystemExit("gpu_check: torch sees no CUDA device; --cpu-rehearsal runs the same code on the CPU")
    device = torch.device("cpu" if rehearsal else "cuda")
    shape = TINY_GQA if rehearsal else QWEN3_8B
    t0 = time.perf_counter()
    check = Check(Path(args.out), args.deadline_s)
    check.part("environment", lambda: environment(device))
    if rehearsal:  # one micro-batch per update: the rehearsal runs in the test suite
        tokens, flagship_tokens, steps, layers = 256, 1024, 1, (1, 2)
        flagship = flagship_batch(shape.vocab_size, groups=1, turns=2, prompt=32, reply=(4, 10))
        row = shared_prefix_turns(shape, tokens, 64)
    else:
        tokens, flagship_tokens, steps, layers = 32768, 32768, args.steps, (2, 4)
        flagship = flagship_batch(shape.vocab_size)
        row = shared_prefix_turns(shape, tokens, 2048)
    check.results.update(shape=asdict(shape), micro_batch_tokens=tokens)
    check.part("tree_attention", lambda: tree_attention(shape, flagship, flagship_tokens, steps, device))
    check.part("learner_update", lambda: learner_update(shape, layers, tokens, row, steps, device))
    check.part("learner_update_flagship", lambda: learner_update(shape, layers, flagship_tokens, flagship, steps,
                                                                 device))
    check.part("logprob_gap", lambda: logprob_gap(shape, 2, 2 if rehearsal else 4, 32 if rehearsal else 512, device))
    check.part("all_reduce", lambda: all_reduce_one_rank(device))
    check.results["total_s"] = round(time.perf_counter() - t0, 1)
    check.write()
    print(_summary(check.results, shape, check.out))


if __name__ == "__main__":
    main()
