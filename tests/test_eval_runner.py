"""The eval runner on rows written in the published PAU schema, with a scripted engine (no model):
records, resume, the shared protocol, and clear errors for a broken dataset."""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import pytest
from doubles import GenerateOnly

from aac.engines.base import GenResult
from aac.env import prompts
from aac.env.instance import load_instances
from aac.env.protocol import Episode, ProtocolConfig, sandbox_caller
from aac.eval import records, runner
from aac.eval.runner import ActorSpec, run_in_context, run_interactive
from aac.rollout.driver import EpisodeSpec

_DIVMOD = '''\
def validate_input_args(arg0, arg1):
    if not isinstance(arg0, int) or not isinstance(arg1, int):
        raise TypeError("arg0 and arg1 must be integers")

def test_func(arg0, arg1):
    validate_input_args(arg0, arg1)
    a, b = arg0, arg1
    return divmod(a, b) if b else (0, a)
'''
_REPEAT = '''\
def validate_input_args(arg0, arg1):
    if not isinstance(arg0, str) or not isinstance(arg1, int):
        raise TypeError("arg0 must be a str and arg1 an int")

def test_func(arg0, arg1):
    validate_input_args(arg0, arg1)
    s, n = arg0, arg1
    return s * max(n, 0)
'''
_UNIQUE = '''\
def validate_input_args(arg0):
    if not isinstance(arg0, list):
        raise TypeError("arg0 must be a list")

def test_func(arg0):
    validate_input_args(arg0)
    xs = arg0
    return tuple(sorted(set(xs)))
'''


def specs(instances):
    return [EpisodeSpec(k, inst) for k, inst in enumerate(instances)]


def _row(task_id, source, code, header, description, train, test):
    return {
        "test_func_validated": code, "description": description,
        "train_examples": json.dumps(train), "test_examples": json.dumps(test),
        "all_examples": json.dumps([[i, o, "None"] for i, o in train]),
        "direct_prompt": f"Describe the function {header}", "interactive_starting_prompt": f"Explore {header}",
        "header": header, "task_id": task_id, "source": source,
    }


# Three rows in the published PAU schema (8 string columns, list columns as JSON text, tuple outputs
# stored as lists or repr strings), plus the optional task_id/source columns our builder writes.
PAU_ROWS = [
    _row("hand/0", "humaneval", _DIVMOD, "def test_func(arg0, arg1):",
         "Returns the quotient and remainder of arg0 divided by arg1 as a pair; (0, arg0) when arg1 is 0.",
         [["(7, 2)", [3, 1]], ["(9, 0)", [0, 9]]],
         [["(10, 3)", [3, 1]], ["(5, 0)", [0, 5]], ["(-7, 2)", "(-4, 1)"], ["(100, 7)", [14, 2]]]),
    _row("hand/1", "mbpp", _REPEAT, "def test_func(arg0, arg1):",
         "Repeats the string arg0 arg1 times; a negative count gives the empty string.",
         [["('ab', 3)", "ababab"], ["('x', 0)", ""]],
         [["('a', 2)", "aa"], ["('', 5)", ""], ["('xy', -1)", ""], ["('q', 1)", "q"]]),
    _row("hand/2", "cruxeval", _UNIQUE, "def test_func(arg0):",
         "Returns the distinct elements of the list arg0 in ascending order, as a tuple.",
         [["([3, 1, 3],)", [1, 3]], ["([],)", []]],
         [["([2, 2],)", [2]], ["([5, -1, 5, 0],)", [-1, 0, 5]], ["([1],)", "(1,)"], ["([9, 8],)", [8, 9]]]),
]


def write_rows(path: Path, rows=PAU_ROWS) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture()
def instances(tmp_path):
    return load_instances(write_rows(tmp_path / "test.jsonl"), split="test")


class ScriptedEngine(GenerateOnly):
    """Answers every turn with one reply that parses in every phase; records the chats it saw."""

    def __init__(self, reply: str):
        super().__init__()
        self.reply = reply
        self.chats: list[list[dict]] = []

    def generate(self, requests):
        self.chats.extend(r.messages for r in requests)
        return [GenResult(self.reply, [], [1, 2, 3], None, "stop", r.adapter, None) for r in requests]


NO = "Input: (4, 2)\nDecision: NO\nSummary: divides the numbers"
YES = "Input: (4, 2)\nDecision: YES\nSummary: divides the numbers"


