"""Teachers in `aac.eval`: `eval.teacher` changes what the actor's endpoint receives (the gold only for
answer_aware), a teacher's run is marked in its records, and its traces (and an ordinary endpoint
model's: DISTILL) load in `aac.sft` with the student's prompts, which never hold the gold."""

from __future__ import annotations

import json

import pytest
from test_eval_runner import PAU_ROWS, ScriptedEngine, specs, write_rows
from test_gold_leak import gold_fragments, is_privileged, leaked
from test_instance import make_instance

from aac.cli import rewrite_aliases
from aac.config import compose
from aac.env import prompts
from aac.env.instance import load_instances
from aac.env.protocol import Episode
from aac.env.teacher import NO_DESCRIPTION, answer_aware, plain, teacher_prompts
from aac.eval import records
from aac.eval.harness import evaluate
from aac.eval.runner import ActorSpec, run_in_context
from aac.traces import load_turns

ACTOR = "Input: (4, 2)\nDecision: YES\nSummary: returns the quotient and remainder of arg0 by arg1"
CALLS: list[dict] = []


def _reply(body: dict) -> str:
    CALLS.append(body)
    system = body["messages"][0]["content"]
    if "grader" in system:
        return "Close.\nRating: 4"
    return "```python\ndef test_func(a, b):\n    return a\n```" if "programmer" in system else ACTOR


@pytest.fixture(scope="module")
def endpoint(serve_chat):
    with serve_chat(_reply) as (url, _):
        yield url


def test_answer_aware_adds_the_gold_and_keeps_the_task_last():
    inst = make_instance()
    chat = Episode(inst).prompt()
    taught = answer_aware(inst, chat)
    assert plain(inst, chat) is chat and teacher_prompts("none") is plain
    assert [m["role"] for m in taught] == [m["role"] for m in chat]
    assert taught[0]["content"].startswith(prompts.SYSTEM_PROMPT) and inst.code.strip() in taught[1]["content"]
    assert inst.description in taught[1]["content"] and taught[1]["content"].endswith(chat[1]["content"])
    assert leaked(taught, gold_fragments(inst)) and not leaked(chat, gold_fragments(inst))
    assert NO_DESCRIPTION in answer_aware(make_instance(description=""), chat)[1]["content"]
    with pytest.raises(ValueError, match="eval.teacher='oracle'"):
        teacher_prompts("oracle")


@pytest.fixture(scope="module")
def runs(tmp_path_factory, endpoint):
    """An ordinary run (the endpoint model as the actor: DISTILL's teacher) and an answer-aware one,
    with the actor's requests of each."""
    tmp = tmp_path_factory.mktemp("teacher")
    data = write_rows(tmp / "test.jsonl")
    out = {}
    for teacher in ("none", "answer_aware"):
        CALLS.clear()
        evaluate(compose(*rewrite_aliases([
            "model.name=stub-model", "engine=openai", f"rollout.openai.base_url={endpoint}", f"data={data.parent}",
            "split=test", f"out_dir={tmp / teacher}", "logging.progress=false", "env.sandbox.workers=1",
            f"eval.teacher={teacher}"]), config_name="eval_config"))
        out[teacher] = (tmp / teacher, [c["messages"] for c in CALLS if not is_privileged(c["messages"])])
    return out, load_instances(data, split="test")


def test_the_teacher_setting_changes_the_prompts_the_engine_receives(runs):
    out, instances = runs
    plain_chats, taught_chats = out["none"][1], out["answer_aware"][1]
    assert len(plain_chats) == len(taught_chats) == 3 * len(PAU_ROWS)  # one cycle per episode (YES)
    for chat in plain_chats:
        assert not any(leaked(chat, gold_fragments(i)) for i in instances)
    for chat in taught_chats:  # the gold of its own instance, all of it, and no other's
        own = [i for i in instances if i.code.strip() in chat[1]["content"]]
        assert len(own) == 1 and set(leaked(chat, gold_fragments(own[0]))) == set(gold_fragments(own[0]))


def test_in_context_mode_goes_through_the_teacher_too(tmp_path):
    instances = load_instances(write_rows(tmp_path / "test.jsonl"), split="test")
    chats = {}
    for name, transform in (("none", plain), ("answer_aware", answer_aware)):
        engine = ScriptedEngine("Description: divides")
        run_in_context(specs(instances), ActorSpec(engine, None, 16, prompt_for=transform), batch_size=2,
                       on_done=lambda recs: None)
        chats[name] = engine.chats
    assert all(leaked(c, gold_fragments(i)) for c, i in zip(chats["answer_aware"], instances))
    assert not any(leaked(c, gold_fragments(i)) for c, i in zip(chats["none"], instances))


def test_teacher_traces_are_marked_and_train_the_student_on_its_own_view(runs):
    out, instances = runs
    teacher, distill = out["answer_aware"][0], out["none"][0]
    episodes = records.read_jsonl(teacher / records.EPISODES)
    assert json.loads((teacher / records.RUN).read_text())["teacher"] == "answer_aware"
    assert {e["teacher"] for e in episodes} == {"answer_aware"}
    assert "teacher=answer_aware" in (teacher / records.REPORT_MD).read_text()
    assert json.loads((distill / records.RUN).read_text())["teacher"] == "none"
    assert all("teacher" not in e for e in records.read_jsonl(distill / records.EPISODES))

    # both load as SFT traces (the stub judge rates every episode 4); the student's prompts are rebuilt
    # through the ordinary protocol, so the teacher's privileged text is in none of them
    turns, summary = load_turns([teacher, distill], 4.0, None, instances_for=lambda d, s, *_: instances)
    assert summary.kept == 2 * len(PAU_ROWS) and len(turns) == 2 * 3 * len(PAU_ROWS)
    assert sorted(summary.teachers.values()) == ["answer_aware", "none"]
    fragments = [f for i in instances for f in gold_fragments(i)]
    assert all(not leaked(t.messages, fragments) and t.reply == ACTOR for t in turns)


@pytest.mark.slow
def test_aac_sft_trains_on_teacher_and_endpoint_traces(runs, tmp_path):
    """The chain runs: both runs' traces -> aac.sft (tiny student) -> a falling NLL and a checkpoint
    that names the teachers it learned from."""
    from aac.cli import ALIASES, rewrite_aliases
    from aac.sft import sft

    out, _ = runs
    cfg = compose(*rewrite_aliases(["+recipe=tiny", f"data={out['answer_aware'][0]},{out['none'][0]}", "epochs=2",
                                    "sft.lr=1e-2", "sft.batch_turns=6"], ALIASES["aac.sft"]))
    result = sft(cfg, tmp_path)
    nll = [r["losses/sft_nll"] for r in records.read_jsonl(tmp_path / "metrics.jsonl")]
    assert result["samples"] == 2 * 3 * len(PAU_ROWS) and len(nll) == 6 and nll[-1] < nll[0]
    state = json.loads(next((tmp_path / "checkpoints").glob("step_*/trainer.json")).read_text())
    assert sorted(state["teachers"].values()) == ["answer_aware", "none"]
