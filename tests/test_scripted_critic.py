"""The scripted critic (`critic.kind=scripted`): informative = a new input reaching new branch arcs;
hypothesis quality passes the stop threshold exactly at the K-th informative call. Under
`critic.mode=symmetric` (SYM-INFO): informative = a new input with a new result, read from what the actor
saw, nothing privileged."""

from __future__ import annotations

import pytest

from aac.config import compose
from aac.critic import Judgment, make_critic
from aac.data.branches import branch_rows
from aac.env.instance import Instance
from aac.env.observation import Observation
from aac.env.protocol import sandbox_caller


@pytest.fixture(scope="module")
def critic():
    cfg = compose("critic.kind=scripted", "critic.scripted_k=3").critic
    c = make_critic(None, cfg, caller=sandbox_caller(None), stop_threshold=0.7)
    yield c
    c.close()


def _episode(inst: Instance, calls: list[int]) -> list[Observation]:
    obs = [Observation(i, repr(o), None) for i, o in inst.train_examples]
    return obs + [Observation(f"({x},)", "'?'", None) for x in calls]  # results play no part


def test_informative_calls_count_towards_the_stop_threshold(critic):
    inst = Instance.from_row(branch_rows(1)[0], 0)  # lo 0, multiples of 2, hi 4; context: 1 and 3 ("other")
    # -1: low (new); 1: a context input; 2: mult small (new); 2 again; 9: big (new); 6: mult big (new)
    calls = [-1, 1, 2, 2, 9, 6]
    obs = _episode(inst, calls)
    plans = [Judgment("informativeness", inst, "", obs[: 2 + t], "plan", query=obs[2 + t].input) for t in range(6)]
    plans.append(Judgment("informativeness", inst, "", obs, "plan", query=None))
    hyps = [Judgment("hypothesis", inst, "h", obs[: 2 + t], "") for t in range(7)]
    scores = critic.score(plans + hyps)
    assert scores[:7] == [1.0, 0.0, 1.0, 0.0, 1.0, 1.0, 0.0]
    k = [0, 1, 1, 2, 2, 3, 4]  # informative calls after t calls
    assert scores[7:] == pytest.approx([1.0 if n >= 3 else 0.7 * n / 3 for n in k])
    assert scores[7 + 4] <= 0.7 < scores[7 + 5]  # the 3rd informative call passes the threshold
    assert critic.counts()["judgments"] == 14 and critic.counts()["coverage_failures"] == 0


def test_a_function_that_cannot_be_measured_is_masked(critic):
    row = dict(branch_rows(1)[0], test_func_validated="def test_func(arg0):\n    raise SystemExit\nraise ValueError\n")
    inst = Instance.from_row(row, 0)
    obs = _episode(inst, [5])
    assert critic.score([Judgment("hypothesis", inst, "h", obs, "")]) == [None]


@pytest.mark.parametrize("rule, informative, quality",
                         [("arcs", [0.0, 0.0, 0.0, 0.0], 0.0), ("coverage", [0.0, 1.0, 0.0, 0.0], 1.0)])
def test_the_coverage_rule_counts_a_new_result_as_informative(rule, informative, quality):
    """`critic.scripted_rule`: on a function without branch arcs no call reaches new arcs, so under `arcs` no
    call is informative and no stop is ever right; under `coverage` a new input with a new result is, unless
    the call raised (a new exception type is a new result to the eval's count, not to the reward)."""
    cfg = compose("critic.kind=scripted", "critic.scripted_k=1", f"critic.scripted_rule={rule}").critic
    row = dict(branch_rows(1)[0], test_func_validated="def test_func(arg0):\n    return arg0 % 3\n")
    inst = Instance.from_row(row, 0)
    caller = sandbox_caller(None)
    # two context examples, then results 1 (seen), 2 (new), 2 again, and a TypeError (wrong arity)
    inputs = ["(1,)", "(3,)", "(4,)", "(5,)", "(8,)", "(1, 2)"]
    obs = [Observation(x, caller(inst.code, x, 2.0).output_repr, caller(inst.code, x, 2.0).error) for x in inputs]
    assert obs[-1].error is not None
    c = make_critic(None, cfg, caller=caller, stop_threshold=0.7)
    try:
        plans = [Judgment("informativeness", inst, "", obs[:k], "plan", query=obs[k].input) for k in (2, 3, 4, 5)]
        scores = c.score([*plans, Judgment("hypothesis", inst, "h", obs, "")])
    finally:
        c.close()
    assert scores == [*informative, quality]


# ---------------------------------------------------------------- critic.mode=symmetric: SYM-INFO

# 7: a branch no context input reached, and a result the context showed (1); 3: no new branch, a new result
_SYM_CODE = "def test_func(arg0):\n    if arg0 > 5:\n        return 1\n    return arg0 % 3\n"


