"""The stateful domain: the query grammar, one live object per episode, isolation from hostile classes,
the builder's rows re-verified, and code match step by step."""

from __future__ import annotations

import re

import pytest
from conftest import ROOT

from aac.data.stateful import SOURCES, StatefulConfig, anonymize_class, build, verify
from aac.env.domains import get_domain
from aac.env.domains.stateful import interface, parse_call, sequence_calls
from aac.env.instance import Instance
from aac.env.protocol import Episode, ProtocolConfig, sandbox_caller
from aac.sandbox.pool import SandboxPool
from aac.sandbox.values import InputParseError
from aac.scorers.codematch import CodeMatcher, score_codes

DOMAIN = get_domain("stateful")


def _instance(code: str, header: str, **kw) -> Instance:
    fields = dict(uid="t", source="test", code=code, description="d", header=header,
                  train_examples=[("(('new', ()),)", [None]), ("(('new', ()),)", [None])],
                  test_examples=[("(('new', ()),)", [None])], all_examples=[], domain="stateful")
    return Instance(**{**fields, **kw})


def _from_source(name: str) -> Instance:
    anon = anonymize_class(SOURCES / name)
    return _instance(anon.code, anon.header, description=anon.description)


@pytest.fixture(scope="module")
def pool():
    with SandboxPool(workers=1) as p:
        yield p


# ---------------------------------------------------------------- the query grammar


@pytest.mark.parametrize("reply, query", [
    ("Input: m2(3, 'x')", "m2(3, 'x')"),
    ("I will call m1([1,2],  {'a': 1}) now.\nInput: m0()", "m0()"),
    ("Plan first.\n```\nnew(5)\n```", "new(5)"),
    ("Input: obj.m1( -2 )", "m1(-2)"),
    ("<think>m9(1)</think>I try m3(True).", "m3(True)"),
    ("Input: m2(x)", "m2(x)"),  # an Input: line is returned as written: its parse error is reported
    ("no call here", None),
    ("Input:", None),
])
def test_the_query_of_a_reply(reply, query):
    assert DOMAIN.extract_query(reply) == query


@pytest.mark.parametrize("query, message", [
    ("m2(x)", "not Python literals"), ("print(1)", "not new or a method"), ("m0(a=1)", "no keywords"),
    ("m0(*[1])", "no keywords"), ("m0", "not a call"), ("m0(1e999)", "finite"), ("m0(" + "[" * 60 + "]" * 60 + ")", "nests deeper"),
    ("m0('" + "x" * 20000 + "')", "more than the limit"), ("__import__('os').system('x')", "not a call"),
])
def test_a_bad_query_is_one_line_error(query, message):
    with pytest.raises(InputParseError, match=message) as e:
        DOMAIN.check_query(query, spread_list=True, max_chars=10000, max_depth=50)
    assert "\n" not in str(e.value)


def test_header_and_sequence_grammar():
    assert interface("class Obj: new(arg0); m0(arg0, arg1); m1()") == {"new": 1, "m0": 2, "m1": 0}
    assert parse_call("m1((1, 2), 'a', None)") == ("m1", ((1, 2), "a", None))
    for bad in ("def test_func(arg0):", "class Obj: m0()", "class Obj: new(x)"):
        with pytest.raises(ValueError):
            interface(bad)
    with pytest.raises(ValueError, match="not a .name, args. pair"):
        sequence_calls("(('new', 3),)")


# ---------------------------------------------------------------- one live object per episode


def _play(ep: Episode, calls: list[str]) -> list[str]:
    """Scripted replies: a plan, the call, a NO reflection, per call; the results the episode recorded."""
    out = []
    for q in calls:
        ep.step("I will try it.")
        rec = ep.step(f"Input: {q}")
        out.append(rec.call.error or rec.call.output_repr)
        ep.step("Decision: NO\nSummary: a counter")
    return out


def test_two_episodes_on_one_counter_class_in_one_worker_see_independent_state(pool):
    inst = _from_source("designs/counter.py")
    inc = re.search(r"(m\d+)\(\) adds 1", inst.description).group(1)
    caller = sandbox_caller(pool)
    spawned = pool.stats["spawned"]
    cfg = ProtocolConfig(max_steps=60)
    a, b = Episode(inst, cfg, caller), Episode(inst, cfg, caller)
    assert _play(a, [f"{inc}()", "new(10)", f"{inc}()", f"{inc}()"]) == [
        "RuntimeError: no object yet: call new(...) first", "None", "11", "12"]
    assert _play(b, ["new(0)", f"{inc}()"]) == ["None", "1"]  # b sees none of a's calls
    assert _play(a, [f"{inc}()"]) == ["13"]  # and a none of b's
    assert _play(b, ["new(5)", f"{inc}()"]) == ["None", "6"]  # new() starts over
    stats = pool.stats
    # one pool (workers=1): each episode's object lives in a sandbox child of its own
    assert stats["live"] <= 2 and stats["spawned"] - spawned <= 2


