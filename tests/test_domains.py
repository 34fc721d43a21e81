"""The domain interface: the PAU domain plays exactly as the code before it did."""

import json

import domain_golden
from conftest import ROOT


def test_pau_domain_plays_fixed_seed_episodes_with_the_same_prompts_steps_and_rewards_as_before():
    before = json.loads((ROOT / "tests" / "data" / "pau_episodes.json").read_text())
    now = json.loads(json.dumps(domain_golden.play_all()))
    assert len(now) == len(before) == 16
    for a, b in zip(now, before):
        assert (a["seed"], a["style"], a["cues"]) == (b["seed"], b["style"], b["cues"])
        assert a["prompts"] == b["prompts"] and a["steps"] == b["steps"]
        assert a["rewards"] == b["rewards"] and a["summary"] == b["summary"]
