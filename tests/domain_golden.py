"""Fixed-seed PAU episodes, played with scripted replies through the real sandbox, as plain data:
every prompt (as a hash: the fixture stays small), step and reward. `tests/data/pau_episodes.json` holds what the code before the domain
interface produced (written by `python tests/domain_golden.py OUT`); test_domains.py replays and compares."""

from __future__ import annotations

import hashlib
import json
import random
import sys

ROW = {
    "test_func_validated": "def test_func(arg0, arg1):\n    if arg1 < 0:\n        raise ValueError('neg')\n"
                           "    return [x * arg1 for x in arg0][:3]\n",
    "description": "Multiplies each item of the list by the number and keeps the first three.",
    "train_examples": json.dumps([["([1, 2], 3)", [3, 6]], ["([], 1)", []]]),
    "test_examples": json.dumps([["([5, 6, 7, 8], 2)", [10, 12, 14]]]),
    "all_examples": json.dumps([["([1, 2], 3)", [3, 6], "None"]]),
    "direct_prompt": "", "interactive_starting_prompt": "",
    "header": "def test_func(arg0, arg1):", "task_id": "golden/0", "source": "golden",
}
_REPLIES = {
    "reasoning": ["I will try a longer list to see the cut.", "", "Try a negative factor: it may raise."],
    "input": ["Input: ([1, 2, 3, 4], 2)", "Input: ([4], -1)", "no idea", "Input: ([1, 2", "test_func([7], 0)",
              " [9, 9], 1)", "Input: ((1, 2), 5)"],
    "reflect": ["Decision: NO\nSummary: scales the list", "Summary: scales and cuts to three\nDecision: YES",
                "maybe", "Decision: NO\nSummary: multiplies items"],
}


def prompt_hash(messages: list[dict]) -> str:
    return hashlib.sha256(json.dumps(messages, sort_keys=True).encode()).hexdigest()[:16]


def play(seed: int, style: str, cues: bool) -> dict:
    from aac.config import RewardConfig
    from aac.env.instance import Instance
    from aac.env.protocol import Episode, ProtocolConfig
    from aac.rewards.schedule import episode_rewards
    from aac.rewards.terms import judgment_kind

    rng = random.Random(seed)
    cfg = ProtocolConfig(max_steps=14, max_calls=5, history_window=3, prompt_style=style, answer_cues=cues,
                         prompt_layout="per_turn")  # the golden prompts of each style as first recorded
    episode = Episode(Instance.from_row(ROW, 0), cfg)
    prompts, steps = [], []
    while not episode.done:
        prompts.append(episode.prompt())
        reply = rng.choice(_REPLIES[episode.phase.value])
        if episode.prefill and reply.startswith(episode.prefill):
            reply = reply[len(episode.prefill):]
        steps.append(episode.step(reply))
    rewards_cfg = RewardConfig(t_max=cfg.max_steps)
    scores = [round(rng.random(), 3) if judgment_kind(s, rewards_cfg) else None for s in steps]
    rewards = episode_rewards(steps, scores, rewards_cfg)
    return {"seed": seed, "style": style, "cues": cues, "prompts": [prompt_hash(p) for p in prompts],
            "steps": [{"phase": s.phase.value, "parse_ok": s.parse_ok, "parsed": s.parsed, "decision": s.decision,
                       "output": None if s.call is None else s.call.output_repr,
                       "error": s.error if s.call is None else s.call.error, "hypothesis": s.hypothesis,
                       "end_reason": s.end_reason, "prefill": s.prefill} for s in steps],
            "scores": scores, "rewards": [round(r, 9) for r in rewards], "summary": episode.summary()}


def play_all() -> list[dict]:
    return [play(seed, style, cues) for seed in range(4) for style in ("paper", "compact") for cues in (False, True)]


if __name__ == "__main__":
    with open(sys.argv[1], "w") as f:
        json.dump(play_all(), f, indent=1, sort_keys=True)
