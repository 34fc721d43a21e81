"""The data builder: anonymisation, the PAU argument rule, validators, coverage, and whole builds
(HumanEval from the installed package; MBPP and CRUXEval from the shared sources when present)."""

from __future__ import annotations

import ast
import json
import random
import time

import pytest
from conftest import SHARED_SOURCES

from aac.data import builtin as builtin_mod
from aac.data.anonymize import RejectedCode, anonymize, with_validator
from aac.data.builtin import builtin_path
from aac.data.coverage import CoverageRunner
from aac.data.inputs import Mutator, code_constants, infer_types, render, same_value, validator_source
from aac.data.mutants import MUTANTS_VERSION
from aac.data.pau import BuildConfig, build, fingerprints
from aac.data.sources import clean_description, read_tasks
from aac.data.splits import split_instances
from aac.datasets import load_instances as load_any
from aac.env.instance import PAU_COLUMNS, load_instances
from aac.env.rows import to_row, write_instances
from aac.sandbox.pool import SandboxPool
from aac.sandbox.values import outputs_match, parse_input

SOURCE = '''
from typing import List
import math

NOTE = """a note to the author"""


def is_even_len(word: str) -> bool:
    """Secret helper doc."""
    return len(word) % 2 == 0


def count_words(sentence: str, min_len: int = 2) -> int:
    """Count the words of the sentence that pass the filter, recursively."""
    words: List[str] = sentence.split()
    if not words:
        return 0

    def keep(w):
        return len(w) >= min_len and is_even_len(w)
    head = 1 if keep(words[0]) else 0
    return head + count_words(" ".join(words[1:]))
'''


def identifiers(code: str) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.FunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.alias):
            names.add(node.asname or node.name)
    return names


def test_find_no_original_name_or_docstring_after_anonymising():
    anon = anonymize(SOURCE, "count_words")
    assert anon.header == "def test_func(arg0, arg1):"
    assert anon.params == ("sentence", "min_len")
    names = identifiers(anon.source)
    assert not names & {"count_words", "is_even_len", "keep", "sentence", "min_len", "List", "NOTE"}
    assert {"test_func", "arg0", "arg1", "helper0", "helper1"} <= names
    for text in ("Secret helper doc", "Count the words", "a note to the author", "->", ": str"):
        assert text not in anon.source
    entry = ast.parse(anon.source).body[-1]
    assert entry.name == "test_func" and entry.args.defaults == []
    # the recursive call leaned on the stripped default: it now passes the default explicitly
    self_calls = [n for n in ast.walk(entry)
                  if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "test_func"]
    assert [len(c.args) for c in self_calls] == [2] and ast.unparse(self_calls[0].args[1]) == "2"


# a LeetCode-style module: the usual preamble of node classes and converters, none of which the
# entry uses, and the helpers it does use: `shrink` only through another helper (`biggest`), `wrap`
# only through a method of a class the entry uses
PREAMBLE = """
import heapq
from collections import Counter, deque

MOD = 10 ** 9 + 7
LIMIT = 3


class ListNode:
    def __init__(self, val=0, next=None):
        self.val = val
        self.next = next


class TreeNode:
    def __init__(self, val=0, left=None, right=None):
        self.val, self.left, self.right = val, left, right


def build_list(values):
    head = tail = ListNode()
    for v in values:
        tail.next = ListNode(v)
        tail = tail.next
    return head.next


def tree_height(root):
    if root is None:
        return 0
    return 1 + max(tree_height(root.left), tree_height(root.right))


def wrap(x):
    return x % MOD if x >= 0 else -(-x % MOD)


def shrink(x):
    return x - 1 if x > 10 else x


def biggest(xs, k):
    return heapq.nlargest(k, [shrink(x) for x in xs])


class Scorer:
    def score(self, x):
        return wrap(x * 2)


def top_scores(nums, k):
    if not nums:
        return []
    scorer = Scorer()
    return [scorer.score(x) for x in biggest(nums, k)]
"""


