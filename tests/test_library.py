"""The library domain: real library functions under an unseen name, built from their docstrings."""

from __future__ import annotations

import ast
import functools
import json
import random
import re
from collections import Counter

import pytest

from aac.critic.judgment import Judgment
from aac.critic.prompts import critic_messages
from aac.data import library
from aac.data.callgraph import keep_reachable
from aac.data.examples import unreproduced
from aac.datasets import load_instances
from aac.env.domains import get_domain
from aac.env.prompts import in_context_prompt
from aac.env.protocol import Episode, sandbox_caller
from aac.env.rows import write_instances
from aac.env.teacher import privileged_block
from aac.sandbox.pool import SandboxPool
from aac.scorers.codematch import score_code

FUNCTIONS = ("numpy.cumsum", "statistics.median", "math.comb", "itertools.combinations", "bisect.bisect_left",
             "textwrap.shorten")


@functools.cache
def _candidates(module: str) -> dict[str, library.Candidate]:
    return {c.qualname: c for c in library.candidates((module,), Counter())}


def _candidate(qualname: str) -> library.Candidate:
    return _candidates(qualname.rsplit(".", 1)[0])[qualname]


def test_docstring_calls_are_read_with_ast_from_doctests_bound_names_and_arrow_lines():
    assert ([1, 3, 5],) in library.doctest_calls(_candidate("statistics.median"))
    # `>>> a = np.array([[1,2,3], [4,5,6]])` then `>>> np.cumsum(a, axis=0)`: the name resolves to
    # the literal, and the keyword moves to its place
    cumsum = library.doctest_calls(_candidate("numpy.cumsum"))
    assert ([[1, 2, 3], [4, 5, 6]],) in cumsum and ([[1, 2, 3], [4, 5, 6]], 0) in cumsum
    assert ([0, 1, 2, 3], 3) in library.doctest_calls(_candidate("itertools.combinations"))  # "f(range(4), 3) -->"
    assert library.choose_arity(_candidate("math.comb"), []) == 2  # no doctest: the signature


def test_the_gold_description_is_the_first_paragraph_of_the_real_docstring():
    import numpy

    assert library.doc_paragraph(numpy.add, "add") == "Add arguments element-wise."  # the signature line skipped
    assert library.doc_paragraph(numpy.cumsum, "cumsum") == "Return the cumulative sum of the elements along a given axis."


def test_the_wrapper_holds_no_code_its_entry_does_not_reach():
    body = ast.parse(library.wrapper_source("math.comb", 2)).body
    assert keep_reachable(list(body), {"test_func"}) == body  # the callgraph pruning has nothing to drop


def test_the_wrapper_makes_outputs_literal_keeps_the_dtype_and_hides_the_name_in_errors():
    cumsum = library.wrapper_source("numpy.cumsum", 1)
    count = library.wrapper_source("itertools.count", 1)
    comb = library.wrapper_source("math.comb", 2)
    with SandboxPool(workers=1, preload=library.PRELOAD) as pool:
        ints, floats, counted, err = pool.call_many(
            [(cumsum, "([1, 2, 3],)"), (cumsum, "([1.5, 2],)"), (count, "(5,)"), (comb, "(-1, 2)")], timeout_s=5)
    assert ints.output == {"array": [1, 3, 6], "dtype": "int64"}
    assert floats.output == {"array": [1.5, 3.5], "dtype": "float64"}  # values alike, dtype shown apart
    assert counted.output == {"items": list(range(5, 5 + library.ITEMS_CAP)), "more": True}
    assert err.error.startswith("ValueError") and "comb" not in err.error


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    instances, summary = library.build(library.LibraryConfig(only=FUNCTIONS))
    path = tmp_path_factory.mktemp("library") / "rows.jsonl"
    write_instances(path, instances)
    return load_instances(str(path), split="all", domain="library", on_bad_row="raise"), summary


def test_built_rows_reload_as_library_rows_and_reproduce_in_a_fresh_sandbox(built):
    instances, summary = built
    assert sorted(i.uid for i in instances) == sorted(FUNCTIONS) and summary.rows_kept == len(FUNCTIONS)
    for inst in instances:
        assert inst.domain == "library" and len(inst.train_examples) == 2 and 4 <= len(inst.test_examples) <= 10
        assert inst.description == _candidate(inst.uid).description
    cumsum = next(i for i in instances if i.uid == "numpy.cumsum")
    assert cumsum.header == "def test_func(arg0, arg1):"  # the docstring's commonest call: (a, axis)
    written = ("def test_func(arg0, arg1):\n    import numpy\n    r = numpy.cumsum(arg0, arg1)\n"
               "    return {'array': r.tolist(), 'dtype': str(r.dtype)}\n")
    with SandboxPool(workers=2, preload=library.PRELOAD) as fresh:
        assert unreproduced(instances, fresh) == set()
        # code match: a coder's function returning the shown representation matches the real one
        cases = get_domain("library").match_cases(cumsum)
        assert score_code(written, cases, fresh, timeout_s=2).score == 1.0
        assert score_code(written.replace("cumsum", "cumprod"), cases, fresh, timeout_s=2).score < 1.0
    d = summary.as_dict()
    assert d["rows_with_doctest_seeds"] >= 4 and d["mean_distinct_test_outputs"] >= 4


