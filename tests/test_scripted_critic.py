"""The scripted critic (`critic.kind=scripted`): informative = a new input reaching new branch arcs;
hypothesis quality passes the stop threshold exactly at the K-th informative call."""

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
