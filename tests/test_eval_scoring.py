"""Judge rating parsing and code match on fixed model outputs (no model; the sandbox is real)."""

from __future__ import annotations

import pytest
from test_eval_runner import _DIVMOD as DIVMOD_SOURCE

from aac.env.observation import Observation
from aac.scorers.codematch import CodeMatcher, CoderTask, coder_messages, extract_code, score_code
from aac.scorers.judge import Judge, judge_messages, parse_rating, rating_from_reply


@pytest.mark.parametrize("reply, expected", [
    ("The prediction misses the edge case.\nRating: 3", 3),
    ("**Rating:** 5", 5),
    ("Rating: 4/5", 4),
    ("rating = 2", 2),
    ("Final rating: [[4]]", 4),
    ("Rating: 2\nOn reflection the details are right.\nRating: 4", 4),  # the last one counts
    ("<think>Rating: 5 seems too high</think>Close but wrong on empty lists.\nRating: 3", 3),
    ("<think>Still thinking, Rating: 5", None),  # cut off inside the thinking
    ("Rating: 7", None),
    ("Rating: 10", None),
    ("Rating: 4.5", None),
    ("I would give it a four.", None),
    ("", None),
    ("\x00\x01 garbage ###", None),
])
def test_parse_rating(reply, expected):
    assert parse_rating(reply) == expected


def test_unparsable_rating_scores_one_and_is_counted():
    r = rating_from_reply("no idea")
    assert (r.score, r.parsed) == (1, False)
    assert rating_from_reply("Rating: 5") .score == 5


def test_judge_batches_and_skips_empty_predictions():
    seen = []

    def completer(chats):
        seen.extend(chats)
        return ["Good.\nRating: 4", "garbage"][: len(chats)]

    out = Judge(completer).rate([("def test_func(arg0):", "Doubles arg0.", "Returns twice its input."),
                                 ("def test_func(arg0):", "Sorts.", "  "),
                                 ("def test_func(arg0):", "Sorts.", "Reverses.")])
    assert [(r.score, r.parsed) for r in out] == [(4, True), (1, True), (1, False)]
    assert len(seen) == 2  # the empty prediction was not asked
    text = seen[0][-1]["content"]
    assert "Doubles arg0." in text and "Returns twice its input." in text and "def test_func(arg0):" in text
    assert judge_messages("h", "g", "p")[0]["role"] == "system"


FUNC = "def test_func(arg0):\n    return (arg0, arg0 * 2)"


@pytest.mark.parametrize("reply", [
    f"Here it is:\n```python\n{FUNC}\n```\nThis returns a pair.",
    f"```\n{FUNC}\n```",
    f"```py\nimport math\n```\nand\n```python\n{FUNC}\n```\n```python\nprint(test_func(2))\n```",
    f"```python\n{FUNC}\n",  # unterminated fence (token limit)
    f"```python\n{FUNC}\n\ndef helper(x):\n    return x +",  # cut inside a later definition
    f"```python\n{FUNC}\n\ndef test_func",
    f"Sure! The function:\n\n{FUNC}\n\nIt doubles the input and returns both.",
    f"{FUNC}",
    f"<think>maybe def test_func(x): pass</think>\n{FUNC}",
])
def test_extract_code(reply):
    assert extract_code(reply) == FUNC


def test_extract_code_without_code():
    assert extract_code("I cannot write this function.") == ""
    assert extract_code("```text\nnot code\n```") == ""


def test_coder_prompt_shows_description_header_and_all_observations():
    msgs = coder_messages("def test_func(arg0):", "Doubles it.",
                          [Observation("(2,)", "4"), Observation("('a',)", "", "TypeError: bad")])
    text = msgs[-1]["content"]
    assert "Doubles it." in text and "def test_func(arg0):" in text
    assert "(2,)  ->  4" in text and "raises TypeError: bad" in text


# ---------------------------------------------------------------- code match in the sandbox