def _actor_texts(inst) -> list[str]:
    """Every text the actor sees in one episode: the three turn prompts (after a call that raises
    and one that runs), the in-context prompt and the stored prompt columns."""
    episode = Episode(inst, caller=sandbox_caller(None))
    texts = [json.dumps(in_context_prompt(inst)), inst.direct_prompt, inst.interactive_starting_prompt]
    arity = inst.header.count("arg")
    for reply in ("I try a bad input.", f"Input: {(None,) * arity!r}",
                  "Decision: NO\nSummary: unknown", "Now a good one.", f"Input: {inst.test_examples[0][0]}",
                  "Decision: NO\nSummary: still unknown"):
        texts.append(json.dumps(episode.prompt()))
        episode.step(reply)
    return texts


def test_no_prompt_the_actor_sees_names_the_real_function(built):
    instances, _ = built
    raised = 0
    for inst in instances:
        name = inst.uid.rsplit(".", 1)[1]
        texts = _actor_texts(inst)
        raised += any("raised" in t for t in texts)  # the bad call's error is shown
        assert not any(re.search(rf"(?<![A-Za-z0-9]){name}(?![A-Za-z0-9])", t, re.I) for t in texts), inst.uid
    assert raised >= len(instances) - 1


def test_the_privileged_critic_sees_the_real_documentation_and_the_wrapper_naming_the_function(built):
    instances, _ = built
    inst = next(i for i in instances if i.uid == "numpy.cumsum")
    seen = get_domain("library").privileged(inst)
    assert seen.description == "Return the cumulative sum of the elements along a given axis."
    judgment = Judgment("hypothesis", inst, "not yet formed", [], "It adds up the numbers.")
    question = critic_messages(judgment, "privileged")[-1]["content"]
    assert seen.description in question and "numpy.cumsum" in question
    assert "cumsum" not in critic_messages(judgment, "symmetric")[-1]["content"]
    assert library_label_in(privileged_block(inst))


def library_label_in(text: str) -> bool:
    from aac.env.domains.library import SOURCE_LABEL

    return SOURCE_LABEL in text


@pytest.mark.slow
def test_builtin_library_has_150_rows_split_train_test_all_reproducing(tmp_path):
    from aac.data.builtin import builtin_path

    train = load_instances("builtin:library", split="train", domain="library", on_bad_row="raise")
    test = load_instances("builtin:library", split="test", domain="library", on_bad_row="raise")
    assert len(train) + len(test) >= 150 and test and not {i.uid for i in train} & {i.uid for i in test}
    meta = json.loads((builtin_path("library", "train").parent / "meta.json").read_text())
    assert meta["rows_kept"] == len(train) + len(test) and meta["dropped"]
    for inst in train + test:  # what the actor is shown of a row: no example names the function
        name = library.name_pattern(inst.uid.rsplit(".", 1)[1])
        shown = [inst.header] + [f"{i} {o!r}" for i, o in [*inst.train_examples, *inst.test_examples]]
        assert not any(name.search(t) for t in shown), inst.uid
    # the builder re-ran every row in a fresh pool before keeping it; here a seeded sample again
    sample = random.Random(0).sample(train + test, 40)
    with SandboxPool(workers=2, preload=library.PRELOAD) as fresh:
        assert unreproduced(sample, fresh) == set()


def test_a_library_runs_pools_preload_numpy_unless_the_sandbox_names_its_list():
    from aac.config import EnvConfig
    from aac.env.domains import open_pool

    code = "def test_func(arg0):\n    import sys\n    return 'numpy' in sys.modules\n"
    seen = {}
    for domain, preload in (("pau", None), ("library", None), ("library", ["math"])):
        env = EnvConfig(domain=domain)
        env.sandbox.preload = preload
        with open_pool(env, workers=1) as pool:
            seen[domain, str(preload)] = pool.call(code, "(1,)", timeout_s=10).output
    assert seen == {("pau", "None"): False, ("library", "None"): True, ("library", "['math']"): False}
