"""Input parsing (the PAU argument rule, bounds), the one output normalisation, and safe_repr."""

from __future__ import annotations

import json
import math
from collections import OrderedDict, namedtuple

import pytest

from aac.sandbox.values import (
    InputParseError,
    digest,
    normalize,
    outputs_match,
    parse_input,
    parse_literal,
    safe_repr,
)

# ---------------------------------------------------------------- the PAU argument rule


@pytest.mark.parametrize("text, spread_list, expected", [
    ("(3, 'ab')", True, (3, "ab")),  # a tuple is spread
    ("([1, 2],)", True, ([1, 2],)),  # one list argument
    ("([1,2])", True, (1, 2)),  # the release's rule: a list is spread too
    ("([1,2])", False, ([1, 2],)),  # ... unless spread_list is off
    ("[[1, 2]]", True, ([1, 2],)),
    ("5", True, (5,)),  # anything else is one argument
    ("'abc'", True, ("abc",)),
    ("{'a': 1}", True, ({"a": 1},)),
    ("{1, 2}", True, ({1, 2},)),
    ("()", True, ()),
    ("(None, True, -1.5, b'x', 1+2j)", True, (None, True, -1.5, b"x", 1 + 2j)),
    ("  (1, 2)\n", True, (1, 2)),
])
def test_pau_argument_rule(text, spread_list, expected):
    assert parse_input(text, spread_list=spread_list) == expected


def test_parse_error_is_a_value_error_with_one_line():
    with pytest.raises(ValueError) as info:
        parse_input("(1, 2")
    assert isinstance(info.value, InputParseError)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("text", [
    "__import__('os').system('true')",  # code, not a literal
    "f(1)",
    "[x for x in range(3)]",
    "1 if True else 2",
    "'a' * 3",
    "",
    "   ",
    "(1, 2",
    "'unterminated",
    "9" * 5000,  # more digits than Python converts
])
def test_non_literals_are_rejected(text):
    with pytest.raises(InputParseError):
        parse_input(text)


def test_non_string_input_is_rejected():
    with pytest.raises(InputParseError, match="must be a str"):
        parse_input(b"(1,)")  # type: ignore[arg-type]


def test_size_is_bounded_before_parsing():
    big = "(" + ", ".join(["1"] * 6000) + ")"
    with pytest.raises(InputParseError, match="characters"):
        parse_input(big, max_chars=10000)
    assert len(parse_input(big, max_chars=20000)) == 6000


def test_nesting_is_bounded_before_parsing():
    deep = "[" * 60 + "]" * 60
    with pytest.raises(InputParseError, match="deeper than 50"):
        parse_input(deep)
    assert parse_input("[" * 10 + "]" * 10, max_depth=10) == ([[[[[[[[[]]]]]]]]],)
    with pytest.raises(InputParseError, match="deeper"):
        parse_input("(" * 5000 + ")" * 5000, max_chars=20000)


def test_brackets_inside_strings_do_not_count_as_nesting():
    text = "('" + "(" * 100 + "', \"[[[[\", '''{{{''', r'\\'', # [[[[\n)"
    assert parse_input(text, max_depth=2) == ("(" * 100, "[[[[", "{{{", "\\'")


def test_pathological_expressions_fail_cleanly():
    for text in ("1+" * 4000 + "1", "-" * 5000 + "1", "not " * 2000 + "1"):
        with pytest.raises(InputParseError):
            parse_input(text)


def test_parse_literal_returns_the_value_unspread():
    assert parse_literal("[1, 2]") == [1, 2]
    assert parse_literal("(1,)") == (1,)


# ---------------------------------------------------------------- normalisation

VALUES = [
    None, True, False, 0, -7, 2.5, float("inf"), "text", "", [1, 2], (1, 2), (1, (2, [3, (4,)])),
    {"a": (1, 2)}, {1: "a", 2: [3]}, {1.5: 0, True: 1, None: 2}, [], (), {}, "O'Reilly \"q\"",
    [{"k": (None,)}], 10**30,
]


@pytest.mark.parametrize("value", VALUES, ids=repr)
def test_value_and_its_json_round_trip_normalise_the_same(value):
    stored = json.loads(json.dumps(value))
    assert normalize(value) == normalize(stored)
    assert outputs_match(value, stored)
    json.dumps(normalize(value))  # JSON-able


REPR_VALUES = [
    (1, 2), [1, (2, 3)], {1, 2, 3}, frozenset({"b", "a"}), {(1, 2): "x"}, {"a": {1, 2}}, b"bytes\x00",
    1 + 2j, [b"a", {3, 1}], {"k": (1,)}, "quoted string",
]


def _stable_id(value) -> str:
    """repr, with a set's items sorted: a set of strings prints in hash order, which differs between processes
    (pytest-xdist's workers must collect the same test ids)."""
    return "{" + ", ".join(sorted(map(repr, value))) + "}" if isinstance(value, (set, frozenset)) else repr(value)


@pytest.mark.parametrize("value", REPR_VALUES, ids=_stable_id)
def test_value_and_its_stored_repr_normalise_the_same(value):
    assert normalize(repr(value)) == normalize(value)
    assert outputs_match(repr(value), value)
    json.dumps(normalize(value))


