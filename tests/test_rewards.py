"""The paper's reward table (`schedule=aac`), checked against values computed by hand from docs/method.md §6.

Defaults: lambda_h = 2, p_parse = 0.5, tau = 100 / 30 / 100, thresholds 0.7 / 0.3, T_max = 40,
timeout penalty -1. Each expected number is written out as the arithmetic it comes from.
"""

from __future__ import annotations

import pytest

from aac.config import RewardConfig
from aac.env.protocol import Phase, StepRecord
from aac.rewards import (
    b_term,
    episode_rewards,
    graded_text,
    judgment_kind,
    length_penalty,
    masked_judgments,
    step_reward,
)
from aac.sandbox.result import CallKind, CallResult

OK = CallResult(output=3, error=None, duration_s=0.01, output_repr="3", normalized=3)
RAISED = CallResult(output=None, error="TypeError: bad argument", duration_s=0.01, output_repr="", normalized=None,
                    kind=CallKind.RAISED)
TIMEOUT = CallResult(output=None, error="TimeoutError: call exceeded 10.0 s", duration_s=10.0, output_repr="",
                     normalized=None, kind=CallKind.TIMEOUT)


def cfg(**kw) -> RewardConfig:
    kw.setdefault("schedule", "aac")  # this file checks the paper's table; the default: test_reward_properties
    return RewardConfig(t_max=kw.pop("t_max", 40), **kw)


def words(n: int) -> str:
    return " ".join(["w"] * n)


def step(phase: Phase, *, n_words: int = 10, parse_ok: bool = True, decision=None, call=None, index: int = 0,
         done: bool = False, timed_out: bool = False) -> StepRecord:
    response = words(n_words)
    return StepRecord(index=index, phase=phase, prompt=[], response=response, text=response, parse_ok=parse_ok,
                      parsed=response if parse_ok else None, decision=decision, call=call, hypothesis="h",
                      done=done, timed_out=timed_out)


def reasoning(**kw) -> StepRecord:
    return step(Phase.REASONING, **kw)


def input_step(**kw) -> StepRecord:
    kw.setdefault("n_words", 2)
    return step(Phase.INPUT, **kw)


def reflect(**kw) -> StepRecord:
    return step(Phase.REFLECT, **kw)


# ------------------------------------------------------------------ r_len


@pytest.mark.parametrize("n, tau, expected", [
    (0, 100, 0.0),
    (100, 100, 0.0),  # at tau: no penalty
    (101, 100, -1 / 200),
    (150, 100, -50 / 200),
    (300, 100, -1.0),  # (300 - 100) / 200 = 1: exactly the cap
    (1000, 100, -1.0),  # 900 / 200 = 4.5, capped at 1 (the release gave -4.5)
    (31, 30, -1 / 60),
    (45, 30, -15 / 60),
    (120, 30, -1.0),  # 90 / 60 = 1.5, capped
])
def test_length_penalty(n, tau, expected):
    assert length_penalty(words(n), tau) == pytest.approx(expected)


def test_length_penalty_counts_whitespace_separated_words():
    assert length_penalty("a  b\n c\t d", 3) == pytest.approx(-(4 - 3) / 6)


# ------------------------------------------------------------------ b_term


@pytest.mark.parametrize("stopped, s, expected", [
    (True, 0.71, 1.0),  # right stop
    (True, 1.0, 1.0),
    (True, 0.7, -1.0),  # s <= 0.7: premature stop
    (True, 0.0, -1.0),
    (False, 0.29, 1.0),  # right to go on
    (False, 0.0, 1.0),
    (False, 0.3, 0.0),  # 0.3 is not < 0.3
    (False, 0.5, 0.0),
    (False, 0.9, 0.0),  # going on with a good hypothesis: neither
])
def test_b_term(stopped, s, expected):
    assert b_term(stopped, s, cfg()) == expected


def test_b_term_thresholds_come_from_config():
    c = cfg(stop_threshold=0.5, continue_threshold=0.1)
    assert b_term(True, 0.6, c) == 1.0
    assert b_term(False, 0.2, c) == 0.0


# ------------------------------------------------------------------ reasoning


@pytest.mark.parametrize("schedule", ["aac", "sym_info"])
def test_reasoning_is_informativeness_plus_length(schedule):
    c = cfg(schedule=schedule)
    assert judgment_kind(reasoning(), c) == "informativeness"
    assert step_reward(reasoning(n_words=50), 6 / 9, c) == pytest.approx(6 / 9)
    assert step_reward(reasoning(n_words=150), 3 / 9, c) == pytest.approx(3 / 9 - 50 / 200)
    assert step_reward(reasoning(n_words=400), 1.0, c) == pytest.approx(1.0 - 1.0)


