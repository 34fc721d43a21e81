"""Does an `aac.sft` adapter reproduce its traces? Greedy replies of base vs adapter on the training prompts.

    python benchmarks/bench_sft.py RUN_DIR SFT_OUT [--min-score 1] [--model smollm2_135m] [--limit N]

RUN_DIR is the aac.eval run the adapter was trained on, SFT_OUT the aac.sft output folder. For every
kept turn (the same filter as training) both models reply greedily, side by side in one run, with
the eval run's per-turn token limit; printed: exact matches of the reply, mean fraction of the
trace's leading tokens reproduced, and the SFT loss per epoch from SFT_OUT/metrics.jsonl.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path


def prefix_fraction(got: list[int], want: list[int]) -> float:
    n = 0
    for a, b in zip(got, want):
        if a != b:
            break
        n += 1
    return n / max(1, len(want))


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("run_dir")
    p.add_argument("sft_out")
    p.add_argument("--min-score", type=float, default=1.0)
    p.add_argument("--model", default="smollm2_135m")
    p.add_argument("--limit", type=int)
    a = p.parse_args()

    from transformers import AutoTokenizer

    from aac.config import compose
    from aac.engines import GenRequest, Sampling, make_engine
    from aac.models import chat_template_kwargs, resolve_model
    from aac.traces import load_turns

    cfg = compose(f"model={a.model}")
    turns, summary = load_turns([a.run_dir], a.min_score, cfg.env)
    turns = turns[: a.limit] if a.limit else turns
    identity = json.loads((Path(a.run_dir) / "run.json").read_text())
    max_tokens = identity.get("max_tokens_per_turn", 48)
    ckpt = json.loads((Path(a.sft_out) / "summary.json").read_text())["adapter"]
    path = resolve_model(a.model)
    tok = AutoTokenizer.from_pretrained(path)
    kwargs = chat_template_kwargs(a.model, {})
    engine = make_engine("hf", path, max_model_len=cfg.model.max_model_len, chat_template_kwargs=kwargs)
    engine.load_adapter("sft", ckpt, 1)
    sampling = Sampling(temperature=0.0, max_tokens=max_tokens)
    print(f"{summary.text()}; measuring {len(turns)} turns, greedy, max {max_tokens} tokens")
    rows = {}
    for name, adapter in (("base", None), ("sft", "sft")):
        t0 = time.perf_counter()
        out = engine.generate([GenRequest(t.messages, sampling, adapter) for t in turns])
        exact = [r.text.strip() == t.reply.strip() for r, t in zip(out, turns)]
        prefix = [prefix_fraction(r.token_ids, tok(t.reply, add_special_tokens=False)["input_ids"][:max_tokens])
                  for r, t in zip(out, turns)]
        rows[name] = (sum(exact), statistics.fmean(prefix), time.perf_counter() - t0)
    print("| model | exact reply matches | mean leading-token fraction reproduced | wall |")
    print("|---|---:|---:|---:|")
    for name, (exact, prefix, wall) in rows.items():
        print(f"| {name} | {exact}/{len(turns)} | {prefix:.3f} | {wall:.0f} s |")
    metrics = [json.loads(line) for line in open(Path(a.sft_out) / "metrics.jsonl")]
    by_epoch: dict[int, list[float]] = {}
    for m in metrics:
        by_epoch.setdefault(m["epoch"], []).append(m["losses/sft_nll"])
    print("SFT NLL per epoch (mean over its steps): "
          + ", ".join(f"epoch {e}: {statistics.fmean(v):.4f}" for e, v in sorted(by_epoch.items()))
          + f"; first step {metrics[0]['losses/sft_nll']:.4f}, last {metrics[-1]['losses/sft_nll']:.4f}")
    engine.close()


if __name__ == "__main__":
    main()
