"""The gold-leak guard: in ordinary runs (a training step and an `aac.eval` run, tiny recipe, the real
HF engine) no request the actor's engine receives holds the gold description, the function's source or
its mutants (the row's privileged side); only the privileged roles' requests (critic, judge) do. The positive control, an answer-aware
teacher's prompts caught by the same detector, is in test_teacher.py (no model needed there)."""

from __future__ import annotations

from dataclasses import replace

import pytest

import aac.datasets
import aac.engines
from aac.config import compose
from aac.critic.prompts import system_prompts
from aac.env.instance import Mutant
from aac.eval.harness import evaluate
from aac.scorers import codematch, judge
from aac.training import Trainer

# requests with one of these system prompts are the privileged roles' (they may see the gold); any
# other request is treated as the actor's
PRIVILEGED_SYSTEMS = {*system_prompts(), judge.SYSTEM, codematch.SYSTEM}
MIN_LINE_CHARS = 20  # a source line this long is distinctive (shorter ones, e.g. `return x`, are not)


def _flat(text: str) -> str:
    return " ".join(text.split())


def gold_fragments(instance) -> list[str]:
    """The gold description and every distinctive line of the source (the header is shown to the actor)."""
    lines = {_flat(line) for line in instance.code.splitlines()} - {_flat(instance.header)}
    return [f for f in [_flat(instance.description), *sorted(lines)] if len(f) >= MIN_LINE_CHARS]


def mutant_fragments(instance) -> list[str]:
    """Every distinctive line of the row's mutants that its source does not hold (the lines they changed)."""
    own = {_flat(line) for line in instance.code.splitlines()}
    lines = {_flat(line) for m in instance.mutants or () for line in m.code.splitlines()} - own
    return [f for f in sorted(lines) if len(f) >= MIN_LINE_CHARS]


CANARY = "canary_mutant_line = 'a9d2b7'"  # a line only a mutant holds, on every row loaded in the test


@pytest.fixture
def canary_mutants(monkeypatch) -> None:
    real = aac.datasets.load_instances

    def load(*args, **kwargs):
        return [replace(i, mutants=(*(i.mutants or ()), Mutant("drop", "canary", f"{CANARY}\n{i.code}", "(0,)")))
                for i in real(*args, **kwargs)]

    monkeypatch.setattr(aac.datasets, "load_instances", load)


def leaked(chat: list[dict], fragments: list[str]) -> list[str]:
    text = _flat(" ".join(m["content"] for m in chat))
    return [f for f in fragments if f in text]


def is_privileged(chat: list[dict]) -> bool:
    return bool(chat) and chat[0]["role"] == "system" and chat[0]["content"] in PRIVILEGED_SYSTEMS


class RecordingEngine:
    """The real engine, with every chat it is asked about recorded."""

    def __init__(self, inner, chats: list):
        self.inner, self.chats = inner, chats

    def generate(self, requests):
        self.chats.extend(r.messages for r in requests)
        return self.inner.generate(requests)

    def submit(self, requests):  # the episode driver's turns come this way
        self.chats.extend(r.messages for r in requests)
        return self.inner.submit(requests)

    def next_token_logprobs(self, requests, candidates):
        self.chats.extend(r.messages for r in requests)
        return self.inner.next_token_logprobs(requests, candidates)

    def __getattr__(self, name):
        return getattr(self.inner, name)


@pytest.fixture
def chats(monkeypatch) -> list:
    recorded: list = []
    real = aac.engines.engine_from_config
    monkeypatch.setattr(aac.engines, "engine_from_config", lambda *a, **k: RecordingEngine(real(*a, **k), recorded))
    return recorded


EVAL = ("+recipe=tiny", "data=builtin:humaneval", "split=test", "limit=2", "eval.max_calls=2",
        "eval.max_tokens_per_turn=16", "eval.judge_max_tokens=8", "eval.coder_max_tokens=16", "eval.batch_size=2")


def _eval_cfg(out, *extra):
    from aac.cli import rewrite_aliases

    return compose(*rewrite_aliases([*EVAL, f"out_dir={out}", *extra]), config_name="eval_config")


@pytest.mark.slow
def test_no_actor_prompt_of_training_or_eval_holds_the_gold(tmp_path, chats, canary_mutants):
    cfg = compose("+recipe=tiny", "rollout.placement=local", "max_steps=1", "env.limit=2",
                  "rollout.group_size=2", "env.max_steps=6", "save_every=100", "check_sync=false")
    trainer = Trainer(cfg, tmp_path / "train")
    try:
        trainer.run()
    finally:
        trainer.close()
    evaluate(_eval_cfg(tmp_path / "eval"))
    instances = [*trainer.instances, *aac.datasets.load_instances("builtin:humaneval", split="test", limit=2)]
    fragments = [f for inst in instances for f in [*gold_fragments(inst), *mutant_fragments(inst)]]
    assert _flat(CANARY) in fragments and all(i.mutants for i in instances)
    actor = [c for c in chats if not is_privileged(c)]
    privileged = [c for c in chats if is_privileged(c)]
    # 2 functions x group 2 in training, 2 eval episodes: each of at least one 3-turn cycle
    assert len(actor) >= (2 * 2 + 2) * 3 and privileged
    found = [hit for c in actor for hit in leaked(c, fragments)]
    assert not found, found[:3]
    assert any(leaked(c, fragments) for c in privileged)  # the detector sees the gold where it is