def test_only_the_code_the_entry_reaches_is_kept(sandbox):
    anon = anonymize(PREAMBLE, "top_scores")
    names = identifiers(anon.source)
    assert not names & {"ListNode", "TreeNode", "build_list", "tree_height", "Counter", "deque", "LIMIT"}
    assert {"heapq", "MOD", "Scorer", "score"} <= names
    assert "class TreeNode" in anon.unreached and "def tree_height" in anon.unreached and "wrap" not in anon.unreached
    # wrap, shrink and biggest, numbered densely: the dropped helpers took no number
    assert {n for n in names if n.startswith("helper")} == {"helper0", "helper1", "helper2"}
    namespace: dict = {}
    exec(PREAMBLE, namespace)  # the test's own source: trusted
    for args in ([5, 20, 3], 2), ([-4, 11], 1):
        code = with_validator(anon, validator_source(infer_types([args])))
        assert sandbox.call(code, repr(args)).output == namespace["top_scores"](*args)


def test_anonymised_code_still_computes_the_same(sandbox):
    anon = anonymize(SOURCE, "count_words")
    code = with_validator(anon, validator_source(infer_types([("ab cd", 2)])))
    first = ast.parse(code).body[-1].body[0]
    assert ast.unparse(first) == "validate_input_args(arg0, arg1)"
    # ab and cd pass (even length >= 2), efg does not
    assert sandbox.call(code, "('ab cd efg', 2)").output == 2
    # as in the original, only the first word sees min_len=5: the recursion runs with the default 2
    assert sandbox.call(code, "('ab abcd', 5)").output == 1


@pytest.mark.parametrize("code, reason", [
    ("import os\ndef f(x):\n    return x", "unsafe import"),
    ("from subprocess import run\ndef f(x):\n    return x", "unsafe import"),
    ("def f(x):\n    import shutil as s\n    return x", "unsafe import"),
    ("import os.path\ndef f(x):\n    return x", "unsafe import"),
    ("def f(x):\n    return eval(x)", "unsafe builtin"),
    ("def f(x):\n    return open(x).read()", "unsafe builtin"),
    ("def f():\n    return 1", "no arguments"),
    ("def f(key=None):\n    return key(1)", "no arguments"),  # a function to call is no literal: fixed at None
    ("def g(x):\n    return x", "no entry function"),
    ("def f(x:\n", "syntax error"),
])
def test_unusable_code_is_rejected_with_a_reason(code, reason):
    with pytest.raises(RejectedCode) as err:
        anonymize(code, "f")
    assert err.value.reason == reason


def test_every_humaneval_function_is_anonymised():
    tasks = [t for t in read_tasks("humaneval") if not isinstance(t, tuple)]
    assert len(tasks) == 164
    kept = 0
    for task in tasks:
        try:
            anon = anonymize(task.code, task.entry_point)
        except RejectedCode as e:
            assert e.reason == "unsafe builtin"  # HumanEval/160 evaluates a built expression
            continue
        kept += 1
        tree = ast.parse(anon.source)
        entry = tree.body[-1]
        assert entry.name == "test_func" and anon.header.startswith("def test_func(arg0")
        assert task.entry_point not in identifiers(anon.source), task.task_id
        assert not set(anon.params) & identifiers(ast.unparse(entry)), task.task_id
        assert not [n for n in ast.walk(tree)
                    if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)]
        doc = next(ast.get_docstring(n) or "" for n in ast.walk(ast.parse(task.code))
                   if isinstance(n, ast.FunctionDef) and n.name == task.entry_point)
        for line in doc.splitlines():
            assert len(line.strip()) < 12 or line.strip() not in anon.source, task.task_id
    assert kept == 163


@pytest.mark.parametrize("args", [(1,), ([1, 2],), ((1, 2),), ({"a": 1}, "x"), ([[1]], -3, 2.5, None, True),
                                  ({1, 2},), ("",), ({(1, 2): [3]},)])
def test_pau_argument_rule_round_trip(args):
    text = render(args)
    assert text is not None and text.startswith("(") and text.endswith(")")
    assert same_value(parse_input(text), args)  # the release's rule: a tuple literal spreads exactly
    assert len(parse_input(text)) == len(args)


