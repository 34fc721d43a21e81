"""The domain interface: the PAU domain plays exactly as the code before it did; training and evaluation run on the
new domains."""

import json

import domain_golden
import pytest
from conftest import ROOT

from aac.config import compose
from aac.data.library import MODULES
from aac.metrics import read
from aac.training import Trainer


def test_pau_domain_plays_fixed_seed_episodes_with_the_same_prompts_steps_and_rewards_as_before():
    before = json.loads((ROOT / "tests" / "data" / "pau_episodes.json").read_text())
    now = json.loads(json.dumps(domain_golden.play_all()))
    assert len(now) == len(before) == 16
    for a, b in zip(now, before):
        assert (a["seed"], a["style"], a["cues"]) == (b["seed"], b["style"], b["cues"])
        assert a["prompts"] == b["prompts"] and a["steps"] == b["steps"]
        assert a["rewards"] == b["rewards"] and a["summary"] == b["summary"]


@pytest.mark.slow
@pytest.mark.parametrize("domain, extra", [
    ("stateful", ()),
    ("library", ("env.constrained_format=true",)),  # the random tiny model then writes real calls
    ("web", ()),
])
def test_tiny_training_runs_two_steps_on_each_new_domain(tmp_path, domain, extra):
    cfg = compose("+recipe=tiny", "rollout.placement=local", f"env.domain={domain}", "max_steps=2",
                  "save_every=100", *extra)
    assert cfg.env.data == f"builtin:{domain}"  # the domain's own built-in set, by default
    trainer = Trainer(cfg, tmp_path)
    try:
        trainer.run()
    finally:
        trainer.close()
    assert {i.domain for i in trainer.instances} == {domain}
    steps = read(tmp_path / "metrics.jsonl")
    assert [r["step"] for r in steps] == [1, 2]
    assert _played_the_domain(domain, {uid for r in steps for uid in r["uids"]})
    if domain == "library":
        assert any(r["episode/queries_mean"] > 0 for r in steps)  # the real functions were called


def _played_the_domain(domain: str, uids: set[str]) -> bool:
    if domain in ("stateful", "web"):
        return all(uid.startswith(f"{domain}/") for uid in uids)
    return all(uid.split(".")[0] in MODULES for uid in uids)  # numpy.cumsum, math.comb, ...


@pytest.mark.slow
@pytest.mark.parametrize("domain", ["stateful", "library", "web"])
def test_eval_on_each_new_domain_writes_its_report(tmp_path, run_module, domain):
    from aac.eval import records

    out = tmp_path / "eval"
    res = run_module("aac.eval", "+recipe=tiny", f"env.domain={domain}", "limit=2", "eval.max_calls=2",
                     "eval.max_tokens_per_turn=16", "eval.judge_max_tokens=8", "eval.coder_max_tokens=16",
                     f"out_dir={out}", timeout=900)
    assert res.returncode == 0, res.stderr[-3000:]
    report = json.loads((out / records.REPORT_JSON).read_text())
    episodes = [json.loads(line) for line in (out / records.EPISODES).read_text().splitlines()]
    assert len(episodes) == 2 and _played_the_domain(domain, {e["uid"] for e in episodes})
    assert report["n"] == 2 and report["code_match"] and json.loads((out / records.RUN).read_text())["domain"] == domain
    if domain == "web":  # service calls beside the intent-only baseline and the gold-documentation ceiling
        assert set(report["service_calls"]) == {"intent_only", "agent", "gold"}
        assert "| none (intent only) | " in (out / records.REPORT_MD).read_text()
