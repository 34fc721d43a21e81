"""Update tokens per generated token: what the learner computes for every token the actor wrote, under
each prompt style and layout, on batches shaped like the recipes' (benchmarks/demo_batch.py).

- compact: the `smollm2_cpu` demo's batch (4 episodes x 6 turns, its replies and caps);
- paper: `qwen3_8b`'s paper-style prompts (history_window 5, no answer cues), 8 episodes x 12 and x 40
  turns (a group of the flagship; 12-40 turns an episode), replies of an 8B model's length (plans of
  50-80 words, summaries of 20-50), at the recipe's micro_batch_tokens and at a larger one.

"padded" counts every turn's whole prompt + reply (no prefix sharing); "prefix tree" the unique tokens
of `aac.learner.packing.pack_plan`'s rows, what the learner runs. Tokens are SmolLM2's (the only
tokenizer here; Qwen3's packs English and code a little tighter, the ratios move little).

    python benchmarks/update_tokens.py
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from demo_batch import DEMO_WORDS, recipe_samples  # noqa: E402

EIGHT_B_WORDS = {"reasoning": (50, 80), "reflect": (20, 50)}
CASES = [  # (label, recipe overrides, group, turns, reply words, micro_batch_tokens)
    ("compact (smollm2_cpu demo)", ("+recipe=smollm2_cpu",), 4, 6, DEMO_WORDS, (4096,)),
    ("paper (qwen3_8b), 12 turns", ("+recipe=qwen3_8b",), 8, 12, EIGHT_B_WORDS, (8192, 32768)),
    ("paper (qwen3_8b), 40 turns", ("+recipe=qwen3_8b",), 8, 40, EIGHT_B_WORDS, (8192, 32768)),
]
LAYOUTS = ("per_turn", "shared_first")


def measure(samples, budget: int) -> dict:
    from aac.learner.packing import pack_plan

    generated = sum(len(s.completion_ids) for s in samples)
    rows = pack_plan([s.prompt_ids + s.completion_ids for s in samples], budget)
    return {"samples": len(samples), "generated": generated, "padded": sum(len(s) for s in samples),
            "tree": sum(len(r.tokens) for r in rows), "prompt_per_turn": sum(len(s.prompt_ids) for s in samples) / len(samples)}


def main() -> None:
    from transformers import AutoTokenizer

    from aac.models import resolve_model

    tok = AutoTokenizer.from_pretrained(resolve_model("smollm2_135m"))
    print("| batch | layout | micro_batch_tokens | turns | generated | prompt tokens / turn | padded / generated "
          "| **prefix tree / generated** | x per_turn |\n|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for label, overrides, group, turns, words, budgets in CASES:
        base: dict[int, float] = {}
        for layout in LAYOUTS:
            samples = recipe_samples(tok, (*overrides, f"env.prompt_layout={layout}"), group=group, turns=turns,
                                     words=words)
            for budget in budgets:
                m = measure(samples, budget)
                ratio = m["tree"] / m["generated"]
                base.setdefault(budget, ratio)
                print(f"| {label} | {layout} | {budget} | {m['samples']} | {m['generated']} | {m['prompt_per_turn']:.0f} "
                      f"| {m['padded'] / m['generated']:.2f} | **{ratio:.2f}** | {ratio / base[budget]:.2f} |", flush=True)


if __name__ == "__main__":
    main()
