"""Inputs read from a function's body (aac/data/infer_params.py) and the builder's lifted limits, on
packages written for these tests the way in-house code is: docstrings, no doctests, no annotations."""

from __future__ import annotations

import ast
import json
import random
import textwrap

import pytest

from aac.data.anonymize import anonymize
from aac.data.build import rows_from_source
from aac.data.callgraph import keep_reachable
from aac.data.infer_params import guess_inputs, needs, read_shapes

# geometry and text helpers of an in-house library: tuple, list and mapping arguments, a parser
GEOMETRY = '''
"""Shapes and settings of the drawing tool."""

DEFAULT_UNIT = "px"


def distance(point, other):
    """Straight-line distance between two points (x, y), rounded to 2 decimals."""
    x, y = point
    ox, oy = other
    return round(((x - ox) ** 2 + (y - oy) ** 2) ** 0.5, 2)


def box_area(box):
    """Area of a box (xmin, ymin, xmax, ymax); an inverted box has no area."""
    if box[2] < box[0] or box[3] < box[1]:
        return 0
    return (box[2] - box[0]) * (box[3] - box[1])


def parse_settings(text):
    """Parse "key=value;key=value" settings into a dict (numbers become ints); a part without "="
    makes the whole text invalid (None); empty parts are skipped."""
    out = {}
    for part in text.split(";"):
        if not part.strip():
            continue
        key, sep, value = part.partition("=")
        if not sep:
            return None
        value = value.strip()
        out[key.strip()] = int(value) if value.isdigit() else value
    return out


def heaviest(pairs):
    """The name of the heaviest (name, weight) pair, ignoring weights of 0 or less; None for none."""
    best, top = None, 0
    for name, weight in pairs:
        if weight > top:
            best, top = name, weight
    return best


def unit_of(config, name):
    """The unit configured for a measure: config[name] when given, else config's "default", else px."""
    if name in config:
        return config[name]
    return config.get("default", DEFAULT_UNIT)
'''

# what the builder could not build before: keyword-only and variadic parameters, a sibling module
# imported as a namespace, a function reaching a big class of which it calls one method, a
# generator, a function changing its argument in place, a parameter it calls
LIMITS = {
    "__init__.py": "",
    "util.py": '''
        def clamp(x, lo, hi):
            """Clamp x into [lo, hi]."""
            return max(lo, min(hi, x))
        ''',
    "core.py": '''
        from acme_limits import util


        def clamp_all(values, *, lo=0, hi=10):
            """Clamp every value into [lo, hi]."""
            return [util.clamp(v, lo, hi) for v in values]


        def total(*prices):
            """The sum of the prices, negative ones counted as 0."""
            return sum(p if p > 0 else 0 for p in prices)


        def label(text, **options):
            """A label: the text, upper-cased when options say upper=True, with options' suffix."""
            return _render(text, **options)


        def _render(text, upper=False, suffix=""):
            if upper:
                text = text.upper()
            return text + suffix


        def running(values):
            """Running totals of the values."""
            acc = 0
            for v in values:
                acc += v
                yield acc


        def drop_negatives(values):
            """Remove the negative numbers from the list, in place."""
            for i in reversed(range(len(values))):
                if values[i] < 0:
                    del values[i]


        def order(values, key=None):
            """The values sorted, by key when one is given."""
            if key is None:
                return sorted(values)
            return sorted(values, key=key)


        class Ledger:
            """A ledger of which a function uses one method."""
''' + "".join(f'''
            def report_{i}(self, rows):
                return [str(r) * {i} for r in rows]
''' for i in range(700)) + '''
            def balance(self, amounts):
                return sum(amounts)


        def balance(amounts):
            """The balance of the amounts."""
            return Ledger().balance(amounts)
        ''',
}


def _package(root, name: str, files: dict[str, str]) -> None:
    for file, text in files.items():
        path = root / name / file
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())


@pytest.fixture(scope="module")
def packages(tmp_path_factory):
    root = tmp_path_factory.mktemp("inhouse")
    _package(root, "acme_geometry", {"__init__.py": GEOMETRY})
    _package(root, "acme_limits", LIMITS)
    with pytest.MonkeyPatch.context() as mp:
        mp.syspath_prepend(str(root))
        yield root


@pytest.fixture(scope="module")
def geometry(packages):
    instances, summary = rows_from_source("module:acme_geometry")
    return {i.uid.rsplit(".", 1)[1]: i for i in instances}, summary


def _shapes(name: str):
    anon = anonymize(GEOMETRY, name)
    return read_shapes(anon.source, anon.kinds)


def test_the_body_says_what_each_argument_is():
    point, other = _shapes("distance")
    assert (point.size, point.exact, other.size) == (2, True, 2)  # unpacked into 2 names
    (box,) = _shapes("box_area")
    assert box.size == 4 and not box.exact  # indexed up to [3]
    (text,) = _shapes("parse_settings")
    assert "str" in text.kinds and text.seps == [";"]
    part = text.pieces.any_item()  # each piece is partitioned on "=", its value turned into a number
    assert part.seps == ["="] and part.pieces.items[1].numeric_text == "int"
    (pairs,) = _shapes("heaviest")
    assert "seq" in pairs.kinds and pairs.item.size == 2 and "num" in pairs.item.items[1].kinds
    config, name = _shapes("unit_of")
    assert "map" in config.kinds and config.keys == ["default"] and name.member_of is config