def test_reasoning_parse_failure():
    # an empty plan: -p_parse instead of a critic judgment, which is not asked for
    c = cfg()
    failed = reasoning(n_words=0, parse_ok=False)
    assert judgment_kind(failed, c) is None
    assert step_reward(failed, None, c) == pytest.approx(-0.5)
    assert step_reward(failed, None, cfg(p_parse=0.25)) == pytest.approx(-0.25)


def test_no_informativeness_gives_reasoning_only_length():
    c = cfg(schedule="no_informativeness")
    assert judgment_kind(reasoning(), c) is None
    assert step_reward(reasoning(n_words=50), None, c) == 0.0
    assert step_reward(reasoning(n_words=150), None, c) == pytest.approx(-50 / 200)
    assert step_reward(reasoning(n_words=0, parse_ok=False), None, c) == pytest.approx(-0.5)
    # the other phases are unchanged
    assert step_reward(input_step(call=OK), None, c) == pytest.approx(2.0 / 80)
    assert step_reward(reflect(decision=False), 0.2, c) == pytest.approx(2.0 * (0.2 + 1))


# ------------------------------------------------------------------ input


def test_input_rewards():
    c = cfg()
    assert judgment_kind(input_step(call=OK), c) is None
    assert step_reward(input_step(call=OK), None, c) == pytest.approx(2.0 / (2 * 40))  # = 0.025
    assert step_reward(input_step(call=OK), None, cfg(t_max=10)) == pytest.approx(2.0 / 20)
    assert step_reward(input_step(call=OK), None, cfg(lambda_h=4.0)) == pytest.approx(4.0 / 80)
    assert step_reward(input_step(call=RAISED), None, c) == pytest.approx(-0.5)  # the call raised
    assert step_reward(input_step(call=TIMEOUT), None, c) == pytest.approx(-0.5)  # the call timed out
    # parse failure: the protocol makes no call
    assert step_reward(input_step(parse_ok=False, call=None), None, c) == pytest.approx(-0.5)
    assert step_reward(input_step(parse_ok=False, call=None), None, cfg(p_parse=1.0)) == pytest.approx(-1.0)


def test_input_length_penalty_tau_30():
    c = cfg()
    assert step_reward(input_step(call=OK, n_words=30), None, c) == pytest.approx(0.025)
    assert step_reward(input_step(call=OK, n_words=45), None, c) == pytest.approx(0.025 - 15 / 60)
    assert step_reward(input_step(parse_ok=False, n_words=120), None, c) == pytest.approx(-0.5 - 1.0)
    assert step_reward(input_step(call=OK, n_words=45), None, cfg(tau_input=15)) == pytest.approx(0.025 - 1.0)


# ------------------------------------------------------------------ reflect


@pytest.mark.parametrize("decision, s, expected", [
    (True, 8 / 9, 2.0 * (8 / 9 + 1)),  # right stop
    (True, 0.7, 2.0 * (0.7 - 1)),  # premature stop (s <= 0.7)
    (True, 0.2, 2.0 * (0.2 - 1)),
    (False, 0.2, 2.0 * (0.2 + 1)),  # right to go on
    (False, 0.3, 2.0 * 0.3),  # b = 0
    (False, 0.5, 2.0 * 0.5),
    (False, 0.9, 2.0 * 0.9),  # went on though it could have stopped: b = 0
])
def test_reflect_hypothesis_and_b_term(decision, s, expected):
    c = cfg()
    r = reflect(decision=decision, done=decision)
    assert judgment_kind(r, c) == "hypothesis"
    assert step_reward(r, s, c) == pytest.approx(expected)
    # rewards.late_stop_penalty charges the last case only: going on past the stop threshold
    late = expected - 2.0 if decision is False and s > 0.7 else expected
    assert step_reward(r, s, cfg(late_stop_penalty=-2.0)) == pytest.approx(late)


def test_reflect_length_tau_100_and_lambda():
    assert step_reward(reflect(decision=False, n_words=250), 0.5, cfg()) == pytest.approx(1.0 - 150 / 200)
    assert step_reward(reflect(decision=False, n_words=150), 0.5, cfg(tau_reflect=50)) == pytest.approx(1.0 - 1.0)
    assert step_reward(reflect(decision=True), 0.8, cfg(lambda_h=1.0)) == pytest.approx(0.8 + 1)


