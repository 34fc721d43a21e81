"""Mutants (aac/data/mutate.py, aac/data/mutants.py) and the mutants critic (`critic.kind=mutants`): a mutant is
kept only when a test input of the row tells it from the original and the context does not; an input kills
exactly the mutants it distinguishes; the critic's scores are shares of the mutants killed; the mutants are
stored on the privileged side of a row and never reach the actor's prompts."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from aac.config import ConfigError, compose
from aac.critic import Judgment, make_critic
from aac.critic.mutants import require_mutants
from aac.data.mutants import KillRunner, add_to_folder, find_mutants
from aac.data.mutate import OPERATORS, candidates
from aac.env.instance import PAU_COLUMNS, DatasetError, Instance, Mutant, load_instances
from aac.env.observation import Observation
from aac.env.protocol import Episode, ProtocolConfig, sandbox_caller
from aac.env.rows import to_row, write_instances
from aac.sandbox.pool import SandboxPool

THRESHOLD = "def test_func(arg0):\n    if arg0 < 5:\n        return 'small'\n    return 'big'\n"
# both branches return the same: every change of the condition is equivalent on every input
EQUIVALENT = "def test_func(arg0):\n    if arg0 > 100:\n        return arg0 * 2\n    return arg0 * 2\n"


def _row(code: str, context: list, tests: list, uid: str = "m/0") -> dict:
    return {"test_func_validated": code, "description": "gold", "header": "def test_func(arg0):", "task_id": uid,
            "train_examples": json.dumps(context), "test_examples": json.dumps(tests),
            "all_examples": json.dumps([[i, o, "None"] for i, o in context]), "direct_prompt": "",
            "interactive_starting_prompt": ""}


def threshold_instance() -> Instance:
    """Context 1 -> small, 9 -> big; tests 5, 4, 0, 7: only 5 and 4 sit at the threshold."""
    return Instance.from_row(_row(THRESHOLD, [["(1,)", "small"], ["(9,)", "big"]],
                                  [["(5,)", "big"], ["(4,)", "small"], ["(0,)", "small"], ["(7,)", "big"]]), 0)


@pytest.fixture(scope="module")
def runner():
    r = KillRunner(sandbox_caller(None), timeout_s=1.0)
    yield r
    r.close()


@pytest.fixture(scope="module")
def with_mutants(runner) -> Instance:
    inst = threshold_instance()
    return replace(inst, mutants=find_mutants(inst, runner))


def test_candidates_cover_the_operators_and_leave_the_validator_alone():
    code = ("def validate_input_args(arg0):\n    if type(arg0) is not list:\n        raise TypeError('list')\n\n"
            "def test_func(arg0):\n    validate_input_args(arg0)\n    n = len(arg0) + 1\n"
            "    if n > 2 and arg0[1:] != [True]:\n        return sorted(arg0, reverse=True)[:n]\n"
            "    return [x for x in arg0 if x]\n")
    found = candidates(code)
    assert {c.op for c in found} == set(OPERATORS)
    validator = code.split("def test_func")[0]
    assert all(c.code.startswith(validator + "def test_func(arg0):\n    validate_input_args(arg0)\n") for c in found)
    assert len({c.code for c in found}) == len(found) and code not in {c.code for c in found}
    assert "line 9: sorted(arg0, reverse=True) -> (sorted(arg0))" in {c.change for c in found if c.op == "call"}


def test_a_mutant_is_killed_by_a_distinguishing_input_and_not_by_another(runner, with_mutants):
    """`<` -> `<=` answers 5 'small' where the original says 'big'; on 4 both say 'small'."""
    kept = {m.change: m for m in with_mutants.mutants}
    boundary = kept["line 2: arg0 < 5 -> (arg0 <= 5)"]
    assert boundary.op == "compare" and boundary.witness == "(5,)"
    k = list(with_mutants.mutants).index(boundary)
    assert runner.kills(with_mutants, ["(5,)", "(4,)", "(100,)"], [k]) == [{k}, set(), set()]


def test_mutants_the_context_or_no_input_tells_apart_are_dropped(runner, with_mutants):
    # kept: the boundary and the threshold moved either way; dropped: the negated condition and both dropped
    # returns (the context already tells them apart: nothing left for an episode to find)
    assert sorted(m.change for m in with_mutants.mutants) == [
        "line 2: 5 -> 4", "line 2: 5 -> 6", "line 2: arg0 < 5 -> (arg0 <= 5)"]
    assert {m.witness for m in with_mutants.mutants} == {"(4,)", "(5,)"}
    equivalent = Instance.from_row(_row(EQUIVALENT, [["(1,)", 2], ["(300,)", 600]],
                                        [["(100,)", 200], ["(101,)", 202], ["(99,)", 198], ["(-4,)", -8]]), 0)
    every = replace(equivalent, mutants=tuple(Mutant(c.op, c.change, c.code, "") for c in candidates(EQUIVALENT)))
    inputs = [x for x, _ in [*equivalent.train_examples, *equivalent.test_examples]]
    killed = set().union(*runner.kills(every, inputs, range(len(every.mutants))))
    never = {m.change for k, m in enumerate(every.mutants) if k not in killed}
    assert never == {"line 2: arg0 > 100 -> (not (arg0 > 100))", "line 2: arg0 > 100 -> (arg0 >= 100)",
                     "line 2: 100 -> 101", "line 2: 100 -> 99", "line 3: return arg0 * 2 -> pass"}
    assert find_mutants(equivalent, runner) == ()  # the rest die on the context


def test_the_number_kept_is_capped_in_a_seeded_order(runner, with_mutants):
    again = find_mutants(threshold_instance(), runner)
    assert again == with_mutants.mutants  # the row alone decides (its uid seeds the order)
    assert len(find_mutants(threshold_instance(), runner, cap=1)) == 1


def test_a_looping_candidate_costs_one_timeout_not_one_per_context_example():
    """Three candidates of a counting loop never end (`i += 1` dropped, made `i -= 1` or `i += 0`): each is
    dropped at its first timeout, on the first context example, and never runs on the second."""
    source = "def test_func(arg0):\n    i = 0\n    while i < arg0:\n        i += 1\n    return i\n"
    inst = Instance.from_row(_row(source, [["(3,)", 3], ["(5,)", 5]], [["(0,)", 0], ["(2,)", 2]], "m/loop"), 0)
    caller, timed_out = sandbox_caller(None), []

    def counting(code: str, x: str, timeout_s: float):
        result = caller(code, x, timeout_s)
        if result.kind.cut_short:
            timed_out.append((code, x))
        return result

    r = KillRunner(counting, timeout_s=0.3)
    try:
        kept = find_mutants(inst, r)
    finally:
        r.close()
    assert len(timed_out) == 3 and {x for _, x in timed_out} == {"(3,)"}
    assert len({code for code, _ in timed_out}) == 3 and not {code for code, _ in timed_out} & {m.code for m in kept}


def _episode(inst: Instance, calls: list[str]) -> list[Observation]:
    caller = sandbox_caller(None)
    return [Observation(x, caller(inst.code, x, 2.0).output_repr, None) for x in ["(1,)", "(9,)", *calls]]


def test_the_critic_scores_shares_of_the_mutants_killed(with_mutants):
    """3 mutants survive the context: 5 kills two (the boundary and 5 -> 6), 4 the last, 7 nothing (none is left)."""
    obs = _episode(with_mutants, ["(5,)", "(4,)", "(7,)"])
    plans = [Judgment("informativeness", with_mutants, "", obs[:k], "plan", query=obs[k].input) for k in (2, 3, 4)]
    plans.append(Judgment("informativeness", with_mutants, "", obs[:2], "plan", query=None))  # no call: nothing
    hyps = [Judgment("hypothesis", with_mutants, "h", obs[:k], "") for k in (2, 3, 4, 5)]
    c = make_critic(None, compose("critic.kind=mutants").critic, caller=sandbox_caller(None), stop_threshold=0.7)
    try:
        scores = c.score(plans + hyps)
        assert scores == pytest.approx([2 / 3, 1.0, 0.0, 0.0, 0.0, 2 / 3, 1.0, 1.0])
        assert scores[5] <= 0.7 < scores[6]  # a stop after 5 alone is premature, after 4 right
        counts = c.counts()
        # 4 inputs on the original, the context on 3 mutants, 5 on 3, 4 on the 1 left (7: nothing alive)
        assert (counts["judgments"], counts["mutant_calls"], counts["mutants_fallback"]) == (8, 14, 0)
        # the same questions again: all from the cache
        assert c.score(plans + hyps) == scores and c.counts()["mutant_calls"] == 14
    finally:
        c.close()


def test_a_row_that_kept_no_mutant_is_scored_by_the_scripted_rule(with_mutants):
    none_kept = replace(with_mutants, mutants=())
    obs = _episode(none_kept, ["(5,)"])
    cfg = compose("critic.kind=mutants", "critic.scripted_k=1", "critic.scripted_rule=coverage").critic
    c = make_critic(None, cfg, caller=sandbox_caller(None), stop_threshold=0.7)
    try:  # 5 takes 9's branch and answers 9's 'big': no informative call to the scripted rule
        assert c.score([Judgment("hypothesis", none_kept, "h", obs, "")]) == [0.0]
        assert c.counts()["mutants_fallback"] == 1
    finally:
        c.close()


def test_rows_without_the_column_are_refused_in_one_line(with_mutants):
    require_mutants([with_mutants], "data")
    with pytest.raises(DatasetError, match=r"data: critic.kind=mutants needs rows with mutants; 1 of 2 have none "
                                           r"\(first: m/0\): add them with python -m aac.data.mutants folder=DIR"):
        require_mutants([with_mutants, threshold_instance()], "data")


def test_the_settings_that_go_with_it():
    cfg = compose("+recipe=smollm2_cpu", "critic.kind=mutants")
    assert cfg.rewards.late_stop_penalty == -2.0 and cfg.rewards.stop_threshold == 0.7  # a verified score
    with pytest.raises(ConfigError, match="critic.kind=mutants reads the row's mutants"):
        compose("critic.kind=mutants", "critic.mode=symmetric")
    with pytest.raises(ConfigError, match="env.domain=stateful needs critic.informativeness=judge"):
        compose("critic.kind=mutants", "env.domain=stateful")


@pytest.mark.parametrize("suffix", ["jsonl", "parquet"])
def test_the_column_round_trips_beside_the_published_schema(tmp_path, with_mutants, suffix):
    prompts = {"direct_prompt": "d", "interactive_starting_prompt": "i"}  # as written (empty ones get ours)
    rows = [replace(with_mutants, **prompts), replace(threshold_instance(), uid="m/1", **prompts)]
    back = load_instances(write_instances(tmp_path / f"set.{suffix}", rows), split="all")
    assert back == rows and back[0].mutants == with_mutants.mutants and back[1].mutants is None
    plain = threshold_instance()
    row = to_row(with_mutants)
    assert [k for k in row if k in PAU_COLUMNS] == list(PAU_COLUMNS)  # the 8 published columns, as they were
    assert {k: v for k, v in row.items() if k != "mutants"} == to_row(plain)
    bad = dict(row, mutants=json.dumps([{"op": "x"}]))
    with pytest.raises(DatasetError, match="row 0: mutants: expected a list of"):
        Instance.from_row(bad, 0)


def test_adding_mutants_to_a_folder_keeps_every_other_byte(tmp_path):
    folder = tmp_path / "set"
    plain = [threshold_instance(), replace(threshold_instance(), uid="m/1")]
    write_instances(folder / "train.jsonl", plain)
    before = (folder / "train.jsonl").read_text().splitlines()
    with SandboxPool(workers=2) as pool:
        summary = add_to_folder(folder, pool, splits=["train"])
    after = (folder / "train.jsonl").read_text().splitlines()
    assert summary["rows"] == 2 and summary["mean"] == 3.0
    assert all(a.startswith(b[:-1] + ', "mutants": ') for a, b in zip(after, before, strict=True))


CANARY = "canary_mutant_text_4f1e"


def test_no_mutant_text_in_any_actor_prompt(with_mutants):
    """Every prompt of an episode (both prompt styles, every phase, with answer cues) and the prompt columns a
    written row fills in hold none of the mutants' text; the mutants are there to be found."""
    canary = Mutant("drop", f"line 1: {CANARY}", THRESHOLD.replace("'small'", repr(CANARY)), "(5,)")
    inst = replace(with_mutants, mutants=(*with_mutants.mutants, canary))
    fragments = [CANARY, "arg0 <= 5", "arg0 < 4", "arg0 < 6"]
    assert all(any(f in m.code for m in inst.mutants) for f in fragments)
    chats = []
    for style in ("paper", "compact"):
        ep = Episode(inst, ProtocolConfig(prompt_style=style, answer_cues=True), caller=sandbox_caller(None))
        for reply in ["Try 5.", "(5,)", "Summary: small below 5\nDecision: NO"] * 2:
            chats.append(ep.prompt())
            ep.step(reply)
    row = to_row(inst)
    texts = [m["content"] for chat in chats for m in chat] + [row["direct_prompt"], row["interactive_starting_prompt"]]
    assert len(chats) == 12 and all(f not in t for f in fragments for t in texts)