def test_single_list_argument_is_written_as_a_one_tuple():
    assert render(([1, 2],)) == "([1, 2],)"
    assert parse_input("[1, 2]") == (1, 2)  # the bare list would have been spread into two args


@pytest.mark.parametrize("args", [(float("inf"),), (float("nan"),), (object(),), ("x" * 400,)])
def test_values_without_an_exact_literal_are_not_rendered(args):
    assert render(args) is None


def test_mutations_are_seeded_and_keep_arity_and_types():
    seeds = [([1.0, 2.5], 3, "Ab c"), ([], 0, "")]

    def run(seed):
        m = Mutator(random.Random(seed), code_constants("def f(x):\n    return x == '+' or x > 10\n"))
        return m.candidates(seeds, 60, set())

    a, b = run(7), run(7)
    assert a == b and a != run(8) and len(a) == 60
    for text, args in a:
        assert parse_input(text) == args and len(args) == 3
        assert [type(x) for x in args] == [list, int, str]
    assert any("+" in args[2] for _, args in a)  # the code's own string constants are used


def test_validator_rejects_ill_typed_inputs(sandbox):
    types = infer_types([([1, 2], "a"), ([3], "bc"), ([], "")])
    anon = anonymize("def f(xs, s):\n    return len(xs) + len(s)", "f")
    code = with_validator(anon, validator_source(types))
    assert sandbox.call(code, "([1, 2], 'a')").output == 3
    for bad, error in [("('x', 'a')", "TypeError"), ("([1, 'x'], 'a')", "ValueError"),
                       ("([1], 3)", "TypeError"), ("([True], 'a')", "ValueError")]:
        assert sandbox.call(code, bad).error.startswith(error), bad


def test_description_drops_examples_and_the_function_name():
    doc = ("count_vowels takes a word and returns its number of vowels.\nY counts only at the end.\n\n"
           "Example:\n>>> count_vowels('abc')\n1\n")
    assert clean_description(doc, "count_vowels") == \
        "test_func takes a word and returns its number of vowels. Y counts only at the end."
    long = " ".join(["This is one sentence of seven words."] * 20)
    short = clean_description(long, "f")
    assert short.endswith(".") and len(short.split()) <= 75


def test_branch_coverage_per_input_matches_coverage_py(tmp_path):
    import coverage

    source = ("def test_func(arg0):\n    if arg0 > 0:\n        return 1\n    for i in range(arg0, 0):\n"
              "        if i == -2:\n            break\n    return 2\n")
    inputs = ["(1,)", "(-1,)", "(-3,)", "(0,)"]
    with CoverageRunner(call_timeout_s=1.0) as runner:
        report = runner.measure(source, inputs)
        hang = runner.measure("def test_func(arg0):\n    while True:\n        pass\n", ["(1,)"])
    assert report.error is None and all(a is not None for a in report.per_input)
    # the same trusted function traced in-process by coverage.py's own analysis
    path = tmp_path / "fn.py"
    path.write_text(source)
    cov = coverage.Coverage(data_file=None, branch=True, include=[str(path)], config_file=False)
    namespace: dict = {}
    cov.start()
    exec(compile(source, str(path), "exec"), namespace)
    for text in inputs[:2]:
        namespace["test_func"](*ast.literal_eval(text))
    cov.stop()
    stats = cov.branch_stats(str(path))
    expected = sum(taken for _, taken in stats.values()) / sum(total for total, _ in stats.values())
    assert report.coverage(report.per_input[:2]) == pytest.approx(expected)
    assert report.coverage(report.per_input) == 1.0 > expected
    assert hang.per_input == [None]


