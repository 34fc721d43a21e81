"""A demo-shaped update batch: 4 episodes x 6 turns of one function, built by the real protocol
(recipe smollm2_cpu: history_window 3, max_steps 6), rendered by SmolLM2's chat template, with
scripted replies of about the demo's length (<= 48 tokens) and real sandbox calls.

The episodes of the group differ in the inputs they try, the plans and the hypotheses they write, as
sampled episodes do; the prompts share what the protocol shares (system prompt, header, context
examples, and whole first prompts).
"""

from __future__ import annotations

import random
from typing import Any

from aac.learner import Sample

GROUP = 4
TURNS = 6
MAX_TOKENS = 48
_WORDS = ("the function returns a value that depends on the first argument and maybe on its length, "
          "so I will try a small list, an empty list, a negative number and a string to see whether "
          "it sorts, counts, filters or raises an error on a wrong type").split()


def _reply(phase: str, rng: random.Random, inputs: list[str]) -> str:
    words = " ".join(rng.sample(_WORDS, rng.randint(26, 40)))
    if phase == "reasoning":
        return f"I will call it with {rng.choice(inputs)}: {words}"
    if phase == "input":
        return f"Input: {rng.choice(inputs)}"
    return f"Decision: NO\nSummary: test_func {words}."  # NO: every episode runs all its turns


def demo_samples(tokenizer: Any, seed: int = 0) -> list[Sample]:
    """GROUP x TURNS samples (episode-major), advantages of both signs; completions cut at MAX_TOKENS."""
    from aac.datasets import load_instances
    from aac.engines.base import render_chat
    from aac.env.protocol import Episode, ProtocolConfig, sandbox_caller

    instance = load_instances("builtin:humaneval", split="train", limit=16)[0]
    inputs = [x for x, _ in instance.test_examples + instance.train_examples]
    cfg = ProtocolConfig(history_window=3, max_steps=TURNS, call_timeout_s=5.0)
    rng = random.Random(seed)
    samples = []
    for _ in range(GROUP):
        episode = Episode(instance, cfg, sandbox_caller(None))
        while not episode.done and len(episode.steps) < TURNS:
            prompt_ids = render_chat(tokenizer, episode.prompt())
            reply = _reply(episode.phase.value, rng, inputs)
            completion = tokenizer(reply, add_special_tokens=False)["input_ids"][:MAX_TOKENS]
            episode.step(tokenizer.decode(completion))
            samples.append(Sample(prompt_ids, completion, [], rng.uniform(-1.5, 1.5)))
    return samples


if __name__ == "__main__":
    from transformers import AutoTokenizer

    from aac.learner.packing import pack_plan
    from aac.models import resolve_model

    tok = AutoTokenizer.from_pretrained(resolve_model("smollm2_135m"))
    batch = demo_samples(tok)
    total = sum(len(s) for s in batch)
    print(f"{len(batch)} samples, {total} tokens, {sum(len(s.completion_ids) for s in batch)} completion tokens, "
          f"{sum(len(s.prompt_ids) for s in batch) / len(batch):.0f} prompt tokens per turn")
    for budget in (2048, 4096, 8192):
        plans = pack_plan([s.prompt_ids + s.completion_ids for s in batch], budget)
        print(f"budget {budget}: rows {[len(p.tokens) for p in plans]} = {sum(len(p.tokens) for p in plans)} tokens")