TUPLE_GOLD = DIVMOD_SOURCE
# as stored in PAU rows: outputs went through JSON (tuples are lists), some are repr strings
TUPLE_TESTS = [("(10, 3)", [3, 1]), ("(5, 0)", [0, 5]), ("(-7, 2)", "(-4, 1)"), ("(100, 7)", [14, 2])]


@pytest.fixture(scope="module")
def pool():
    from aac.sandbox.pool import SandboxPool

    with SandboxPool(workers=1) as p:
        yield p


def test_gold_code_of_tuple_function_scores_one(pool):
    m = score_code(TUPLE_GOLD, TUPLE_TESTS, pool, timeout_s=2.0)
    assert (m.score, m.matches, m.total, m.errors) == (1.0, 4, 4, 0)


def test_list_and_dict_outputs_match_through_the_normalisation(pool):
    code = "def test_func(arg0):\n    return {1: sorted(set(arg0)), 'n': len(arg0)}"
    m = score_code(code, [("([3, 1, 3],)", {"1": [1, 3], "n": 3}), ("([],)", {"1": [], "n": 0})], pool,
                   timeout_s=2.0)
    assert m.score == 1.0


def test_partial_credit_errors_and_missing_code(pool):
    wrong_on_zero = "def test_func(arg0, arg1):\n    return divmod(arg0, arg1)"  # raises on arg1 == 0
    m = score_code(wrong_on_zero, TUPLE_TESTS, pool, timeout_s=2.0)
    assert (m.score, m.matches, m.errors) == (0.75, 3, 1)
    loops = "def test_func(arg0, arg1):\n    while True:\n        pass"
    assert score_code(loops, TUPLE_TESTS[:1], pool, timeout_s=0.3).errors == 1
    assert score_code("x = 1", TUPLE_TESTS[:1], pool, timeout_s=1.0).score == 0.0  # no test_func
    empty = score_code("", TUPLE_TESTS, pool, timeout_s=1.0)
    assert empty.score == 0.0 and empty.note


def test_code_matcher_end_to_end_with_canned_coder(pool):
    replies = iter([f"```python\n{TUPLE_GOLD}```", "I don't know."])
    matcher = CodeMatcher(lambda chats: [next(replies) for _ in chats], pool, timeout_s=2.0)
    task = CoderTask("def test_func(arg0, arg1):", "quotient and remainder", [Observation("(7, 2)", "(3, 1)")],
                     TUPLE_TESTS)
    good, none = matcher.score([task, task])
    assert good.score == 1.0 and none.score == 0.0


def test_a_row_without_gold_description_gets_no_judge_score_but_its_code_match(pool):
    """builtin:pau_like marks CRUXEval rows built without an LLM describer by an empty description:
    the judge is not asked, the description score leaves them out, code match still counts."""
    from aac.env.instance import Instance
    from aac.eval.report import summarize
    from aac.eval.scoring import score_episodes

    asked = []
    judge = Judge(lambda chats: asked.extend(chats) or ["Rating: 4"] * len(chats))
    matcher = CodeMatcher(lambda chats: [f"```python\n{TUPLE_GOLD}```"] * len(chats), pool, timeout_s=2.0)
    insts = {u: Instance(uid=u, source="s", code=TUPLE_GOLD, description=d, header="def test_func(arg0, arg1):",
                         train_examples=[], test_examples=TUPLE_TESTS, all_examples=[])
             for u, d in (("a", "quotient and remainder"), ("b", ""))}
    episodes = [{"uid": u, "description": "divmod", "observations": [], "num_queries": 0, "concluded": True,
                 "turns": 1, "format_errors": 0} for u in ("a", "b")]
    out: list[dict] = []
    score_episodes(episodes, insts, judge, matcher, gold=False, batch_size=4, on_done=out.extend)
    assert len(asked) == 1 and [r["judge"]["score"] for r in out] == [4, None]
    report = summarize({}, episodes, {r["uid"]: r for r in out})
    assert report["description_score"]["mean"] == 4 and report["description_score"]["n_without_gold_description"] == 1
    assert report["code_match"]["mean"] == 1.0  # both rows' code match counts
