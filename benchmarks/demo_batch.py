"""Update batches shaped like a recipe's: a group of episodes of one function, built by the real
protocol under the recipe's own env and rollout settings, rendered by a real chat template, with
scripted replies of stated lengths and real sandbox calls.

`demo_samples` is the `smollm2_cpu` demo's batch (4 episodes x 6 turns: compact prompts with their
worked example, answer cues, history_window 3, per-phase token caps; replies of about the demo's
length). `recipe_samples` builds the same for any recipe and overrides (e.g. `qwen3_8b`'s paper-style
prompts, 8 episodes x 12 turns, replies of an 8B model's length).

The episodes of the group differ in the inputs they try, the plans and the hypotheses they write, as
sampled episodes do; the prompts share what the protocol shares (system prompt, worked example,
header, whole first prompts, and what the prompt layout lays out first).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from aac.learner import Sample

GROUP = 4
TURNS = 6
_WORDS = ("the function returns a value that depends on the first argument and maybe on its length, "
          "so I will try a small list, an empty list, a negative number and a string to see whether "
          "it sorts, counts, filters or raises an error on a wrong type").split()
DEMO_WORDS = {"reasoning": (26, 40), "reflect": (26, 40)}  # words per reply, the demo's (its caps cut them)


def _reply(phase: str, style: str, rng: random.Random, inputs: list[str], words: dict[str, tuple[int, int]]) -> str:
    """A whole reply of `phase` in `style`'s format (compact: Summary before Decision)."""
    k = rng.randint(*words.get(phase, words["reasoning"]))  # drawn for every phase: the demo's batch stays as it was
    text = " ".join(rng.sample(_WORDS, k) if k <= len(_WORDS) else rng.choices(_WORDS, k=k))
    if phase == "reasoning":
        return f"Plan: try {rng.choice(inputs)}: {text}"
    if phase == "input":
        return f"Input: {rng.choice(inputs)}\n"
    summary = f"Summary: test_func {text}."
    # NO: every episode runs all its turns
    return f"{summary}\nDecision: NO" if style == "compact" else f"Decision: NO\n{summary}"


@dataclass
class ScriptedTurn:
    """A turn of a scripted episode as the learner and the critic see it (the critic reads what the driver's
    `PlayedTurn` holds: `aac.rollout.judgments.TurnLike`)."""

    sample: Sample
    step: Any  # its StepRecord
    hypothesis: str  # the hypothesis the actor held when it wrote the turn
    observations: list  # the calls it had seen


def recipe_episodes(tokenizer: Any, overrides: Sequence[str] = ("+recipe=smollm2_cpu",), *, group: int = GROUP,
                    turns: int = TURNS, words: dict[str, tuple[int, int]] = DEMO_WORDS,
                    seed: int = 0) -> tuple[Any, list[list[ScriptedTurn]]]:
    """The instance and `group` episodes of `turns` turns each under the recipe's protocol, advantages of both
    signs; completions cut at the recipe's per-phase caps."""
    from aac.config import compose
    from aac.datasets import load_instances
    from aac.engines.base import render_chat
    from aac.env.protocol import Episode, ProtocolConfig, sandbox_caller

    cfg = compose(*overrides)
    instance = load_instances("builtin:humaneval", split="train", limit=16)[0]
    inputs = [x for x, _ in instance.test_examples + instance.train_examples]
    protocol = ProtocolConfig.from_env(cfg.env)
    caps = {**dict.fromkeys(("reasoning", "input", "reflect"), cfg.rollout.max_tokens_per_turn),
            **cfg.rollout.max_tokens_per_phase}
    rng = random.Random(seed)
    episodes = []
    for _ in range(group):
        episode, played = Episode(instance, protocol, sandbox_caller(None)), []
        while not episode.done and len(episode.steps) < turns:
            phase = episode.phase.value
            seen = (episode.hypothesis, episode.observations)
            prompt_ids = render_chat(tokenizer, episode.prompt())
            reply = _reply(phase, protocol.prompt_style, rng, inputs, words)[len(episode.prefill):]  # the cue's continuation
            completion = tokenizer(reply, add_special_tokens=False)["input_ids"][:caps[phase]]
            step = episode.step(tokenizer.decode(completion))
            played.append(ScriptedTurn(Sample(prompt_ids, completion, [], rng.uniform(-1.5, 1.5)), step, *seen))
        episodes.append(played)
    return instance, episodes


def recipe_samples(tokenizer: Any, overrides: Sequence[str] = ("+recipe=smollm2_cpu",), *, group: int = GROUP,
                   turns: int = TURNS, words: dict[str, tuple[int, int]] = DEMO_WORDS, seed: int = 0) -> list[Sample]:
    """`recipe_episodes`' samples, episode-major."""
    _, episodes = recipe_episodes(tokenizer, overrides, group=group, turns=turns, words=words, seed=seed)
    return [turn.sample for played in episodes for turn in played]


def demo_samples(tokenizer: Any, seed: int = 0) -> list[Sample]:
    """The demo's batch: GROUP x TURNS samples of the `smollm2_cpu` recipe."""
    return recipe_samples(tokenizer, seed=seed)


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
