"""Actor generation on CPU: the base vLLM engine vs the ways of serving the actor's LoRA, side by side.

The demo's rollout shape: SmolLM2-135M float32, groups of 4 identical prompts (the protocol's turn-4
prompts of built HumanEval functions, ~250 tokens), temperature 1, `--tokens` (48) per turn, batch 4
and 16. A random LoRA of the recipe's shape (r8, alpha 16, all linear layers, nonzero B) is the actor.
Served by:

- base:        vLLM, LoRA off, base weights (the reference);
- adapter:     vLLM LoRA as the recipe builds it today (max_lora_rank 16, 2 slots + identity);
- adapter_r8:  vLLM LoRA matched to the adapter (max_lora_rank 8, 1 slot + identity, max_cpu_loras 2);
- merged:      vLLM, LoRA off, the LoRA merged into the weights in place (aac/engines/vllm_merged.py);
- hf_peft:     transformers generate through the peft model (the learner's own);
- hf_merged:   transformers generate with the LoRA merged into the weights.

The base engine stays up and is timed next to each other engine on the same batch (before it in
even rounds, after it in odd ones; fresh prompts every call: the prefix cache only shares what a
group shares), so each ratio compares two adjacent measurements on this shared machine. Prints tok/s (generated tokens / wall) per call
(median over `--rounds`) and the ratio to the base; and the merged engine's load (merge) time.

    python benchmarks/bench_actor_gen.py [--batches 4 16] [--tokens 48] [--rounds 2] [--modes ...]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from bench_critic import random_adapter  # benchmarks/ is the script's folder, so on sys.path

MODES = ("adapter", "adapter_r8", "merged", "hf_peft", "hf_merged")
GROUP = 4
ADAPTER = "actor"


def turn4_prompts(n: int) -> list[list[dict]]:
    """The reasoning prompt of cycle 2 for `n` built HumanEval functions (after a scripted cycle 1)."""
    from aac.assembly import training_protocol
    from aac.config import compose
    from aac.datasets import load_instances
    from aac.env.protocol import Episode, sandbox_caller

    cfg = compose("+recipe=smollm2_cpu")
    instances = load_instances(cfg.env.data, split="train", limit=n)
    out = []
    for inst in instances:
        ep = Episode(inst, training_protocol(cfg.env), caller=sandbox_caller(None))
        for reply in ("I will call it on a short list to see what it returns for ordinary input.",
                      "Input: ([3, 1, 2],)", "Decision: NO\nSummary: it returns a value computed from the list."):
            ep.step(reply)
        out.append(ep.prompt())
    return out


def build(mode: str, model_path: str, adapter: str, kv_cache_gb: int):
    from aac.engines import make_engine

    common = dict(dtype="float32", max_model_len=2048, seed=0)
    vllm = dict(kv_cache_gb=kv_cache_gb, enforce_eager=True)
    if mode == "base":
        return make_engine("vllm", model_path, enable_lora=False, **common, **vllm), None
    if mode == "adapter":
        engine = make_engine("vllm", model_path, enable_lora=True, max_lora_rank=16, max_loras=2, **common, **vllm)
    elif mode == "adapter_r8":
        engine = make_engine("vllm", model_path, enable_lora=True, max_lora_rank=8, max_loras=1, max_cpu_loras=2,
                             **common, **vllm)
    elif mode == "merged":
        from aac.engines.vllm_merged import MergedVLLMEngine

        engine = MergedVLLMEngine(model_path, **common, **vllm)
    elif mode == "hf_peft":
        engine = make_engine("hf", model_path, **common)
    elif mode == "hf_merged":
        engine = make_engine("hf", model_path, **common)
        engine.load_adapter(ADAPTER, adapter, 1)
        engine.model = engine.model.merge_and_unload()
        engine._adapters.clear()
        return engine, None  # the merged weights are the model: requests name no adapter
    else:
        raise SystemExit(f"unknown mode {mode!r}: expected one of {', '.join(MODES)}")
    started = time.perf_counter()
    engine.load_adapter(ADAPTER, adapter, 1)
    return engine, time.perf_counter() - started


class Prompts:
    """Fresh batches: each call takes the next functions (a group of GROUP copies each)."""

    def __init__(self, prompts: list[list[dict]]):
        self.prompts, self.k = prompts, 0

    def batch(self, size: int) -> list[list[dict]]:
        out = []
        for _ in range(size // GROUP):
            p = self.prompts[self.k % len(self.prompts)]
            lap = self.k // len(self.prompts)  # a second lap gets a new tail so nothing is a cache hit
            if lap:
                p = p[:-1] + [{**p[-1], "content": p[-1]["content"] + f"\n(Attempt {lap + 1}.)"}]
            out += [p] * GROUP
            self.k += 1
        return out


def timed(engine, adapter, chats, tokens: int, seed: int) -> tuple[float, int, int]:
    """tok/s of one generate call, its generated tokens and its mean prompt length."""
    from aac.engines import GenRequest, Sampling

    reqs = [GenRequest(c, Sampling(temperature=1.0, max_tokens=tokens, seed=seed + i), adapter)
            for i, c in enumerate(chats)]
    started = time.perf_counter()
    results = engine.generate(reqs)
    wall = time.perf_counter() - started
    gen = sum(len(r.token_ids) for r in results)
    return gen / wall, gen, round(sum(len(r.prompt_ids) for r in results) / len(results))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batches", type=int, nargs="+", default=[4, 16])
    ap.add_argument("--tokens", type=int, default=48)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--modes", nargs="+", default=list(MODES))
    ap.add_argument("--kv-cache-gb", type=int, default=1)
    args = ap.parse_args()
    if any(b % GROUP for b in args.batches):
        raise SystemExit(f"--batches must be multiples of the group size {GROUP}")

    from aac.models import resolve_model

    model_path = resolve_model("smollm2_135m")
    calls = len(args.modes) * args.rounds * sum(b // GROUP for b in args.batches) * 2 + 2
    prompts = Prompts(turn4_prompts(min(calls, 64)))
    tmp = Path(tempfile.mkdtemp(prefix="bench_actor_gen_"))
    adapter = random_adapter(model_path, tmp / "lora", r=8, alpha=16, std=0.02)  # the recipe's shape
    base, _ = build("base", model_path, adapter, args.kv_cache_gb)
    timed(base, None, prompts.batch(GROUP), 8, 0)  # warm-up
    rows, seed = [], 0
    for mode in args.modes:
        t0 = time.perf_counter()
        engine, load_s = build(mode, model_path, adapter, args.kv_cache_gb)
        print(f"{mode}: up in {time.perf_counter() - t0:.1f}s" + (f", adapter loaded in {load_s:.2f}s" if load_s else ""),
              flush=True)
        name = None if mode == "hf_merged" else ADAPTER
        timed(engine, name, prompts.batch(GROUP), 8, 0)  # warm-up
        for batch in args.batches:
            ref, got, plen, gen = [], [], 0, 0
            for k in range(args.rounds):
                seed += 1000
                chats = prompts.batch(batch)
                if k % 2:  # every other round the actor goes first: neither side always gets the quieter turn
                    tps, gen, plen = timed(engine, name, chats, args.tokens, seed)
                    ref.append(timed(base, None, chats, args.tokens, seed)[0])
                else:
                    ref.append(timed(base, None, chats, args.tokens, seed)[0])
                    tps, gen, plen = timed(engine, name, chats, args.tokens, seed)
                got.append(tps)
            r, g = statistics.median(ref), statistics.median(got)
            rows.append((mode, batch, plen, gen, r, g, g / r, load_s))
            print(f"  batch {batch}: base {r:.1f} tok/s, {mode} {g:.1f} tok/s, ratio {g / r:.2f} "
                  f"(rounds: {', '.join(f'{x:.1f}/{y:.1f}' for x, y in zip(ref, got))})", flush=True)
        engine.close()
        del engine
    base.close()
    print("\n| actor path | batch | prompt tokens | generated | base tok/s | actor tok/s | actor / base | adapter load s |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for mode, batch, plen, gen, r, g, ratio, load_s in rows:
        print(f"| {mode} | {batch} | {plen} | {gen} | {r:.1f} | {g:.1f} | **{ratio:.2f}** | "
              f"{'' if load_s is None else f'{load_s:.2f}'} |")


if __name__ == "__main__":
    main()