HOSTILE = '''\
import builtins

SEEN = []


class Obj:
    calls = 0

    def __init__(self):
        self.mine = 0

    def m0(self):
        Obj.calls += 1
        SEEN.append(1)
        self.mine += 1
        builtins.len = lambda x: 99
        builtins.HOSTILE = True
        globals()["SEEN"] = SEEN * 2
        return [Obj.calls, self.mine]

    def m1(self):
        return [Obj.calls, len(SEEN), self.mine, hasattr(builtins, "HOSTILE"), len([1])]
'''


def test_a_hostile_class_cannot_change_what_the_next_episode_sees(pool):
    inst = _instance(HOSTILE, "class Obj: new(); m0(); m1()")
    caller = sandbox_caller(pool)
    first = DOMAIN.open(inst, caller)
    first.call("new()", 2.0)
    # within the episode the replay makes the object's state, and only that, carry over
    assert [first.call("m0()", 2.0).output for _ in range(3)][-1] == [3, 3]
    first.close()
    second = DOMAIN.open(inst, caller)
    second.call("new()", 2.0)
    assert second.call("m1()", 2.0).output == [0, 0, 0, False, 1]  # class attribute, globals, builtins pristine
    assert second.call("m0()", 2.0).output == [1, 1]


PATCHER = """\
import json


class Obj:
    def __init__(self):
        pass

    def m0(self):
        out = json.dumps([1])
        json.dumps = lambda *a, **k: "patched"
        return out
"""


def test_a_class_that_patches_an_imported_module_changes_only_its_own_episode(pool):
    inst = _instance(PATCHER, "class Obj: new(); m0()")
    first = DOMAIN.open(inst, sandbox_caller(pool))
    first.call("new()", 2.0)
    assert [first.call("m0()", 2.0).output for _ in range(2)] == ["[1]", "patched"]  # its own state
    first.close()
    second = DOMAIN.open(inst, sandbox_caller(pool))
    second.call("new()", 2.0)
    assert second.call("m0()", 2.0).output == "[1]"  # a child of its own: json is pristine


def test_a_timed_out_call_leaves_the_object_as_it_was(pool):
    code = ("class Obj:\n    def __init__(self):\n        self.n = 0\n    def m0(self, arg0):\n"
            "        while arg0:\n            pass\n        self.n += 1\n        return self.n\n")
    box = DOMAIN.open(_instance(code, "class Obj: new(); m0(arg0)"), sandbox_caller(pool))
    box.call("new()", 2.0)
    assert box.call("m0(0)", 2.0).output == 1
    assert box.call("m0(1)", 0.3).error.startswith("TimeoutError")
    assert box.call("m0(0)", 2.0).output == 2  # the endless call was not replayed


def test_unknown_method_and_failed_new():
    code = "class Obj:\n    def __init__(self, arg0):\n        if arg0 < 0:\n            raise ValueError('neg')\n" \
           "    def m0(self):\n        return 1\n"
    box = DOMAIN.open(_instance(code, "class Obj: new(arg0); m0()"), sandbox_caller(None))
    assert box.call("m5()", 1.0).error == "AttributeError: 'Obj' object has no attribute 'm5'"
    assert box.call("new(-1)", 2.0).error == "ValueError: neg"
    assert box.call("m0()", 2.0).error == "RuntimeError: no object yet: call new(...) first"


# ---------------------------------------------------------------- the builder and code match


@pytest.fixture(scope="module")
def built():
    files = [SOURCES / "designs/stack.py", SOURCES / "stdlib/lru_ordereddict.py", SOURCES / "stdlib/counter_bag.py"]
    return build(files, StatefulConfig(rounds=2, budget=12))


def test_built_rows_reverify_in_a_fresh_sandbox_and_through_the_episode_box(built, pool):
    instances, summary = built
    assert summary.rows_kept == 3 and summary.sequences_kept >= 3 * 6
    assert summary.sequences_tried == summary.sequences_kept + sum(summary.sequences_dropped.values())
    assert min(summary.coverages) >= 0.8
    result = verify(instances)
    assert result["rows_not_reproduced"] == [] and result["sequences"] == sum(
        len(i.train_examples) + len(i.test_examples) for i in instances)
    for inst in instances:
        DOMAIN.check_instance(inst)
        assert len(inst.train_examples) == 2 and 4 <= len(inst.test_examples) <= 6
        assert "Obj" in inst.code and "class Stack" not in inst.code and "def push" not in inst.code
        # the episode's box, one call at a time, gives the stored steps of a held-out sequence
        literal, results = inst.test_examples[0]
        box = DOMAIN.open(inst, sandbox_caller(pool))
        for (name, args), expected in zip(sequence_calls(literal), results):
            got = box.call(f"{name}({', '.join(map(repr, args))})", 2.0)
            if isinstance(expected, dict) and "raised" in expected:
                assert got.error == expected["raised"]
            else:
                assert got.ok and got.normalized == expected