def test_split_is_seeded_and_disjoint():
    class Row:
        def __init__(self, uid):
            self.uid = uid

    rows = [Row(f"t/{i}") for i in range(50)]
    a, b = split_instances(rows), split_instances(list(reversed(rows)))
    assert {r.uid for r in a["test"]} == {r.uid for r in b["test"]}  # independent of the build order
    assert len(a["test"]) == 10 and not {r.uid for r in a["test"]} & {r.uid for r in a["train"]}
    assert {r.uid for r in split_instances(rows, seed=1)["test"]} != {r.uid for r in a["test"]}


# ---------------------------------------------------------------- whole builds (sandbox)

@pytest.fixture(scope="module")
def sandbox():
    with SandboxPool(workers=2) as pool:
        yield pool


def check_rows(path, sandbox) -> list:
    rows = [json.loads(line) for line in open(path)]
    assert rows
    for row in rows:
        # the published schema, and the privileged mutants column beside it (aac/data/mutants.py)
        assert set(row) == {*PAU_COLUMNS, "task_id", "source", "domain", "mutants"} and row["domain"] == "pau"
        assert all(isinstance(v, str) for v in row.values())
    instances = load_instances(path, on_bad_row="raise")
    jobs = []
    for inst in instances:
        arity = inst.header.count("arg")
        assert inst.header == f"def test_func({', '.join(f'arg{i}' for i in range(arity))}):"
        assert len(inst.train_examples) == 2 and len(inst.test_examples) >= 4
        assert not outputs_match(inst.train_examples[0][1], inst.train_examples[1][1])
        assert inst.all_examples == [(i, o, None) for i, o in inst.train_examples]
        inputs = [i for i, _ in inst.train_examples + inst.test_examples]
        assert len(set(inputs)) == len(inputs)
        for text in inputs:
            assert len(parse_input(text)) == arity  # the PAU argument rule gives every parameter
        jobs += [(inst, i, o) for i, o in inst.train_examples + inst.test_examples]
    results = sandbox.call_many([(inst.code, i) for inst, i, _ in jobs], timeout_s=5.0)
    bad = [(inst.uid, i) for (inst, i, o), r in zip(jobs, results)
           if not (r.ok and outputs_match(o, r.normalized))]
    assert not bad, bad[:5]
    # schema round trip: written again, the rows read back unchanged
    again = write_instances(path.with_name("again.jsonl"), instances)
    assert [json.loads(line) for line in open(again)] == rows
    return instances


@pytest.fixture(scope="module")
def humaneval_build(tmp_path_factory, run_module):
    out = tmp_path_factory.mktemp("he") / "he.jsonl"
    summary = out.with_name("summary.json")
    start = time.monotonic()
    proc = run_module("aac.data.build", "source=humaneval", f"out={out}", "limit=12", f"summary_json={summary}")
    assert proc.returncode == 0, proc.stderr
    return out, json.loads(summary.read_text()), proc.stdout, time.monotonic() - start


def test_humaneval_build_summary(humaneval_build):
    _, summary, stdout, _ = humaneval_build
    assert "12 rows in" in stdout and "mean branch coverage" in stdout
    assert summary["rows_in"] == 12 and summary["rows_kept"] >= 11
    assert summary["mean_branch_coverage"] >= 0.9


def test_humaneval_rows_reproduce_and_hide_the_source(humaneval_build, sandbox):
    out, *_ = humaneval_build
    instances = check_rows(out, sandbox)
    tasks = {t.task_id: t for t in read_tasks("humaneval") if not isinstance(t, tuple)}
    for inst in instances:
        task = tasks[inst.uid]
        assert task.entry_point not in identifiers(inst.code)
        assert inst.source == "humaneval" and inst.description and ">>>" not in inst.description


@pytest.mark.parametrize("name, path", [("mbpp", "mbpp/sanitized-mbpp.json"),
                                        ("cruxeval", "cruxeval/cruxeval.jsonl")])