def test_reflect_parse_failure():
    # -p_parse, plus the hypothesis terms on the kept hypothesis, as not stopping
    c = cfg()
    failed = reflect(parse_ok=False, decision=None)
    assert judgment_kind(failed, c) == "hypothesis"
    assert step_reward(failed, 0.2, c) == pytest.approx(-0.5 + 2.0 * (0.2 + 1))
    assert step_reward(failed, 0.9, c) == pytest.approx(-0.5 + 2.0 * 0.9)
    assert step_reward(reflect(parse_ok=False, n_words=300), 0.5, c) == pytest.approx(-0.5 + 1.0 - 1.0)
    # always exactly p_parse below the equivalent valid NO
    for s in (0.0, 0.25, 0.5, 0.95):
        assert step_reward(failed, s, c) == pytest.approx(step_reward(reflect(decision=False), s, c) - 0.5)


# ------------------------------------------------------------------ the T_max step


def test_timeout_step_adds_penalty_to_its_phase_reward():
    c = cfg()
    assert step_reward(reasoning(index=39, done=True, timed_out=True), 0.5, c) == pytest.approx(0.5 - 1.0)
    assert step_reward(input_step(index=39, call=OK, done=True, timed_out=True), None, c) == pytest.approx(0.025 - 1.0)
    assert step_reward(reflect(index=39, decision=False, done=True, timed_out=True), 0.2, c) == pytest.approx(
        2.0 * 1.2 - 1.0)
    assert step_reward(reflect(index=39, parse_ok=False, done=True, timed_out=True), 0.5, c) == pytest.approx(
        -0.5 + 1.0 - 1.0)
    assert step_reward(reasoning(done=True, timed_out=True), 0.5, cfg(timeout_penalty=-2.0)) == pytest.approx(-1.5)
    # a YES on the last allowed step concludes: the protocol does not mark it timed out
    assert step_reward(reflect(index=39, decision=True, done=True), 0.9, c) == pytest.approx(2.0 * 1.9)


# ------------------------------------------------------------------ final (sparse)


def test_final_schedule_rewards_only_the_last_step():
    c = cfg(schedule="final")
    middle = [reasoning(n_words=500), input_step(parse_ok=False, n_words=200), reflect(parse_ok=False),
              reflect(decision=False)]
    for s in middle:
        assert judgment_kind(s, c) is None
        assert step_reward(s, None, c) == 0.0
    # the agent stopped: lambda_h * (s + b_term(stop, s)); no length or parse terms
    last = reflect(decision=True, done=True, n_words=500)
    assert judgment_kind(last, c) == "hypothesis"
    assert step_reward(last, 0.9, c) == pytest.approx(2.0 * (0.9 + 1))
    assert step_reward(last, 0.5, c) == pytest.approx(2.0 * (0.5 - 1))
    # timed out on a reasoning turn: the held hypothesis is scored, no "right to go on" bonus
    timed = reasoning(index=39, done=True, timed_out=True)
    assert judgment_kind(timed, c) == "hypothesis"
    assert step_reward(timed, 0.2, c) == pytest.approx(2.0 * 0.2 - 1.0)
    # the call budget ended it after a NO: only lambda_h * s
    assert step_reward(reflect(decision=False, done=True), 0.4, c) == pytest.approx(2.0 * 0.4)


def test_final_grades_the_final_hypothesis_whatever_the_last_phase():
    c = cfg(schedule="final")
    timed = reasoning(index=39, done=True, timed_out=True)
    timed.hypothesis, timed.parsed = "it sorts the list", "plan: try an empty list"
    assert graded_text(timed, judgment_kind(timed, c)) == "it sorts the list"  # not the plan
    failed = reflect(parse_ok=False)
    failed.hypothesis, failed.parsed = "kept", "unparsed summary"
    assert graded_text(failed, "hypothesis") == "kept"  # the hypothesis the turn leaves
    assert graded_text(reasoning(), "informativeness") == words(10)  # a plan is graded as the plan
    with pytest.raises(ValueError, match="judgment kind"):
        graded_text(reasoning(), "style")


def test_final_group_broadcasts_the_releases_estimator():
    from aac.config import compose

    rewards = compose("rewards=final").rewards
    assert (rewards.schedule, rewards.advantage) == ("final", "final")
    assert compose().rewards.schedule == "aac_potential"  # the default
    assert compose("rewards=aac").rewards.advantage == "turn"


# ------------------------------------------------------------------ a failed critic (docs/method.md §7.1 P5)


