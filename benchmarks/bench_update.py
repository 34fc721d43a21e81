"""One GRPO update of SmolLM2-135M (fp32, LoRA r8, KL on) on the demo's batch, today's path vs the
prefix-shared one, side by side: generated (loss) tokens per second of update, tokens computed,
loss, and peak memory.

    python benchmarks/bench_update.py                      # all modes at micro_batch_tokens=4096
    python benchmarks/bench_update.py --modes shared,shared_ckpt

Modes: `padded` (prefix_sharing=false, logprob_chunk=0: the path before issue 11), `shared`
(prefix_sharing, logprob_chunk=256), `shared_ckpt` (the same with gradient checkpointing).
Each mode runs in its own process on the same batch (benchmarks/demo_batch.py) from the same
initial adapter; peak memory is that process's peak RSS (ru_maxrss), also shown above its RSS
after the model was loaded. "computed" counts the positions the model ran, padding included.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

MODES = {
    "padded": dict(prefix_sharing=False, logprob_chunk=0),
    "shared": dict(prefix_sharing=True, logprob_chunk=256),
    "shared_ckpt": dict(prefix_sharing=True, logprob_chunk=256, gradient_checkpointing=True),
}


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
    loaded = _rss_gb()
    start = time.perf_counter()
    m = learner.update(samples)
    seconds = time.perf_counter() - start
    if cfg.prefix_sharing:
        computed = m["tokens"]
    else:
        lengths = [len(s) for s in samples]
        computed = sum(len(idx) * max(lengths[i] for i in idx) for idx in plan_micro_batches(lengths, micro_batch_tokens))
    return {"mode": mode, "seconds": round(seconds, 1), "loss_tokens": m["loss_tokens"], "tokens": m["tokens"],
            "computed": computed, "micro_batches": m["micro_batches"],
            "gen_tok_s": round(m["loss_tokens"] / seconds, 2), "loss": m["loss"], "grad_norm": m["grad_norm"],
            "peak_rss_gb": round(_rss_gb(), 2), "peak_over_loaded_gb": round(_rss_gb() - loaded, 2)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--micro-batch-tokens", type=int, default=4096)
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
    print(f"batch: {len(samples)} turns, {sum(len(s) for s in samples)} tokens, "
          f"{sum(len(s.completion_ids) for s in samples)} generated; micro_batch_tokens={args.micro_batch_tokens}",
          flush=True)
    rows = []
    for mode in args.modes.split(","):
        out = subprocess.run([sys.executable, __file__, "--run", mode, "--batch", f.name,
                              "--micro-batch-tokens", str(args.micro_batch_tokens)], capture_output=True, text=True)
        if out.returncode != 0:  # e.g. SIGKILL by the OOM killer: the padded path peaks at ~12 GB at 4096
            print(f"{mode}: exit {out.returncode}, {out.stderr.strip().splitlines()[-1:] or 'killed'}", flush=True)
            continue
        rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
        print(json.dumps(rows[-1]), flush=True)
    base = rows[0]
    print(f"\n| mode | update s | generated tok/s | x {base['mode']} | tokens computed | loss | peak RSS GB "
          "(over loaded) |\n|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['mode']} | {r['seconds']} | {r['gen_tok_s']} | {r['gen_tok_s'] / base['gen_tok_s']:.2f} | "
              f"{r['computed']} | {r['loss']:.7f} | {r['peak_rss_gb']} ({r['peak_over_loaded_gb']}) |")


if __name__ == "__main__":
    main()