def _sym_episode() -> tuple[Instance, list[Observation]]:
    inst = Instance.from_row(dict(branch_rows(1)[0], test_func_validated=_SYM_CODE), 0)
    caller = sandbox_caller(None)
    inputs = ["(1,)", "(2,)", "(7,)", "(3,)", "(3,)", "(1, 2)"]  # context 1 -> 1, 2 -> 2; then 4 calls
    results = [caller(inst.code, x, 2.0) for x in inputs]
    assert [r.output for r in results[:5]] == [1, 2, 1, 0, 0] and results[5].error is not None
    return inst, [Observation(x, r.output_repr, r.error) for x, r in zip(inputs, results)]


def _sym_judgments(inst: Instance, obs: list[Observation]) -> list[Judgment]:
    plans = [Judgment("informativeness", inst, "", obs[:k], "plan", query=obs[k].input, answer=obs[k])
             for k in range(2, 6)]
    return plans + [Judgment("hypothesis", inst, "h", obs[:k], "") for k in (3, 4, 6)]


@pytest.mark.parametrize("overrides, expected", [
    # privileged, coverage rule: 7 reaches a new arc, 3 a new result; the repeat and the TypeError nothing
    (("critic.scripted_rule=coverage",), [1.0, 1.0, 0.0, 0.0, 1.0, 1.0, 1.0]),
    # symmetric: 7's result (1) was seen in the context, so only 3 is informative
    (("critic.mode=symmetric",), [0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 1.0]),
])
def test_the_symmetric_rule_needs_a_new_result_where_the_privileged_one_takes_new_arcs(overrides, expected):
    inst, obs = _sym_episode()
    cfg = compose("critic.kind=scripted", "critic.scripted_k=1", *overrides).critic
    c = make_critic(None, cfg, caller=sandbox_caller(None), stop_threshold=0.7)
    try:
        assert c.score(_sym_judgments(inst, obs)) == expected
    finally:
        c.close()


def test_the_symmetric_critic_reads_nothing_privileged():
    """Junk in place of the source and the gold description changes none of its scores, and it runs
    nothing: a caller that fails every call is never asked."""
    from dataclasses import replace

    inst, obs = _sym_episode()
    junk = replace(inst, code="def test_func(arg0):\n    raise SystemExit\n", description="junk")

    def no_calls(*_):
        raise AssertionError("the symmetric critic ran the function")

    cfg = compose("critic.kind=scripted", "critic.scripted_k=2", "critic.mode=symmetric").critic
    c = make_critic(None, cfg, caller=no_calls, stop_threshold=0.7)
    assert c.coverage is None
    real, fake = c.score(_sym_judgments(inst, obs)), c.score(_sym_judgments(junk, obs))
    assert real == fake == [0.0, 1.0, 0.0, 0.0, 0.0, 0.35, 0.35]
    # a plan whose call's result the judgment does not hold cannot be measured without running it
    assert c.score([Judgment("informativeness", inst, "", obs[:2], "plan", query="(3,)")]) == [None]


@pytest.mark.parametrize("schedule", ["rewards.schedule=sym_info", "rewards.schedule=aac_potential"])
def test_sym_info_on_the_demo_recipe_composes_with_its_verified_stop(schedule):
    cfg = compose("+recipe=smollm2_cpu", schedule, "critic.mode=symmetric")
    assert (cfg.critic.kind, cfg.critic.mode, cfg.critic.scripted_k) == ("scripted", "symmetric", 1)
    assert cfg.rewards.late_stop_penalty == -2.0  # kept: the symmetric score is the same kind of verified rule
    c = make_critic(None, cfg.critic, caller=None, stop_threshold=cfg.rewards.stop_threshold)
    assert c.coverage is None
    c.close()


class _Turn:
    def __init__(self, step, hypothesis, observations):
        self.step, self.hypothesis, self.observations = step, hypothesis, observations


def test_a_plans_judgment_carries_its_calls_result():
    """What the rollout asks the critic about a plan holds the call's result as the actor saw it."""
    from aac.env.protocol import Episode
    from aac.rollout.judgments import turn_judgments

    inst, _ = _sym_episode()
    ep = Episode(inst, caller=sandbox_caller(None))
    turns = []
    for reply in ["Try 3.", "(3,)", "Summary: mod 3\nDecision: NO"]:
        hypothesis, seen = ep.hypothesis, list(ep.observations)
        turns.append(_Turn(ep.step(reply), hypothesis, seen))
    cfg = compose("critic.kind=scripted", "critic.mode=symmetric")
    plan = turn_judgments(inst, turns, cfg.rewards)[0]
    assert (plan.query, plan.answer) == ("(3,)", Observation("(3,)", "0", None))