def test_tuples_and_lists_match():
    assert normalize((1, (2, 3))) == [1, [2, 3]]
    assert outputs_match((1, 2), [1, 2])
    assert not outputs_match((1, 2), [2, 1])


def test_dict_keys_become_strings_as_json_writes_them():
    assert normalize({1: "a", 2.5: "b", False: "c", None: "d"}) == {"1": "a", "2.5": "b", "false": "c", "null": "d"}
    assert outputs_match({1: [1, 2]}, {"1": (1, 2)})
    assert normalize({(1, 2): 3}) == {"[1,2]": 3}  # keys JSON refuses: canonical JSON text


def test_sets_are_sorted_lists():
    assert normalize({3, 1, 2}) == [1, 2, 3]
    assert normalize({"b", "a", 1}) == normalize({1, "a", "b"})
    assert outputs_match({1, 2}, "{2, 1}")
    assert outputs_match({"x": {2, 1}}, {"x": [1, 2]})


def test_repr_strings_are_parsed_only_when_they_stand_for_a_non_scalar():
    assert normalize("[1, 2]") == [1, 2]
    assert normalize("'abc'") == "abc"
    assert normalize("5") == "5"  # str(n) is not n
    assert not outputs_match("5", 5)
    assert not outputs_match("True", True)
    assert not outputs_match("None", None)
    assert normalize("hello world") == "hello world"
    assert normalize("(1, ") == "(1, "


def test_numbers_bools_and_nan():
    assert outputs_match(2, 2.0)
    assert not outputs_match(1, True)
    assert not outputs_match(0, False)
    assert not outputs_match(None, 0)
    assert outputs_match(float("nan"), float("nan"))
    assert outputs_match([float("nan")], (float("nan"),))
    assert not outputs_match(1.5, 2)


def test_subclasses_normalise_as_json_would_write_them():
    point = namedtuple("Point", "x y")
    assert normalize(point(1, 2)) == [1, 2]
    assert normalize(OrderedDict(a=1)) == {"a": 1}

    class Name(str):
        pass

    assert normalize(Name("x")) == "x"


def test_objects_compare_by_repr_without_addresses():
    class Thing:
        pass

    a, b = normalize(Thing()), normalize(Thing())
    assert a == b and " at 0x" not in a
    assert normalize([Thing(), {1}]) == normalize([Thing(), {1}])
    assert normalize(Thing) == normalize(Thing)


def test_cycles_and_deep_nesting_do_not_break_normalize():
    loop: list = [1]
    loop.append(loop)
    assert json.dumps(normalize(loop))
    deep: list = []
    for _ in range(500):
        deep = [deep]
    assert json.dumps(normalize(deep))


def test_huge_ints_normalise_to_hex():
    big = 10**5000
    assert normalize(big) == hex(big)
    assert outputs_match(big, big)


def test_normalize_is_idempotent():
    for value in VALUES + REPR_VALUES + [float("nan")]:
        once = normalize(value)
        assert outputs_match(normalize(once), once)


def test_digest_stands_for_a_large_value():
    value = list(range(1000))
    d = digest(normalize(value))
    assert outputs_match(d, value)
    assert outputs_match(tuple(float(x) for x in value), d)  # 1.0 hashes like 1
    assert not outputs_match(d, value[:-1])


# ---------------------------------------------------------------- safe_repr


@pytest.mark.parametrize("value", [None, 1, -2.5, "a'b\"c\n", b"\x00b", (1,), (), [1, (2, 3)], {"a": [1]},
                                   {1, 2}, frozenset(), frozenset({1}), set(), {}, 1 + 2j, True],
                         ids=repr)
def test_safe_repr_is_repr_for_small_values(value):
    assert safe_repr(value, 1000) == repr(value)


def test_safe_repr_bounds_large_values():
    for value in ("x" * 10**6, list(range(10**5)), {i: i for i in range(10**5)}, b"y" * 10**6,
                  [[["deep"] * 100] * 100] * 100):
        text = safe_repr(value, 50)
        assert len(text) <= 50 and text.endswith("...")
    assert safe_repr("abc", 3) == "..."
    assert len(safe_repr([1, 2, 3], 1)) <= 3


def test_safe_repr_handles_self_references_and_deep_nesting():
    loop: list = [1]
    loop.append(loop)
    assert safe_repr(loop, 100) == "[1, [...]]"
    d: dict = {}
    d["d"] = d
    assert safe_repr(d, 100) == "{'d': {...}}"
    deep: list = []
    for _ in range(10000):
        deep = [deep]
    assert len(safe_repr(deep, 500)) <= 500


def test_safe_repr_never_raises():
    class Raises:
        def __repr__(self):
            raise RuntimeError("no")

    class Exits:
        def __repr__(self):
            raise SystemExit(1)

    class NotStr:
        def __repr__(self):
            return 5

    assert safe_repr(Raises(), 100) == "<unrepresentable Raises object>"
    assert safe_repr([Exits()], 100) == "<unrepresentable list object>"
    assert safe_repr(NotStr(), 100).startswith("<unrepresentable")
    assert safe_repr(10**100000, 100) == "<int with 332193 bits>"


def test_safe_repr_cuts_a_huge_custom_repr():
    class Big:
        def __repr__(self):
            return "z" * 10**6

    assert safe_repr(Big(), 20) == "z" * 17 + "..."
    assert math.isfinite(len(safe_repr(Big(), 20)))
