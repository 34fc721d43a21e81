"""The three-phase protocol: reply parsing, prompts, and episodes driven by scripted replies."""

from __future__ import annotations

import time

import pytest

from aac.config import EnvConfig, EvalConfig
from aac.env.instance import Instance
from aac.env.prompts import extract_input, parse_description, parse_reflection, strip_think
from aac.env.protocol import Episode, Phase, ProtocolConfig, in_context_prompt, phase_of_turn
from aac.sandbox.result import CallKind, CallResult
from aac.sandbox.values import normalize, parse_input, safe_repr

CODE = '''def validate_input_args(arg0):
    if not isinstance(arg0, list):
        raise TypeError("arg0 must be a list")


def test_func(arg0):
    validate_input_args(arg0)
    xs = arg0
    return sorted(xs, reverse=True)[:2]
'''

INSTANCE = Instance(
    uid="u/1", source="unit", code=CODE, description="The two largest items, largest first.",
    header="def test_func(arg0):", train_examples=[("([3, 1, 2],)", [3, 2]), ("([5],)", [5])],
    test_examples=[("([1, 2, 3],)", [3, 2])], all_examples=[("([3, 1, 2],)", [3, 2], None)])


class LocalCaller:
    """Test double for the sandbox: runs the trusted test function in-process and counts calls."""

    def __init__(self):
        self.calls: list[str] = []

    def __call__(self, source: str, input_str: str, timeout_s: float) -> CallResult:
        self.calls.append(input_str)
        namespace: dict = {}
        exec(source, namespace)
        start = time.perf_counter()
        try:
            out = namespace["test_func"](*parse_input(input_str))
        except Exception as e:
            return CallResult(None, f"{type(e).__name__}: {e}", time.perf_counter() - start, "", None, CallKind.RAISED)
        return CallResult(out, None, time.perf_counter() - start, safe_repr(out, 2000), normalize(out))


def episode(**cfg) -> tuple[Episode, LocalCaller]:
    caller = LocalCaller()
    return Episode(INSTANCE, ProtocolConfig(**cfg), caller), caller


def user(messages: list[dict]) -> str:
    assert [m["role"] for m in messages] == ["system", "user"]
    return messages[1]["content"]


# ---------------------------------------------------------------- parsing


@pytest.mark.parametrize("reply, expected", [
    ("<think>hmm</think>Input: (1,)", "Input: (1,)"),
    ("<think>a</think>x<THINK>b</THINK>y", "xy"),
    ("plan first <think>never closed because the reply was cut", "plan first"),
    ("<think>never closed", ""),
    ("the template opened it</think>\nDecision: NO", "Decision: NO"),
])
def test_strip_think(reply, expected):
    assert strip_think(reply) == expected


@pytest.mark.parametrize("reply, expected", [
    ("Input: ([4, 9, 1],)", "([4, 9, 1],)"),
    ("I will test negatives.\n**Input:** `([-1, -5],)`.", "([-1, -5],)"),
    ("Input: (\n  [1, 2],\n)", "(\n  [1, 2],\n)"),
    ("```python\n([2, 2],)\n```", "([2, 2],)"),
    ("```\ntest_func([7, 8])\n```", "([7, 8],)"),  # a call keeps one list argument (no spreading)
    ("Let me call test_func([0]) now.", "([0],)"),
    ("Try (a small list) then ([1, 2, 3],) please", "([1, 2, 3],)"),
    ("([')'],)", "([')'],)"),  # brackets inside strings do not end the group
    ("<think>Input: (1,)</think>", None),
    ("no literal here", None),
    ("Input: a list of ints", "a list of ints"),  # explicit but unparsable: reported, not guessed
])
def test_extract_input(reply, expected):
    assert extract_input(reply) == expected