@pytest.mark.parametrize("code, need", [
    ("def f(fn, xs):\n    return [fn(x) for x in xs]\n", "a function"),
    ("def f(xs, key):\n    return sorted(xs, key=key)\n", "a function"),  # with a default it would stay at it
    ("def f(fp):\n    return fp.read().split()\n", "a file or stream"),
    ("def f(p):\n    return p.x + p.y\n", "an object (it reads attributes of it)"),
    ("def f(text):\n    return text.split()\n", None),
])
def test_a_parameter_no_literal_can_be_is_named(code, need):
    anon = anonymize(code, "f")
    assert needs(read_shapes(anon.source, anon.kinds), {}) == need


def test_guesses_hold_the_shape_the_code_accepts_and_near_misses_it_rejects():
    guesses = guess_inputs(_shapes("parse_settings"), {}, random.Random(0))
    texts = [g[0] for g in guesses]
    assert all(isinstance(t, str) for t in texts)
    assert any(t.count("=") >= 2 and ";" in t for t in texts)  # several key=value parts
    assert any(t and "=" not in t for t in texts)  # a part without "=": rejected
    boxes = [g[0] for g in guess_inputs(_shapes("box_area"), {}, random.Random(0))]
    assert any(len(b) == 4 and b[2] < b[0] for b in boxes) and any(len(b) == 4 and b[2] > b[0] for b in boxes)
    configs = guess_inputs(_shapes("unit_of"), {}, random.Random(0))
    assert any(name in config for config, name in configs) and any(name not in config for config, name in configs)


@pytest.mark.parametrize("name", ["distance", "box_area", "parse_settings", "heaviest", "unit_of"])
def test_inhouse_functions_build_with_distinct_outputs_and_their_branches_covered(geometry, name):
    rows, summary = geometry
    assert name in rows, dict(summary.dropped)
    row = rows[name]
    outputs = {json.dumps(o, sort_keys=True) for _, o in row.train_examples + row.test_examples}
    assert len(outputs) >= 2 and len(row.test_examples) >= 4
    assert summary.rows_kept == 5 and summary.coverages == [1.0] * 5  # every branch of every function


def test_a_parser_keeps_inputs_it_accepts_and_inputs_it_rejects(geometry):
    row = geometry[0]["parse_settings"]
    outputs = [o for _, o in row.train_examples + row.test_examples]
    assert None in outputs and any(isinstance(o, dict) and len(o) >= 2 for o in outputs)


@pytest.fixture(scope="module")
def limits(packages):
    instances, summary = rows_from_source("module:acme_limits")
    return {i.uid.rsplit(".", 1)[1]: i for i in instances}, summary


def test_keyword_only_and_variadic_parameters_become_arguments(limits):
    rows, summary = limits
    assert {"clamp_all", "total", "label"} <= set(rows), dict(summary.dropped)
    assert rows["clamp_all"].header == "def test_func(arg0, arg1, arg2):"  # values, lo, hi
    assert rows["total"].header == "def test_func(arg0):"  # *prices: one argument holding a tuple
    assert "arg0 = tuple(arg0)" in rows["total"].code
    inputs = [i for i, _ in rows["label"].train_examples + rows["label"].test_examples]
    assert any("'upper': True" in i for i in inputs) and any("'suffix'" in i for i in inputs)  # **options: _render's keywords


def test_a_sibling_module_imported_as_a_namespace_is_inlined(limits):
    code = limits[0]["clamp_all"].code
    assert "util" not in code and "def helper0(x, lo, hi)" in code


def test_reach_counts_the_methods_a_function_can_call(limits):
    rows, summary = limits
    code = rows["balance"].code
    assert "report_" not in code and "def balance(self, amounts)" in code and len(code) < 1000
    assert len(LIMITS["core.py"]) > 50_000  # the module as written is over the limit: what balance reaches is not


def test_generators_and_in_place_changes_show_as_outputs_and_called_parameters_stay_at_their_default(limits):
    rows, _ = limits
    assert any(o == [1, 3, 6] or (isinstance(o, list) and len(o) > 1) for _, o in rows["running"].test_examples)
    changed = rows["drop_negatives"].test_examples + rows["drop_negatives"].train_examples
    assert all(o == [v for v in ast.literal_eval(i)[0] if v >= 0] for i, o in changed)  # the list after the call
    assert any(o != ast.literal_eval(i)[0] for i, o in changed)
    assert rows["order"].header == "def test_func(arg0):" and "const0=None" in rows["order"].code


def test_methods_stay_for_a_class_entry_and_for_dynamic_lookups():
    source = "class A:\n    def used(self):\n        return 1\n    def other(self):\n        return 2\n" \
             "def entry(x):\n    return A().used()\n"
    kept = ast_text(keep_reachable(_parse(source), {"entry"}, methods=True))
    assert "def used" in kept and "def other" not in kept
    assert "def other" in ast_text(keep_reachable(_parse(source), {"entry"}))  # a class's interface: all kept
    dynamic = source.replace("A().used()", "getattr(A(), x)()")
    assert "def other" in ast_text(keep_reachable(_parse(dynamic), {"entry"}, methods=True))


def _parse(source: str) -> list:
    return ast.parse(source).body


def ast_text(body: list) -> str:
    return ast.unparse(ast.Module(body=body, type_ignores=[]))
