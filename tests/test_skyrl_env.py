"""The skyrl_gym adapter, created through `skyrl_gym.make` as a SkyRL generator would."""

from __future__ import annotations

import pytest
import skyrl_gym

import aac.env.skyrl_env  # noqa: F401  (registers "aac-pau")
from aac.env.instance import Instance
from aac.env.protocol import Phase
from aac.env.rows import to_row
from aac.env.skyrl_env import ENV_ID
from aac.sandbox.result import CallKind, CallResult

INSTANCE = Instance(
    uid="s/1", source="unit", code="def test_func(arg0):\n    return abs(arg0)\n", description="Absolute value.",
    header="def test_func(arg0):", train_examples=[("(-2,)", 2), ("(3,)", 3)], test_examples=[("(-1,)", 1)],
    all_examples=[("(-2,)", 2, None), ("(3,)", 3, None)])


def fixed_caller(source: str, input_str: str, timeout_s: float) -> CallResult:
    """Test double for the sandbox: every call returns 7, except input (0,) which raises."""
    if input_str == "(0,)":
        return CallResult(None, "ValueError: zero", 0.0, "", None, CallKind.RAISED)
    return CallResult(7, None, 0.0, "7", 7)


def make(**env_config):
    return skyrl_gym.make(ENV_ID, env_config=env_config, extras={"instance": INSTANCE}, caller=fixed_caller)


def test_episode_through_skyrl_gym_make():
    env = make()
    assert isinstance(env, skyrl_gym.Env) and env.max_turns == 40
    messages, info = env.init([{"role": "user", "content": "ignored"}])
    assert info == {"uid": "s/1", "phase": "reasoning"} and "def test_func(arg0):" in messages[-1]["content"]
    replies = ["plan", "Input: (5,)", "Decision: NO\nSummary: s", "plan", "Input: (0,)", "garbled", "plan",
               "Input: nothing", "Decision: YES\nSummary: absolute value"]
    outs = [env.step(r) for r in replies]
    assert [o["reward"] for o in outs] == [0.0] * 9  # the env knows no reward (aac-pau-critic pays them)
    assert [o["metadata"]["phase"] for o in outs[:3]] == ["reasoning", "input", "reflect"]
    assert outs[1]["metadata"]["step"].call.output == 7
    assert "Latest call: (5,) -> 7" in outs[1]["observations"][0]["content"]  # the next prompt: reflect
    assert all(len(o["observations"]) == 1 and o["observations"][0]["role"] == "user" for o in outs[:-1])
    final = outs[-1]
    assert final["done"] and final["observations"] == [] and final["metadata"]["summary"]["concluded"]
    assert final["metadata"]["step"].phase is Phase.REFLECT
    assert env.get_metrics() == {"num_queries": 2.0, "concluded": 1.0, "timed_out": 0.0, "steps": 9.0,
                                 "parse_failures": 2.0}


def test_step_limit_and_row_extras():
    row = to_row(INSTANCE)  # a SkyRL dataset row carries the PAU columns at the top level of extras
    env = skyrl_gym.make(ENV_ID, env_config={"max_steps": 2}, extras=row, caller=fixed_caller)
    env.init()
    assert not env.step("plan")["done"]
    out = env.step("Input: (1,)")
    assert out["done"] and out["metadata"]["step"].timed_out and out["metadata"]["summary"]["end_reason"] == "step_limit"


def test_bad_config_and_bad_row_are_clear():
    with pytest.raises(ValueError, match="aac-pau: unknown env_config keys: max_turns, p_parse"):
        make(max_turns=3, p_parse=0.5)  # reward settings belong to aac-pau-critic's rewards section
    with pytest.raises(ValueError, match="row 0: missing value in column 'header'"):
        skyrl_gym.make(ENV_ID, extras={"instance": {**to_row(INSTANCE), "header": None}}, caller=fixed_caller)


def test_default_caller_runs_the_real_sandbox():
    env = skyrl_gym.make(ENV_ID, extras={"instance": INSTANCE})  # no caller: aac.sandbox.pool.run_function
    env.init()
    env.step("plan")
    out = env.step("Input: (-9,)")
    assert out["metadata"]["step"].call.normalized == 9 and "Latest call: (-9,) -> 9" in out["observations"][0]["content"]


COUNTER = ("class Obj:\n    def __init__(self, arg0):\n        self.n = arg0\n"
           "    def m0(self):\n        self.n += 1\n        return self.n\n")


def test_a_stateful_episode_through_skyrl_gym_make_on_the_real_sandbox():
    counter = Instance(uid="c/1", source="unit", code=COUNTER, description="A counter from arg0; m0() adds 1.",
                       header="class Obj: new(arg0); m0()", train_examples=[("(('new', (1,)), ('m0', ()))", [None, 2])],
                       test_examples=[("(('new', (0,)), ('m0', ()))", [None, 1])],
                       all_examples=[("(('new', (1,)), ('m0', ()))", [None, 2], None)], domain="stateful")
    row = to_row(counter)  # as a SkyRL dataset row: the domain column says what it is
    with pytest.raises(ValueError, match="row 0: the row is of domain 'stateful', not 'pau'"):
        skyrl_gym.make(ENV_ID, extras=row)
    env = skyrl_gym.make(ENV_ID, env_config={"domain": "stateful", "max_steps": 12}, extras=row)
    messages, _ = env.init()
    assert "class Obj: new(arg0); m0()" in messages[-1]["content"] and "m0() -> 2" in messages[-1]["content"]
    outputs = []
    for query in ("new(10)", "m0()", "m0()"):
        env.step("plan")
        outputs.append(env.step(f"Input: {query}")["metadata"]["step"].call.output)
        env.step("Decision: NO\nSummary: counts up")
    assert outputs == [None, 11, 12]  # the object's state carries over within the episode
    env.step("plan")
    assert env.step("Input: m0()")["metadata"]["step"].call.output == 13
    assert env.step("Decision: YES\nSummary: a counter starting at arg0")["done"]
    fresh = skyrl_gym.make(ENV_ID, env_config={"domain": "stateful"}, extras=row)
    fresh.init()
    fresh.step("plan")
    assert fresh.step("Input: m0()")["metadata"]["step"].call.error == "RuntimeError: no object yet: call new(...) first"