def test_shared_source_builds(name, path, tmp_path, sandbox):
    source = SHARED_SOURCES / path
    if not source.exists():
        pytest.skip(f"shared source {source} not present")
    instances, summary = build(f"{name}:{source}", limit=10)
    assert summary.rows_in == 10 and summary.rows_kept >= 7, summary.text()
    assert summary.mean_coverage >= 0.85
    write_instances(tmp_path / "rows.jsonl", instances)
    kept = check_rows(tmp_path / "rows.jsonl", sandbox)
    assert all(inst.source == name for inst in kept)
    if name == "cruxeval":
        assert all(inst.description == "" for inst in kept)  # CRUXEval has no task text
    else:
        assert all(inst.description for inst in kept)


def write_generic(path) -> None:
    rows = [
        {"task_id": "g/0", "code": "def clip(x, lo, hi):\n    '''Clip x.'''\n    if x < lo:\n"
         "        return lo\n    if x > hi:\n        return hi\n    return x\n", "entry_point": "clip",
         "inputs": ["(5, 0, 10)", "(-3, 0, 10)", "(12, 0, 10)"], "description": "Clamp x into [lo, hi]."},
        {"task_id": "g/1", "code": "import os\ndef f(p):\n    return os.listdir(p)\n", "entry_point": "f",
         "inputs": ["('.',)"]},
        {"task_id": "g/2", "entry_point": "shout",
         "code": "def shout(text: str, times: int) -> str:\n    return (text.upper() + '!') * times\n"},
        {"task_id": "g/3", "code": 42, "entry_point": "f"},
        {"task_id": "g/4", "entry_point": "abbreviate", "inputs": ["('Ada Lovelace',)", "('alan m turing',)"],
         "code": "def abbreviate(name):\n    '''Upper-case initials of a name.'''\n"
                 "    return ''.join(w[0].upper() for w in name.split())\n"},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_generic_jsonl_source(tmp_path, sandbox):
    src = tmp_path / "mine.jsonl"
    write_generic(src)
    instances, summary = build(f"jsonl:{src}")
    assert summary.rows_in == 5 and summary.rows_kept == 3
    assert summary.dropped == {"unsafe import": 1, "malformed row: 'code' is not a str": 1}  # the field named
    by_id = {i.uid: i for i in instances}
    assert by_id["g/0"].description == "Clamp x into [lo, hi]." and "Clip x" not in by_id["g/0"].code
    assert by_id["g/2"].description == ""  # no inputs and no description: seeds came from the annotations
    assert by_id["g/4"].description == "Upper-case initials of a name."  # the docstring, when no description
    assert "Upper-case" not in by_id["g/4"].code
    write_instances(tmp_path / "out.jsonl", instances)
    check_rows(tmp_path / "out.jsonl", sandbox)
    again, _ = build(f"jsonl:{src}")
    assert [to_row(i) for i in again] == [to_row(i) for i in instances]  # seeded: the same rows
    other, _ = build(f"jsonl:{src}", cfg=BuildConfig(seed=1))
    assert [i.test_examples for i in other] != [i.test_examples for i in instances]


def test_built_rows_leave_unreached_helpers_out_of_code_and_coverage(tmp_path):
    src = tmp_path / "leetcode_style.jsonl"
    src.write_text(json.dumps({"task_id": "l/0", "code": PREAMBLE, "entry_point": "top_scores",
                               "inputs": ["([5, 20, 3], 2)", "([-4, 11], 1)", "([], 3)"]}) + "\n")
    (row,), summary = build(f"jsonl:{src}", cfg=BuildConfig(workers=1))
    assert "ListNode" not in row.code and "TreeNode" not in row.code and "Scorer" in row.code
    # the dropped helpers' branches (the loop of build_list, the test of tree_height) are no arcs to
    # miss: kept, they made it 2 of 6 arcs (0.33)
    assert summary.coverages == [1.0]


def test_cli_reports_bad_sources_in_one_line(run_module, tmp_path):
    proc = run_module("aac.data.build", "source=nope:x", f"out={tmp_path / 'o.jsonl'}")
    assert proc.returncode == 1 and proc.stderr.strip().startswith("aac: bad source: unknown source 'nope'")
    proc = run_module("aac.data.build", "source=mbpp", f"out={tmp_path / 'o.jsonl'}")
    assert proc.returncode == 1 and "needs a file" in proc.stderr
    assert not (tmp_path / "o.jsonl").exists()


def test_builtin_path_builds_once_with_a_split(tmp_path, monkeypatch):
    src = tmp_path / "mine.jsonl"
    write_generic(src)
    monkeypatch.setenv("AAC_HOME", str(tmp_path / "home"))
    monkeypatch.setitem(builtin_mod.BUILTINS, "tiny", f"jsonl:{src}")
    train = builtin_path("tiny", "train")
    test = builtin_path("tiny", "test")
    assert train == tmp_path / "home" / "data" / "tiny" / "train.jsonl" and test.parent == train.parent
    meta = json.loads((train.parent / "meta.json").read_text())
    assert meta["build_version"] == builtin_mod.BUILD_VERSION and meta["rows_kept"] == 3
    ids = [i.uid for i in load_instances(train)]
    ids += [i.uid for i in load_any("builtin:tiny", split="test")]
    assert sorted(ids) == ["g/0", "g/2", "g/4"]
    stamp = train.stat().st_mtime_ns
    assert builtin_path("tiny", "train") == train and train.stat().st_mtime_ns == stamp  # built once
    assert not [p for p in train.parent.parent.iterdir() if p.name.startswith(".tiny-")]  # no temp left
    (train.parent / "meta.json").write_text(json.dumps({**meta, "build_version": 0}))  # an older builder's
    assert builtin_path("tiny", "test") == test and train.stat().st_mtime_ns != stamp
    meta = json.loads((train.parent / "meta.json").read_text())
    assert meta["build_version"] == builtin_mod.BUILD_VERSION and meta["mutants"]["version"] == MUTANTS_VERSION
    # a set built before the mutants (or under an older version of them) gets them in place: no rebuild
    rows = train.read_text().splitlines()
    train.write_text("".join(json.dumps({k: v for k, v in json.loads(r).items() if k != "mutants"}, ensure_ascii=False)
                             + "\n" for r in rows))
    (train.parent / "meta.json").write_text(json.dumps({**meta, "mutants": {"version": 0}}))
    assert builtin_path("tiny", "test") == test and train.read_text().splitlines() == rows
    assert json.loads((train.parent / "meta.json").read_text())["mutants"]["version"] == MUTANTS_VERSION
    assert any(json.loads(json.loads(r)["mutants"]) for r in rows)  # clip's bounds, at least
    with pytest.raises(ValueError, match="unknown builtin dataset"):
        builtin_path("nope", "train")
    with pytest.raises(ValueError, match="splits"):
        builtin_path("tiny", "validation")


def test_build_config_defaults_fit_code_match():
    cfg = BuildConfig()
    assert cfg.max_call_s < 0.5 and cfg.min_tests == 4 and cfg.call_timeout_s <= 0.5


# ---------------------------------------------------------------- training sources, search, pau_like

def test_codealpaca_answers_give_the_function_its_demo_inputs_and_the_instruction(tmp_path):
    from aac.data.sources import demo_entry, input_field_calls, python_block

    answer = ("Here you go:\n```python\ndef helper(x):\n    return x * 2\n\ndef double_all(xs):\n"
              "    return [helper(x) for x in xs]\n\nnums = [1, 2, 3]\nprint(double_all(nums))\n```\nDone.")
    code = python_block(answer)
    assert code.startswith("def helper") and demo_entry(code) == "double_all"
    assert demo_entry("def a(x):\n    return b(x)\ndef b(x):\n    return x\n") == "a"  # the one nobody calls
    assert [c.args for c in input_field_calls("Number: 2\nPower: 4")] == [(2, 4)]
    assert [c.args for c in input_field_calls("[12, 15, 3]")] == [([12, 15, 3],), ([12, 15, 3],)]
    assert input_field_calls("a sentence with no literal") == []
    rows = [{"instruction": "Double every number of a list.", "input": "", "output": answer},
            {"instruction": "Print hello.", "input": "", "output": "console.log('hello')"}]
    (tmp_path / "ca.json").write_text(json.dumps(rows))
    got = list(read_tasks(f"codealpaca:{tmp_path}"))
    assert got[1] == ("codealpaca/ca/1", "no python function")
    task = got[0]
    assert task.entry_point == "double_all" and [c.args for c in task.seeds] == [([1, 2, 3],)]
    assert task.description == "Double every number of a list."
    # the demo lines that call the function are gone (they would run before test_func exists)
    anon = anonymize(task.code, task.entry_point)
    assert "print" not in anon.source and "nums" not in anon.source


@pytest.mark.skipif(not (SHARED_SOURCES / "mbpp").is_dir(), reason="shared MBPP copy not present")
def test_mbpp_train_and_test_ids_are_the_readme_split():
    train = [t for t in read_tasks(f"mbpp_train:{SHARED_SOURCES}/mbpp/mbpp.jsonl")]
    test = [t for t in read_tasks(f"mbpp_test:{SHARED_SOURCES}/mbpp/sanitized-mbpp.json")]
    ids = lambda ts: {int((t.task_id if not isinstance(t, tuple) else t[0]).split("/")[1]) for t in ts}  # noqa: E731
    assert len(train) == 474 and len(test) == 257
    assert all(11 <= i <= 510 for i in ids(test)) and not any(11 <= i <= 510 for i in ids(train))


def test_shape_search_is_seeded_and_keeps_the_shape():
    from aac.data.search import InputSearch

    seeds = [([("a", 1), ("b", 2)], 3)]
    one = InputSearch(seeds, ["x"]).draw(20, 7, set())
    assert [t for t, _ in one] == [t for t, _ in InputSearch(seeds, ["x"]).draw(20, 7, set())]
    assert [t for t, _ in one] != [t for t, _ in InputSearch(seeds, ["x"]).draw(20, 8, set())]
    assert len(one) == 20
    for _, (pairs, n) in one:
        assert type(n) is int and all(type(p) is tuple and len(p) == 2 and type(p[0]) is str
                                      and type(p[1]) is int for p in pairs)


def test_draws_do_not_follow_the_literals_of_loaded_modules():
    """Hypothesis would mix the literals of every loaded local module (aac's own) into its draws:
    then an edit anywhere in aac would change the rows a build makes."""
    from hypothesis.internal.conjecture import providers

    from aac.data.search import InputSearch, probe_calls

    def draws():
        return probe_calls(2, 200, seed=3), InputSearch([("abc", 5), ("hello", 2)], ["x", 3]).draw(200, 5, set())

    before = draws()
    local = providers._get_local_constants()  # as if a module with these literals had been loaded
    for v in range(-10, 60):
        local.integers.add(v)
    for text in ("zq", "hello world!", "abcabc"):
        local.strings.add(text)
    providers.CONSTANTS_CACHE.cache.clear()
    assert draws() == before


NEEDS_SHAPE = ("def f(xs):\n    if len(xs) >= 7 and xs == sorted(xs):\n        return 'long and sorted'\n"
               "    if len(xs) > 3:\n        return 'long'\n    return 'short'\n")
NO_INPUTS = "def g(a, b):\n    if a > b:\n        return a - b\n    return b - a\n"


def test_search_and_probes_raise_coverage_and_rows(tmp_path):
    src = tmp_path / "hard.jsonl"
    rows = [{"task_id": "h/0", "code": NEEDS_SHAPE, "entry_point": "f", "inputs": ["([3, 1, 2],)", "([5],)"]},
            {"task_id": "h/1", "code": NO_INPUTS, "entry_point": "g"},
            {"task_id": "h/2", "code": NO_INPUTS.replace("def g(a, b)", "def other(x, y)").replace("a", "x")
             .replace("b", "y"), "entry_point": "other"}]  # g under other names: a duplicate
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    cfg = BuildConfig(workers=1)
    full, summary = build(f"jsonl:{src}", cfg=cfg)
    assert [i.uid for i in full] == ["h/0", "h/1"] and summary.dropped == {"duplicate function": 1}
    assert summary.coverages == [1.0, 1.0]
    plain, summary = build(f"jsonl:{src}", cfg=BuildConfig(workers=1, search_budget=0, probe_budget=0,
                                                            target_budget=0))
    assert [i.uid for i in plain] == ["h/0"] and summary.dropped["no literal test inputs"] == 1
    assert summary.coverages[0] < 1.0  # mutation alone never grows a sorted list to 7 items


def test_a_source_split_keeps_test_functions_out_of_train(tmp_path, monkeypatch):
    clip = "def clip(x, lo, hi):\n    if x < lo:\n        return lo\n    if x > hi:\n        return hi\n    return x\n"
    test_rows = [{"task_id": "t/0", "code": clip, "entry_point": "clip", "inputs": ["(5, 0, 10)", "(-3, 0, 10)"]}]
    train_rows = [{"task_id": "r/0", "code": clip.replace("clip", "bound").replace("lo", "low"),
                   "entry_point": "bound", "inputs": ["(1, 0, 3)"]},  # the test function, renamed
                  {"task_id": "r/1", "code": "def twice(s):\n    return s + s\n", "entry_point": "twice",
                   "inputs": ["('ab',)", "('',)"]}]
    for name, rows in (("test", test_rows), ("train", train_rows)):
        (tmp_path / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    monkeypatch.setenv("AAC_SOURCES", str(tmp_path))
    recipe = builtin_mod.SourceSplit(train=("jsonl:{sources}/train.jsonl",), test=("jsonl:{sources}/test.jsonl",))
    splits, summaries = builtin_mod.build_split(recipe, BuildConfig(workers=1))
    assert [i.uid for i in splits["test"]] == ["t/0"] and [i.uid for i in splits["train"]] == ["r/1"]
    assert summaries[1].dropped["duplicate function"] == 1


@pytest.mark.skipif(not SHARED_SOURCES.is_dir(), reason="shared sources not present")
def test_pau_like_train_functions_are_disjoint_from_its_test_functions():
    """By the builder's own fingerprints (normalised sources) over every source of the split."""
    from aac.data.anonymize import fingerprint

    recipe = builtin_mod.BUILTINS["pau_like"]
    specs = lambda names: [s.format(sources=SHARED_SOURCES) for s in names]  # noqa: E731
    test = set().union(*(fingerprints(s) for s in specs(recipe.test)))
    train = [fingerprint(t.code, t.entry_point) for s in specs(recipe.train) for t in read_tasks(s)
             if not isinstance(t, tuple)]
    assert set(train) & test, "the raw sources share functions: the split must drop them"
    # what build_split does: the train builds exclude every test fingerprint
    kept = [f for f in train if f not in test]
    assert len(kept) < len(train) and not set(kept) & test


# each branch opens only for a value the condition names: a non-ASCII numeric character (not a
# digit), a length of 17, a list holding the code's sentinel; seeds and their mutations miss all three
NEEDS_TARGETS = ("def f(s, xs):\n    if s.isnumeric() and not s.isdigit():\n        return 'fraction'\n"
                 "    if len(s) == 17:\n        return 'seventeen'\n    if -999 in xs:\n        return 'sentinel'\n"
                 "    return s[:2] + str(len(xs))\n")


def test_targeted_search_reaches_branches_that_name_their_value(tmp_path):
    src = tmp_path / "targets.jsonl"
    src.write_text(json.dumps({"task_id": "t/0", "code": NEEDS_TARGETS, "entry_point": "f",
                               "inputs": ["('12', [1, 2])", "('ab', [3])", "('x', [])"]}) + "\n")
    cfg = BuildConfig(workers=1)
    (targeted,), summary = build(f"jsonl:{src}", cfg=cfg)
    assert summary.coverages == [1.0]
    assert {"fraction", "seventeen", "sentinel"} <= {o for _, o in targeted.test_examples}
    _, summary = build(f"jsonl:{src}", cfg=BuildConfig(workers=1, target_budget=0))
    assert summary.coverages[0] <= 0.75  # mutation and the shape search miss at least two of the three