def test_code_match_scores_the_gold_class_1_and_a_wrong_class_less(built, pool):
    inst = next(i for i in built[0] if i.uid == "stateful/stack")
    cases = DOMAIN.match_cases(inst)
    assert len(cases) == sum(len(r) for _, r in inst.test_examples) - sum(
        name == "new" for lit, _ in inst.test_examples for name, _ in sequence_calls(lit))
    wrong = inst.code.replace("return self.items.pop()", "return self.items.pop(0)")
    assert wrong != inst.code
    gold, bad = score_codes([DOMAIN.match_program(inst.code), DOMAIN.match_program(wrong)], [cases, cases], pool,
                            timeout_s=2.0)
    assert gold.score == 1.0 and gold.errors == 0
    assert bad.score < 1.0
    # the whole path: the coder's prompt names the interface, its fenced class is matched
    from aac.scorers.codematch import CoderTask

    seen = []

    def coder(chats):
        seen.extend(chats)
        return [f"```python\n{inst.code}```"]

    (m,) = CodeMatcher(coder, pool, timeout_s=2.0).score([CoderTask(inst.header, inst.description, [], cases,
                                                                   domain="stateful")])
    assert m.score == 1.0 and inst.header in seen[0][-1]["content"] and "class named Obj" in seen[0][-1]["content"]


TALLY = """\"\"\"A tally: new(start); {bump}(x) adds the floor of x plus one and returns the total.\"\"\"
import heapq
import math


def unused(xs):
    return heapq.heappop(xs) if xs else None


def floor_of(x):
    return math.floor(x)


def step(x):
    return floor_of(x) + 1


class Tally:
    def __init__(self, start):
        self.n = start

    def bump(self, x):
        self.n += step(x)
        return self.n


SEEDS = [[("new", (0,)), ("bump", (1.5,)), ("bump", (2,))]]
"""


def test_a_class_keeps_the_module_code_its_methods_reach(tmp_path, pool):
    path = tmp_path / "tally.py"
    path.write_text(TALLY)
    anon = anonymize_class(path)
    # step only through the class's method, floor_of only through step, math only through floor_of
    for kept in ("import math", "def floor_of", "def step", "class Obj"):
        assert kept in anon.code
    assert "unused" not in anon.code and "heapq" not in anon.code
    box = DOMAIN.open(_instance(anon.code, anon.header), sandbox_caller(pool))
    box.call("new(0)", 2.0)
    assert box.call("m0(1.5)", 2.0).output == 2 and box.call("m0(2)", 2.0).output == 5


def test_prompts_and_config_of_the_domain():
    from aac.config import ConfigError, compose

    inst = _from_source("designs/stack.py")
    inst = _instance(inst.code, inst.header, train_examples=[
        ("(('new', ()), ('m0', ()))", [None, {"raised": "IndexError: x"}]), ("(('new', ()),)", [None])])
    for style in ("paper", "compact"):
        ep = Episode(inst, ProtocolConfig(prompt_style=style, answer_cues=True), caller=sandbox_caller(None))
        text = "\n".join(m["content"] for m in ep.prompt())
        assert "m0() -> raised IndexError: x" in text and "class Obj: new()" in text and "test_func" not in text
    assert "Source of the class Obj" in DOMAIN.privileged(inst).source_label
    from aac.critic.judgment import Judgment
    from aac.critic.prompts import critic_messages

    for mode in ("privileged", "symmetric"):  # the critic is told it grades a class; the worked examples stay a toy function's
        asked = critic_messages(Judgment(kind="hypothesis", instance=inst, hypothesis="a stack", observations=[],
                                         text="a stack"), mode)
        system, question = asked[0]["content"], asked[-1]["content"]
        assert "hidden Python class" in system and "function" not in system
        assert "Class header: class Obj: new()" in question and "description of the class" in question
        assert "function" not in question
    with pytest.raises(ConfigError, match="stateful"):
        compose("env.domain=stateful", "env.constrained_format=true", "rollout=hf")
    with pytest.raises(ConfigError, match="env.domain=stateful needs critic.informativeness=judge"):
        compose("+recipe=smollm2_cpu", "env.domain=stateful")  # its critic reads a function's branch arcs
    assert (ROOT / "aac" / "_data" / "stateful").is_dir()