@pytest.mark.parametrize("reply, decision, summary", [
    ("Decision: YES\nSummary: Returns the two largest items.", True, "Returns the two largest items."),
    ("**Decision:** no\n**Summary:** Sorts the list\ndescending, keeps two.", False,
     "Sorts the list descending, keeps two."),
    ("NO\nSummary: not sure yet.\nNo exceptions seen so far.", False, "not sure yet. No exceptions seen so far."),
    ("Summary: top two.\nDecision: YES", True, "top two."),
    ("YES, confident.\nSummary: top two.", True, "top two."),
    ("<think>Decision: NO</think>Decision: YES\nSummary: top two.", True, "top two."),
])
def test_parse_reflection(reply, decision, summary):
    r = parse_reflection(reply)
    assert r.ok and (r.decision, r.summary) == (decision, summary)


@pytest.mark.parametrize("reply, error", [
    ("Decision: YES", "no Summary: line"),
    ("Summary: top two", "no decision line"),
    ("Decision: YES\nSummary:   ", "empty summary"),
    ("I think it sorts.", "no decision line and no Summary: line"),
    ("Summary: top two.\nYES, I am done", "no decision line"),  # after a summary, a decision is explicit
])
def test_parse_reflection_failures(reply, error):
    r = parse_reflection(reply)
    assert not r.ok and error in r.error


def test_parse_description():
    assert parse_description("<think>x</think>Description: Returns the\n two largest.") == "Returns the two largest."
    assert parse_description("Summary: top two") == "top two"
    assert parse_description("  It sorts.  ") == "It sorts."


def test_in_context_prompt():
    text = user(in_context_prompt(INSTANCE))
    assert "def test_func(arg0):" in text and "([3, 1, 2],) -> [3, 2]" in text and "([5],) -> [5]" in text
    assert "Description:" in text


# ---------------------------------------------------------------- episodes


def test_scripted_episode_records_every_step():
    ep, caller = episode()
    assert ep.phase is Phase.REASONING and ep.hypothesis == "not yet formed"
    script = [
        "<think>long thoughts</think>Try an unsorted list; expect the top two, largest first.",  # reasoning
        "Input: ([4, 9, 1],)",  # valid input
        "Decision: NO\nSummary: Returns the two largest items, largest first.",
        "Test a wrong type.",
        "Input: ('abc',)",  # parses, but the call raises
        "I am not sure.",  # reflect without the format
        "Now an invalid input.",
        "Input: [1, 2",  # unparsable: no call
        "Decision: YES\nSummary: The two largest items of a list, in descending order.",
    ]
    records = [ep.step(reply) for reply in script]
    assert [r.phase for r in records] == [Phase.REASONING, Phase.INPUT, Phase.REFLECT] * 3
    assert [r.phase for r in records] == [phase_of_turn(r.index) for r in records]  # parse failures or not
    assert [r.index for r in records] == list(range(9))
    assert [r.parse_ok for r in records] == [True, True, True, True, True, False, True, False, True]
    assert records[0].text == "Try an unsorted list; expect the top two, largest first."
    assert records[1].parsed == "([4, 9, 1],)" and records[1].call.output == [9, 4] and records[1].call.ok
    assert records[2].decision is False and records[2].hypothesis.startswith("Returns the two largest")
    assert records[4].call.error.startswith("TypeError") and not records[4].call.ok
    assert records[5].decision is None and records[5].hypothesis == records[2].hypothesis  # kept
    assert records[7].call is None and "unparsable input" in records[7].error
    assert caller.calls == ["([4, 9, 1],)", "('abc',)"]
    last = records[-1]
    assert last.done and last.decision is True and not last.timed_out and last.end_reason == "concluded"
    assert not any(r.done for r in records[:-1])
    assert ep.done and ep.concluded and ep.num_queries == 2
    assert [o.input for o in ep.observations] == ["([3, 1, 2],)", "([5],)", "([4, 9, 1],)", "('abc',)"]
    assert ep.summary() == {"uid": "u/1", "description": "The two largest items of a list, in descending order.",
                            "num_queries": 2, "concluded": True, "timed_out": False, "steps": 9,
                            "end_reason": "concluded", "parse_failures": 2}
    with pytest.raises(RuntimeError, match="episode is over"):
        ep.step("more")
    with pytest.raises(RuntimeError, match="episode is over"):
        ep.prompt()