# ---------------------------------------------------------------- query efficiency (aac/eval/query_efficiency.py)


def test_query_efficiency_beside_the_greedy_oracle(runner, with_mutants):
    """7 kills nothing, 5 two of the three, 4 the last; the oracle asks 5 then 4 (the row's test inputs)."""
    from aac.eval.query_efficiency import query_efficiency

    qe = query_efficiency(["(7,)", "(5,)", "(4,)"], with_mutants, runner)
    assert qe == {"mutants": 3, "killed": [0.0, 0.6667, 1.0], "queries_to_90": 3,
                  "oracle_killed": [0.6667, 1.0], "oracle_queries_to_90": 2}
    assert query_efficiency(["(4,)"], with_mutants, runner)["killed"] == [0.3333]
    assert query_efficiency([], with_mutants, runner)["queries_to_90"] is None
    assert query_efficiency(["(5,)"], threshold_instance(), runner) is None  # no mutants built
    assert query_efficiency(["(5,)"], replace(with_mutants, mutants=()), runner) is None  # none kept


def test_query_efficiency_summary_and_report():
    from aac.eval.query_efficiency import record_queries, summarize_efficiency
    from aac.eval.report import render_markdown, summarize

    a = {"mutants": 3, "killed": [0.0, 0.6667, 1.0], "queries_to_90": 3, "oracle_killed": [0.6667, 1.0],
         "oracle_queries_to_90": 2}
    b = {"mutants": 4, "killed": [0.5], "queries_to_90": None, "oracle_killed": [0.5, 0.75, 1.0],
         "oracle_queries_to_90": 3}
    s = summarize_efficiency([a, None, b])
    assert s["episodes"] == 2 and s["mutants_mean"] == 3.5 and s["killed_mean"] == pytest.approx(0.75)
    assert s["killed_at_k"] == pytest.approx([0.25, 0.58335, 0.75])  # b stopped after 1: it keeps 0.5
    assert s["oracle_killed_at_k"] == pytest.approx([0.58335, 0.875, 1.0])
    assert (s["queries_to_90_mean"], s["reached_90_pct"]) == (3.0, 50.0)
    assert (s["oracle_queries_to_90_mean"], s["oracle_reached_90_pct"]) == (2.5, 100.0)
    assert s["vs_oracle_mean"] == pytest.approx((1.0 / 1.0 + 0.5 / 0.5) / 2)
    assert summarize_efficiency([None]) is None
    episode = {"uid": "m/0", "source": "s", "mode": "interactive", "num_queries": 2, "concluded": True, "turns": 6,
               "format_errors": 0, "observations": [["(1,)", "'small'", None], ["(9,)", "'big'", None],
                                                    ["(7,)", "'big'", None], ["(5,)", "'big'", None]]}
    assert record_queries(episode) == ["(7,)", "(5,)"]
    scores = {"m/0": {"uid": "m/0", "judge": {"score": 3, "parsed": True, "text": ""}, "query_efficiency": a}}
    md = render_markdown(summarize({"name": "x"}, [episode], scores))
    assert "| mutants killed after 1 / 2 / 3 queries (oracle) | 0 / 67 / 100 % (67 / 100 / 100 %) |" in md
    assert "| queries to kill 90% of the mutants (oracle) | 3.0 in 100 % of episodes (2.0 in 100 %) |" in md


def test_the_viewer_shows_an_eval_episodes_query_efficiency(tmp_path):
    from aac.view import render
    from aac.view.load import load

    qe = {"mutants": 3, "killed": [0.0, 0.6667], "queries_to_90": None, "oracle_killed": [0.6667, 1.0],
          "oracle_queries_to_90": 2}
    episode = {"uid": "m/0", "mode": "interactive", "num_queries": 2, "concluded": False, "turns": 0,
               "format_errors": 0, "observations": [], "steps": []}
    (tmp_path / "episodes.jsonl").write_text(json.dumps(episode) + "\n")
    (tmp_path / "scores.jsonl").write_text(json.dumps({"uid": "m/0", "judge": {"score": 2}, "query_efficiency": qe})
                                           + "\n")
    side = load(tmp_path)
    assert side.episodes[0]["qe"] == qe
    html = render([side])
    assert "function qeHtml(q)" in html and '"qe":{"mutants":3' in html
