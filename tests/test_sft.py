"""Traces -> SFT: the score filter, the prompt replay, the NLL loss, the SFT step and init_adapter."""

from __future__ import annotations

import json
import math

import pytest
import torch
from test_instance import make_instance

from aac.config import LearnerConfig
from aac.env.protocol import Episode, ProtocolConfig
from aac.eval import records
from aac.learner import Learner, Sample
from aac.learner.sft_loss import sft_loss
from aac.rollout.driver import EpisodeSpec, PlayedEpisode
from aac.rollout.record import interactive_record
from aac.sandbox.result import CallResult
from aac.traces import keep_episode, load_turns

REPLIES = ["I will try a longer string.", "Input: (2, 'abc')", "NO\nSummary: repeats the string n times",
           "Now a zero count.", "Input: (0, 'q')", "YES\nSummary: repeats the string arg1 arg0 times, with arg0"]


def fake_call(source: str, input_str: str, timeout_s: float) -> CallResult:
    """A deterministic function stand-in: the protocol is what is under test here."""
    return CallResult(output=None, error=None, duration_s=0.001, output_repr=f"result of {input_str}",
                      normalized=None)


def write_run(run_dir, scores: dict[str, float | None]) -> tuple[dict, ProtocolConfig]:
    """An interactive eval run directory with one real protocol episode per uid and the given scores."""
    identity = {"mode": "interactive", "data": "unit", "split": "test", "history_window": 3, "max_calls": 4,
                "call_timeout_s": 1.0, "max_tokens_per_turn": 64}
    protocol = ProtocolConfig(history_window=3, max_steps=12, max_calls=4, call_timeout_s=1.0)
    prompts = {}
    episodes = []
    for uid in scores:
        ep = Episode(make_instance(uid), protocol, fake_call)
        for reply in REPLIES:
            ep.step(reply)
        prompts[uid] = [s.prompt for s in ep.steps]
        episodes.append(interactive_record(PlayedEpisode(EpisodeSpec(0, ep.instance), ep, [], elapsed_s=1.0)))
    run_dir.mkdir(parents=True, exist_ok=True)
    records.write_json(run_dir / records.RUN, identity)
    records.append_jsonl(run_dir / records.EPISODES, episodes)
    records.append_jsonl(run_dir / records.SCORES, [{"uid": u, "judge": {"score": s}} for u, s in scores.items()
                                                    if s is not None])
    return prompts, protocol


def test_only_episodes_at_or_above_the_threshold_are_trained_on(tmp_path):
    scores = {"good/5": 5.0, "ok/4": 4.0, "meh/3": 3.0, "bad/1": 1.0, "unscored": None}
    prompts, _ = write_run(tmp_path / "run", scores)
    instances = {uid: make_instance(uid) for uid in scores}
    turns, summary = load_turns([tmp_path / "run"], 4.0, None,
                                instances_for=lambda data, split, *_: list(instances.values()))
    assert {t.uid for t in turns} == {"good/5", "ok/4"}  # the release's inverted filter kept meh and bad
    assert (summary.kept, summary.below_threshold, summary.unscored, summary.turns) == (2, 2, 1, 12)
    # the rebuilt prompts are the ones the actor saw, turn by turn
    assert [t.messages for t in turns if t.uid == "ok/4"] == prompts["ok/4"]
    assert [t.reply for t in turns if t.uid == "ok/4"] == REPLIES
    turns, _ = load_turns([tmp_path / "run"], 1.0, None, instances_for=lambda d, s, *_: list(instances.values()))
    assert {t.uid for t in turns} == {"good/5", "ok/4", "meh/3", "bad/1"}
    assert keep_episode({"judge": {"score": 4}}, 4) and not keep_episode({"judge": {"score": 3.9}}, 4)
    assert not keep_episode(None, 1) and not keep_episode({"judge": {"score": None}}, 1)


def test_a_record_the_replay_cannot_reproduce_is_skipped(tmp_path):
    write_run(tmp_path / "run", {"a": 5.0, "b": 5.0})
    path = tmp_path / "run" / records.EPISODES
    eps = records.read_jsonl(path)
    eps[0]["steps"][1]["parsed"] = "(9, 'changed')"  # not what the reply holds
    path.write_text("".join(json.dumps(e) + "\n" for e in eps))
    turns, summary = load_turns([tmp_path / "run"], 4.0, None,
                                instances_for=lambda d, s, *_: [make_instance("a"), make_instance("b")])
    assert {t.uid for t in turns} == {"b"} and summary.not_replayed == 1


def test_sft_loss_is_the_token_mean_nll_of_the_reply():
    logp = torch.log(torch.tensor([[0.9, 0.5, 0.25, 0.1]]))
    mask = torch.tensor([[0, 1, 1, 0]])
    assert sft_loss(logp, mask).item() == pytest.approx(-(math.log(0.5) + math.log(0.25)) / 2)
    assert sft_loss(logp, mask, num_tokens=4).item() == pytest.approx(-(math.log(0.5) + math.log(0.25)) / 4)


def test_sft_steps_lower_the_nll_and_init_adapter_restores_the_policy(tiny_model_path, tmp_path):
    cfg = LearnerConfig(backend="torch", lora_r=4, lora_alpha=8, lr=1e-2)
    prompt, reply = list(range(5, 25)), [7, 8, 9, 10, 11]
    learner = Learner(cfg, tiny_model_path, seed=0)
    before = -sum(learner.token_logprobs(prompt, reply))
    losses = [learner.sft_update([Sample(prompt, reply), Sample(prompt[:9], reply[:3])])["loss"] for _ in range(4)]
    after = -sum(learner.token_logprobs(prompt, reply))
    assert losses[-1] < losses[0] and after < before
    learner.save_adapter(tmp_path / "adapter")
    warm = Learner(LearnerConfig(**{**cfg.__dict__, "init_adapter": str(tmp_path)}), tiny_model_path, seed=1)
    assert warm.token_logprobs(prompt, reply) == pytest.approx(learner.token_logprobs(prompt, reply), abs=1e-5)
    with pytest.raises(ValueError, match="does not fit"):
        Learner(LearnerConfig(**{**cfg.__dict__, "lora_r": 8, "init_adapter": str(tmp_path / "adapter")}),
                tiny_model_path)
    with pytest.raises(FileNotFoundError, match="init_adapter"):
        Learner(LearnerConfig(**{**cfg.__dict__, "init_adapter": str(tmp_path / "nothing")}), tiny_model_path)