@pytest.mark.parametrize("schedule", ["aac", "no_informativeness", "final"])
def test_a_missing_score_adds_no_judged_term(schedule):
    c = cfg(schedule=schedule)
    # a NO reflect without a score: neither lambda_h * s nor "right to go on"; a YES: no stop penalty
    if schedule != "final":
        assert step_reward(reflect(decision=False, n_words=150), None, c) == pytest.approx(-50 / 200)
        assert step_reward(reflect(decision=True, done=True, parse_ok=False), None, c) == pytest.approx(-0.5)
        assert step_reward(reasoning(n_words=150), None, c) == pytest.approx(-50 / 200)
    assert step_reward(reflect(decision=True, done=True), None, c) == 0.0
    assert step_reward(reasoning(index=39, done=True, timed_out=True), None, c) == pytest.approx(-1.0)
    steps = [reasoning(index=0), input_step(index=1, call=OK), reflect(index=2, decision=True, done=True)]
    kinds = [judgment_kind(st, c) for st in steps]
    assert masked_judgments(steps, [None, None, None], c) == kinds
    assert masked_judgments(steps, [0.5 if k else None for k in kinds], c) == [None] * 3
    with pytest.raises(ValueError, match="3 steps but 2 scores"):
        masked_judgments(steps, [None, None], c)


# ------------------------------------------------------------------ episodes and errors


def test_episode_rewards_of_a_short_episode():
    c = cfg()
    steps = [reasoning(index=0), input_step(index=1, call=OK), reflect(index=2, decision=False),
             reasoning(index=3, n_words=150), input_step(index=4, call=RAISED),
             reflect(index=5, decision=True, done=True)]
    scores = [judgment_kind(s, c) and v for s, v in zip(steps, [0.5, 0, 0.1, 0.4, 0, 0.8])]
    assert scores == [0.5, None, 0.1, 0.4, None, 0.8]
    assert episode_rewards(steps, scores, c) == pytest.approx(
        [0.5, 0.025, 2.0 * 1.1, 0.4 - 0.25, -0.5, 2.0 * 1.8])
    with pytest.raises(ValueError, match="6 steps but 5 scores"):
        episode_rewards(steps, scores[:5], c)


def test_bad_inputs_are_one_line_errors():
    c = cfg()
    with pytest.raises(ValueError, match="asks for no critic score"):
        step_reward(input_step(call=OK), 0.5, c)
    with pytest.raises(ValueError, match="outside"):
        step_reward(reflect(decision=False), 1.5, c)
    with pytest.raises(ValueError, match="unknown phase"):
        step_reward(step("answer"), None, c)


def test_composed_config_resolves_t_max():
    from aac.config import compose

    rewards = compose("rewards=no_informativeness", "env.max_steps=10").rewards
    assert step_reward(input_step(call=OK), None, rewards) == pytest.approx(2.0 / 20)
    assert judgment_kind(reasoning(), rewards) is None


# ------------------------------------------------------------------ the format penalty apart (format_in_return)


@pytest.mark.parametrize("schedule", ["aac", "aac_potential"])
def test_format_penalties_are_the_p_parse_part_of_each_reward(schedule):
    from aac.rewards import format_penalties

    c = cfg(schedule=schedule, p_parse=0.7)
    steps = [reasoning(index=0), input_step(index=1, call=RAISED), reflect(index=2, parse_ok=False, decision=False),
             reasoning(index=3, parse_ok=False), input_step(index=4, parse_ok=False), input_step(index=5, call=OK)]
    assert format_penalties(steps, c) == [0.0, -0.7, -0.7, -0.7, -0.7, 0.0]
    # each is in its reward: with p_parse 0 the rewards rise by exactly that much
    scores = [0.5, None, None, None, None, None] if schedule == "aac" else [0.5] + [None] * 5
    if schedule == "aac":
        scores[2] = 0.2
    free = episode_rewards(steps, scores, cfg(schedule=schedule, p_parse=0.0))
    paid = episode_rewards(steps, scores, c)
    assert [p - f for p, f in zip(paid, free)] == pytest.approx(format_penalties(steps, c))
    assert format_penalties(steps, cfg(schedule="final")) == [0.0] * 6  # final pays no format penalty


@pytest.mark.parametrize("overrides, message", [
    (["rewards.format_in_return=false", "rewards.advantage=episode"], "needs rewards.advantage=turn"),
    (["rewards=final", "rewards.advantage=turn", "rewards.format_in_return=false"], "pays no format penalty"),
])
def test_format_in_return_false_needs_the_turn_estimator(overrides, message):
    from aac.config import ConfigError, compose

    with pytest.raises(ConfigError, match=message) as e:
        compose(*overrides)
    assert "\n" not in str(e.value)
