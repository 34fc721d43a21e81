"""Where a demo engine call's time goes: the prefill of its prompts against their decode, at 1 and 4 replies.

The demo's engine (SmolLM2-135M float32, vLLM CPU, base weights: the merged actor runs at the base's speed) on the
protocol's turn-4 prompts (~250-300 tokens, benchmarks/bench_actor_gen.py): each call generates `--tokens` or 1 token
(the prefill, and one decode step) for 1 prompt, 4 copies of one prompt (a group) or 4 different prompts, in turn,
for `--rounds` rounds; prints each call and the per-shape medians. A decode step that costs about as much for 4
replies as for 1 makes a step with few replies in flight latency-bound (docs/demo.md, "Where a step's time goes").

    python benchmarks/bench_demo_call.py [--tokens 32] [--rounds 3]
"""

from __future__ import annotations

import argparse
import statistics
import time

from bench_actor_gen import build, turn4_prompts  # benchmarks/ is the script's folder, so on sys.path

SHAPES = ((1, False), (4, False), (4, True))  # (replies, the group's one prompt) per call


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokens", type=int, default=32)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()

    from aac.engines import GenRequest, Sampling
    from aac.models import resolve_model

    started = time.perf_counter()
    engine, _ = build("base", resolve_model("smollm2_135m"), None, 1)
    print(f"engine up in {time.perf_counter() - started:.1f}s", flush=True)
    prompts, k = turn4_prompts(40), 0

    def call(n: int, group: bool, tokens: int) -> tuple[float, int, int]:
        nonlocal k
        chats = [prompts[k % len(prompts)]] * n if group else [prompts[(k + i) % len(prompts)] for i in range(n)]
        k += n  # fresh prompts every call: only a group shares its prefix
        reqs = [GenRequest(c, Sampling(temperature=1.0, max_tokens=tokens, seed=k + i), None) for i, c in enumerate(chats)]
        t0 = time.perf_counter()
        out = engine.generate(reqs)
        return time.perf_counter() - t0, sum(len(r.token_ids) for r in out), round(sum(len(r.prompt_ids) for r in out) / n)

    call(4, False, 4)  # warm-up
    rows: dict[tuple, list] = {}
    for r in range(args.rounds):
        for n, group in SHAPES:
            for tokens in (1, args.tokens):
                wall, gen, plen = call(n, group, tokens)
                rows.setdefault((n, group, tokens), []).append((wall, gen))
                print(f"round {r + 1}: {n} replies{' (a group)' if group else ''}, {tokens} tokens: {wall:.3f}s, "
                      f"{gen} generated, prompts ~{plen} tokens", flush=True)
    engine.close()
    print("\n| replies | max tokens | s / call (median) | generated | s per decode step (after the prefill call) |")
    print("|---|---:|---:|---:|---:|")
    for (n, group, tokens), got in rows.items():
        wall, gen = statistics.median(w for w, _ in got), statistics.median(g for _, g in got)
        prefill = statistics.median(w for w, _ in rows[(n, group, 1)])
        step = (wall - prefill) / max(gen / n - 1, 1) if tokens > 1 else float("nan")
        print(f"| {n}{' (group)' if group else ''} | {tokens} | {wall:.3f} | {gen:.0f} | {step:.3f} |")


if __name__ == "__main__":
    main()
