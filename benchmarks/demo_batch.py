"""A demo-shaped update batch: 4 episodes x 6 turns of one function, built by the real protocol
under the `smollm2_cpu` recipe's own env and rollout settings (compact prompts with their worked
example, answer cues, history_window 3, per-phase token caps), rendered by SmolLM2's chat template,
with scripted replies of about the demo's length and real sandbox calls.

The episodes of the group differ in the inputs they try, the plans and the hypotheses they write, as
sampled episodes do; the prompts share what the protocol shares (system prompt, worked example,
header, and whole first prompts).
"""

from __future__ import annotations

import random
from typing import Any

from aac.learner import Sample

GROUP = 4
TURNS = 6
_WORDS = ("the function returns a value that depends on the first argument and maybe on its length, "
          "so I will try a small list, an empty list, a negative number and a string to see whether "
          "it sorts, counts, filters or raises an error on a wrong type").split()


def _reply(phase: str, rng: random.Random, inputs: list[str]) -> str:
    """The continuation of the phase's answer cue (the compact style's: none, `Input: (`, `Summary:`)."""
    words = " ".join(rng.sample(_WORDS, rng.randint(26, 40)))
    if phase == "reasoning":
        return f"Plan: try {rng.choice(inputs)}: {words}"
    if phase == "input":
        return f"{rng.choice(inputs)[1:]}\n"  # the cue opened the tuple
    return f" test_func {words}.\nDecision: NO"  # NO: every episode runs all its turns


def demo_samples(tokenizer: Any, seed: int = 0) -> list[Sample]:
    """GROUP x TURNS samples (episode-major), advantages of both signs; completions cut at the
    recipe's per-phase caps."""
    from aac.config import compose
    from aac.datasets import load_instances
    from aac.engines.base import render_chat
    from aac.env.protocol import Episode, ProtocolConfig, sandbox_caller

    cfg = compose("+recipe=smollm2_cpu")
    instance = load_instances("builtin:humaneval", split="train", limit=16)[0]
    inputs = [x for x, _ in instance.test_examples + instance.train_examples]
    protocol = ProtocolConfig.from_env(cfg.env)
    caps = {**dict.fromkeys(("reasoning", "input", "reflect"), cfg.rollout.max_tokens_per_turn),
            **cfg.rollout.max_tokens_per_phase}
    rng = random.Random(seed)
    samples = []
    for _ in range(GROUP):
        episode = Episode(instance, protocol, sandbox_caller(None))
        while not episode.done and len(episode.steps) < TURNS:
            phase = episode.phase.value
            prompt_ids = render_chat(tokenizer, episode.prompt())
            completion = tokenizer(_reply(phase, rng, inputs), add_special_tokens=False)["input_ids"][:caps[phase]]
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