def test_reflect_prompt_shows_the_latest_result():
    ep, _ = episode()
    ep.step("Plan: a long list.")
    ep.step("Input: ([10, 30, 20, 40],)")
    text = user(ep.prompt())
    assert "Latest call: ([10, 30, 20, 40],) -> [40, 30]" in text
    assert "Decision: YES or NO" in text and "Summary:" in text
    assert ep.steps[1].call.output_repr == "[40, 30]"
    ep.step("Decision: NO\nSummary: top two.")
    ep.step("wrong type")
    ep.step("Input: (5,)")
    assert "Latest call: (5,) -> raised TypeError: arg0 must be a list" in user(ep.prompt())
    ep.step("Decision: NO\nSummary: top two.")
    ep.step("plan")
    ep.step("no input at all")
    assert "Latest call: none; your input could not be read (no input found in the reply)" in user(ep.prompt())


def test_prompts_carry_the_plan_and_the_hypothesis():
    ep, _ = episode()
    first = user(ep.prompt())
    assert "Header: def test_func(arg0):" in first and "Current hypothesis: not yet formed" in first
    assert "([3, 1, 2],) -> [3, 2]" in first and "at most 80 words" in first
    ep.step("Check duplicates like [2, 2].")
    assert "Your plan: Check duplicates like [2, 2]." in user(ep.prompt()) and "Input: (" in user(ep.prompt())
    ep.step("Input: ([2, 2],)")
    ep.step("Decision: NO\nSummary: keeps the two largest values.")
    assert "Current hypothesis: keeps the two largest values." in user(ep.prompt())


def test_history_window_is_respected():
    ep, _ = episode(history_window=3)
    for k in range(4):
        ep.step("plan")
        ep.step(f"Input: ([{k}, {k + 10}],)")
        if k < 3:
            ep.step("Decision: NO\nSummary: s")
    # reflect: the latest call on its own line plus the 2 before it
    reflect = user(ep.prompt())
    assert "Earlier calls (the last 2 of 5" in reflect and "Latest call: ([3, 13],)" in reflect
    assert "([1, 11],)" in reflect and "([2, 12],)" in reflect and "([0, 10],)" not in reflect
    ep.step("Decision: NO\nSummary: s")
    reasoning = user(ep.prompt())
    shown = [line for line in reasoning.splitlines() if line.startswith("([")]
    assert shown == ["([1, 11],) -> [11, 1]", "([2, 12],) -> [12, 2]", "([3, 13],) -> [13, 3]"]
    assert "(the last 3 of 6;" in reasoning
    assert len(ep.observations) == 6


def test_a_window_larger_than_the_history_shows_all_of_it():
    # 2 context examples and fewer calls than the window: every earlier observation is shown (a
    # negative slice start once showed only the last 5 - n of n: 1 of 3 at the second reflect)
    ep, _ = episode(history_window=5)
    for k in range(2):
        ep.step("plan")
        ep.step(f"Input: ([{k}, {k + 10}],)")
        reflect = user(ep.prompt())
        assert f"Earlier calls (all {2 + k};" in reflect and "([3, 1, 2],)" in reflect
        ep.step("Decision: NO\nSummary: s")
        reasoning = user(ep.prompt())
        assert f"(all {3 + k};" in reasoning and "([3, 1, 2],)" in reasoning and f"([{k}, {k + 10}],)" in reasoning


def test_window_character_budget_drops_the_oldest_calls():
    text = user(episode(max_window_chars=20)[0].prompt())
    assert "(the last 1 of 2;" in text and "([5],) -> [5]" in text and "([3, 1, 2],)" not in text
    text = user(episode(max_window_chars=1)[0].prompt())
    assert "([5],) -> [5]" in text  # the latest is always shown