def test_reads_the_pau_schema_unchanged(instances):
    assert [i.uid for i in instances] == ["hand/0", "hand/1", "hand/2"]
    assert instances[0].header == "def test_func(arg0, arg1):" and len(instances[0].test_examples) == 4


@pytest.mark.parametrize("drop, rename", [("description", None), ("test_examples", "tests")])
def test_missing_or_renamed_column_is_a_clear_error(tmp_path, run_module, drop, rename):
    rows = [{(rename if k == drop and rename else k): v for k, v in r.items() if rename or k != drop}
            for r in PAU_ROWS]
    data = write_rows(tmp_path / "bad.jsonl", rows)
    res = run_module("aac.eval", f"data={data}", "split=all", f"out_dir={tmp_path / 'run'}", "engine=hf", timeout=120)
    assert res.returncode != 0
    last = res.stderr.strip().splitlines()[-1]
    assert last.startswith("aac: bad data:") and f"missing column '{drop}'" in last, res.stderr


def test_interactive_records_and_shared_protocol(instances):
    engine = ScriptedEngine(NO)
    done: list[dict] = []
    cfg = ProtocolConfig(history_window=10, max_steps=6, max_calls=2, call_timeout_s=5.0)
    with_pool = sandbox_caller(None)
    run_interactive(specs(instances), ActorSpec(engine, None, 16), cfg, with_pool, batch_size=2, on_done=done.extend)
    assert sorted(r["uid"] for r in done) == ["hand/0", "hand/1", "hand/2"]
    rec = next(r for r in done if r["uid"] == "hand/0")
    assert rec["turns"] == 6 and rec["num_queries"] == 2 and not rec["concluded"]
    assert rec["description"] == "divides the numbers" and rec["format_errors"] == 0
    assert rec["observations"][2][:2] == ["(4, 2)", "(2, 0)"]  # 2 context examples, then the calls
    assert [s["phase"] for s in rec["steps"]][:3] == ["reasoning", "input", "reflect"]
    # the other two functions reject (4, 2): the error is recorded, not raised
    assert next(r for r in done if r["uid"] == "hand/2")["observations"][2][2].startswith("TypeError")

    # the prompts the engine saw are exactly the training protocol's prompts for the same replies
    replay = Episode(instances[0], cfg, with_pool)
    expected = []
    while not replay.done:
        expected.append(replay.prompt())
        replay.step(NO)
    assert expected[0] in engine.chats and all(chat in engine.chats for chat in expected)


def test_interactive_stops_on_yes_and_in_context_uses_the_protocol_prompt(instances):
    done: list[dict] = []
    run_interactive(specs(instances[:1]), ActorSpec(ScriptedEngine(YES), None, 16), ProtocolConfig(max_calls=25),
                    sandbox_caller(None), batch_size=4, on_done=done.extend)
    assert done[0]["concluded"] and done[0]["num_queries"] == 1 and done[0]["turns"] == 3

    engine = ScriptedEngine("Description: returns the pair (q, r)")
    ctx: list[dict] = []
    run_in_context(specs(instances), ActorSpec(engine, None, 16), batch_size=2, on_done=ctx.extend)
    assert engine.chats[0] == prompts.in_context_prompt(instances[0])
    assert ctx[0]["description"] == "returns the pair (q, r)" and ctx[0]["num_queries"] == 0
    assert [o[0] for o in ctx[0]["observations"]] == ["(7, 2)", "(9, 0)"]


def test_no_second_copy_of_the_protocol():
    """The harness imports the env's protocol; none of its prompt text or parsing lives in aac/eval."""
    from aac.rollout import driver

    assert runner.Episode is Episode is driver.Episode
    assert runner.in_context_prompt is prompts.in_context_prompt
    assert runner.parse_description is prompts.parse_description
    eval_src = "".join(p.read_text() for p in Path(inspect.getfile(runner)).parent.glob("*.py"))
    for text in (prompts.SYSTEM_PROMPT[:40], "Decision: YES or NO", "Summary:", "Input: (", "Description: <"):
        assert text not in eval_src, text


def test_episode_records_survive_json(instances, tmp_path):
    done: list[dict] = []
    run_interactive(specs(instances[:1]), ActorSpec(ScriptedEngine(NO), None, 16), ProtocolConfig(max_calls=1),
                    sandbox_caller(None), batch_size=1, on_done=done.extend)
    records.append_jsonl(tmp_path / "e.jsonl", done)
    assert records.read_jsonl(tmp_path / "e.jsonl") == done
