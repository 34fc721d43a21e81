"""One GRPO update of SmolLM2-135M (fp32, LoRA r8, KL on) on the demo's batch, today's path vs the
prefix-shared one, side by side: generated (loss) tokens per second of update, tokens computed,
loss, and peak memory.

    python benchmarks/bench_update.py                      # all modes, 2 interleaved rounds
    python benchmarks/bench_update.py --modes padded,shared_ckpt --rounds 3

Modes: `padded` (prefix_sharing=false, logprob_chunk=0, glibc's own heap: the path before issue
11), `shared` (prefix_sharing, logprob_chunk=256, learner.malloc_mmap_threshold_kb=1024),
`shared_ckpt` (the same with gradient checkpointing), `shared_ckpt_heap` (that with glibc's
dynamic threshold), `shared_ckpt_thp` (shared_ckpt on transparent huge pages, learner.huge_pages:
the child starts with `learner_env`), `shared_ckpt_jemalloc` (shared_ckpt on jemalloc with its
purging off, learner.allocator=jemalloc: preloaded by `learner_env`), `shared_jemalloc` (no checkpointing),
`shared_fused_jemalloc` (that with `learner.fused_mlp`: the demo's learner), `shared_fused_jemalloc_nokl` (that
without the KL term, `learner.kl_coef=0`: no reference pass), `shared_fused_ckptN_jemalloc` (that with the first N
of the 30 layers checkpointed, `learner.checkpoint_layers`; N in 10, 15, 20, 30). Rounds run the modes in turn (A B C A B C),
so load that drifts on a shared machine falls on every mode; ratios are of the per-mode medians.
Each run is its own process on the same batch (benchmarks/demo_batch.py) from the same initial
adapter; peak memory is that process's peak RSS (ru_maxrss), also shown above its RSS once the
model's weights are resident. "computed" counts the positions the model ran, padding included;
user/sys s are the update's process CPU seconds (less sensitive to other load than wall time).
The padded path runs at `--padded-micro-batch-tokens` (its peak at 4096 is ~12 GB, more than this
machine can spare); a child whose RSS passes `--rss-cap-gb` is killed and reported as such.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

MODES = {
    "padded": dict(prefix_sharing=False, logprob_chunk=0, malloc_mmap_threshold_kb=0),
    "shared": dict(prefix_sharing=True, logprob_chunk=256, malloc_mmap_threshold_kb=1024),
    "shared_ckpt": dict(prefix_sharing=True, logprob_chunk=256, gradient_checkpointing=True, malloc_mmap_threshold_kb=1024),
    "shared_ckpt_heap": dict(prefix_sharing=True, logprob_chunk=256, gradient_checkpointing=True,
                             malloc_mmap_threshold_kb=0),  # what the fixed mmap threshold costs and saves
    # shared_ckpt on transparent huge pages: the mapped blocks fault in 2 MB at a time
    "shared_ckpt_thp": dict(prefix_sharing=True, logprob_chunk=256, gradient_checkpointing=True,
                            malloc_mmap_threshold_kb=1024, huge_pages=True),
    # shared_ckpt on jemalloc with purging off (learner.allocator: the child starts with it preloaded)
    "shared_ckpt_jemalloc": dict(prefix_sharing=True, logprob_chunk=256, gradient_checkpointing=True,
                                 malloc_mmap_threshold_kb=0, allocator="jemalloc"),
    # no checkpointing, on jemalloc: the fastest; every activation stays live (~1.4 MB a token)
    "shared_jemalloc": dict(prefix_sharing=True, logprob_chunk=256, malloc_mmap_threshold_kb=0, allocator="jemalloc"),
    # that with the fused SwiGLU MLP (learner.fused_mlp: 2 of its 4 intermediate tensors kept, none recomputed by matmul)
    "shared_fused_jemalloc": dict(prefix_sharing=True, logprob_chunk=256, malloc_mmap_threshold_kb=0,
                                  allocator="jemalloc", fused_mlp=True),
}
# the demo's update without the KL term (learner.kl_coef=0): no reference pass (the adapter-off forward)
MODES["shared_fused_jemalloc_nokl"] = dict(MODES["shared_fused_jemalloc"], kl_coef=0.0)
# fused, with the first N of the 30 layers checkpointed (learner.checkpoint_layers): memory for speed, a layer at a time
MODES.update({f"shared_fused_ckpt{n}_jemalloc": dict(MODES["shared_fused_jemalloc"], gradient_checkpointing=True,
                                                    checkpoint_layers=n) for n in (10, 15, 20, 30)})


def _rss_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def run_mode(mode: str, batch_file: str, micro_batch_tokens: int) -> dict:
    import torch

    from aac.config import LearnerConfig
    from aac.learner import Learner, Sample
    from aac.learner.batching import plan_micro_batches
    from aac.models import resolve_model

    torch.manual_seed(0)
    samples = [Sample(**s) for s in json.loads(Path(batch_file).read_text())]
    cfg = LearnerConfig(backend="torch", lora_r=8, lora_alpha=16, lr=1e-4, dtype="float32",
                        micro_batch_tokens=micro_batch_tokens, **MODES[mode])
    learner = Learner(cfg, resolve_model("smollm2_135m"), seed=0)
    for p in learner.policy.parameters():  # the weights are mmapped: count them resident before timing
        p.data.sum()
    loaded = _rss_gb()
    cpu = resource.getrusage(resource.RUSAGE_SELF)
    start = time.perf_counter()
    m = learner.update(samples)
    seconds = time.perf_counter() - start
    used = resource.getrusage(resource.RUSAGE_SELF)
    if cfg.prefix_sharing:
        computed = m["tokens"]
    else:
        lengths = [len(s) for s in samples]
        computed = sum(len(idx) * max(lengths[i] for i in idx) for idx in plan_micro_batches(lengths, micro_batch_tokens))
    return {"mode": mode, "seconds": round(seconds, 1), "loss_tokens": m["loss_tokens"], "tokens": m["tokens"],
            "computed": computed, "micro_batches": m["micro_batches"],
            "gen_tok_s": round(m["loss_tokens"] / seconds, 2), "user_s": round(used.ru_utime - cpu.ru_utime, 1),
            "sys_s": round(used.ru_stime - cpu.ru_stime, 1), "loss": m["loss"], "grad_norm": m["grad_norm"],
            "peak_rss_gb": round(_rss_gb(), 2), "peak_over_loaded_gb": round(_rss_gb() - loaded, 2)}


def _run_child(mode: str, batch: str, micro_batch_tokens: int, cap_gb: float) -> dict | str:
    """One mode in its own process (started with the environment its config needs): its result row,
    or why there is none."""
    from aac.config import LearnerConfig
    from aac.learner.allocator import learner_env

    cmd = [sys.executable, __file__, "--run", mode, "--batch", batch, "--micro-batch-tokens", str(micro_batch_tokens)]
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        child = subprocess.Popen(cmd, stdout=out, stderr=err, text=True, env={**os.environ, **learner_env(LearnerConfig(**MODES[mode]))})
        over = False
        while child.poll() is None:
            time.sleep(0.5)
            status = Path(f"/proc/{child.pid}/status")
            rss = next((int(line.split()[1]) for line in status.read_text().splitlines()
                        if line.startswith("VmRSS")), 0) if status.exists() else 0
            if rss > cap_gb * 2**20:
                child.kill()
                over = True
        child.wait()
        out.seek(0)
        err.seek(0)
        if over:
            return f"killed: RSS over {cap_gb} GB"
        if child.returncode != 0:  # e.g. SIGKILL by the OOM killer
            return f"exit {child.returncode}: {(err.read().strip().splitlines() or ['killed'])[-1]}"
        return json.loads(out.read().strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--micro-batch-tokens", type=int, default=4096)
    ap.add_argument("--padded-micro-batch-tokens", type=int, default=1024)
    ap.add_argument("--rss-cap-gb", type=float, default=6.0)
    ap.add_argument("--run", help=argparse.SUPPRESS)  # child: one mode
    ap.add_argument("--batch", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.run:
        print(json.dumps(run_mode(args.run, args.batch, args.micro_batch_tokens)))
        return

    from transformers import AutoTokenizer

    sys.path.insert(0, str(Path(__file__).parent))
    from demo_batch import demo_samples

    from aac.models import resolve_model

    samples = demo_samples(AutoTokenizer.from_pretrained(resolve_model("smollm2_135m")))
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump([asdict(s) for s in samples], f)
    modes = args.modes.split(",")
    budgets = {m: args.padded_micro_batch_tokens if m == "padded" else args.micro_batch_tokens for m in modes}
    print(f"batch: {len(samples)} turns, {sum(len(s) for s in samples)} tokens, "
          f"{sum(len(s.completion_ids) for s in samples)} generated; micro_batch_tokens {budgets}", flush=True)
    runs: dict[str, list[dict]] = {m: [] for m in modes}
    for round_ in range(args.rounds):
        for mode in modes:
            row = _run_child(mode, f.name, budgets[mode], args.rss_cap_gb)
            print(f"round {round_ + 1} {mode}: {json.dumps(row)}", flush=True)
            if isinstance(row, dict):
                runs[mode].append(row)
    done = [m for m in modes if runs[m]]
    if not done:
        return
    base = done[0]
    med = {m: statistics.median(r["gen_tok_s"] for r in runs[m]) for m in done}
    cpu = {m: statistics.median(r["user_s"] + r["sys_s"] for r in runs[m]) for m in done}
    print(f"\n| mode | micro_batch_tokens | update s (runs) | generated tok/s (median) | x {base} | CPU s user+sys "
          f"(median) | {base} CPU s / mode's | tokens computed | loss | peak RSS GB (over resident model) |\n"
          "|---|---:|---|---:|---:|---:|---:|---:|---|---|")
    for m in done:
        r = runs[m]
        print(f"| {m} | {budgets[m]} | {', '.join(str(x['seconds']) for x in r)} | {med[m]} | "
              f"{med[m] / med[base]:.2f} | {cpu[m]:.1f} | {cpu[base] / cpu[m]:.2f} | {r[0]['computed']} | "
              f"{r[0]['loss']:.7f} | {max(x['peak_rss_gb'] for x in r)} ({max(x['peak_over_loaded_gb'] for x in r)}) |")

if __name__ == "__main__":
    main()