def test_overlong_replies_are_clipped_or_rejected():
    ep, caller = episode(max_observation_chars=50)
    ep.step("word " * 2000)
    assert len(user(ep.prompt())) < 1500  # the plan is clipped in the next prompt
    rec = ep.step("Input: ([" + ", ".join(["1"] * 6000) + "],)")  # longer than max_input_chars
    assert not rec.parse_ok and rec.call is None and caller.calls == []
    ep.step("Decision: NO\nSummary: " + "very " * 500 + "long")
    assert len(ep.hypothesis) > 2000  # stored whole (it is judged), shown clipped
    assert len(user(ep.prompt())) < 1200


def test_step_limit_times_out_on_the_step_that_reaches_it():
    ep, _ = episode(max_steps=5)
    records = [ep.step(r) for r in ["plan", "Input: ([1],)", "Decision: NO\nSummary: s", "plan"]]
    assert not any(r.done for r in records)
    last = ep.step("Input: ([2],)")
    assert last.index == 4 and last.done and last.timed_out and last.end_reason == "step_limit"
    assert ep.timed_out and not ep.concluded and ep.summary()["steps"] == 5


def test_yes_on_the_last_step_concludes():
    ep, _ = episode(max_steps=3)
    ep.step("plan")
    ep.step("Input: ([1],)")
    last = ep.step("Decision: YES\nSummary: top two")
    assert last.done and not last.timed_out and ep.concluded


def test_call_limit_ends_after_that_cycles_reflect():
    ep, caller = episode(max_calls=2)
    for _ in range(2):
        assert not ep.step("plan").done
        assert not ep.step("Input: ([1, 2],)").done
        last = ep.step("Decision: NO\nSummary: s")
    assert last.done and last.end_reason == "call_limit" and not last.timed_out
    assert not ep.concluded and ep.num_queries == 2 and len(caller.calls) == 2
    # unparsable inputs spend the budget too, so the episode always ends; a YES there concludes
    ep, caller = episode(max_calls=1)
    ep.step("plan")
    ep.step("garbage")
    last = ep.step("Decision: YES\nSummary: top two")
    assert last.done and ep.concluded and ep.num_queries == 0 and caller.calls == []


def test_a_failing_sandbox_leaves_the_step_to_retry():
    ep, caller = episode(max_calls=1)
    ep.step("plan")
    ok = ep.caller

    def broken(source, input_str, timeout_s):
        raise RuntimeError("sandbox down")

    ep.caller = broken
    with pytest.raises(RuntimeError, match="sandbox down"):
        ep.step("Input: ([1],)")
    assert ep.phase is Phase.INPUT and len(ep.steps) == 1
    ep.caller = ok
    assert ep.step("Input: ([1],)").call.ok
    assert ep.step("Decision: NO\nSummary: s").end_reason == "call_limit"  # the failed try spent nothing


def test_config_from_env_and_eval():
    cfg = ProtocolConfig.from_env(EnvConfig())
    assert (cfg.history_window, cfg.max_steps, cfg.max_calls, cfg.call_timeout_s) == (5, 40, None, 10.0)
    ev = ProtocolConfig.from_eval(EvalConfig(), EnvConfig(spread_list_args=False))
    assert (ev.history_window, ev.max_calls, ev.max_steps, ev.call_timeout_s, ev.spread_list) == (10, 25, 75, 30.0,
                                                                                                   False)


def test_episode_with_the_real_sandbox():
    from aac.env.protocol import sandbox_caller
    from aac.sandbox.pool import SandboxPool

    with SandboxPool(workers=1) as pool:
        ep = Episode(INSTANCE, ProtocolConfig(call_timeout_s=5.0), sandbox_caller(pool))
        records = [ep.step(r) for r in ["plan", "Input: ([4, 9, 1],)", "Decision: NO\nSummary: top two",
                                        "plan", "Input: test_func('abc')"]]
        assert records[1].call.ok and records[1].call.normalized == [9, 4]
        assert records[4].parsed == "('abc',)" and records[4].call.error.startswith("TypeError")
        assert "Latest call: ('abc',) -> raised TypeError: arg0 must be a list" in user(ep.prompt())
        assert ep.num_queries == 2
