"""Inputs and outputs of calls to an untrusted function (docs/method.md §2-3).

- `parse_input` turns a proposed input string into call arguments: `ast.literal_eval` only, with
  size and bracket nesting bounded before the parser sees the text, then the PAU argument rule.
- `normalize` is the one output normalisation every comparison goes through (sandbox results,
  stored dataset outputs, code-match): a value and its JSON round trip or stored `repr` string
  normalise to the same JSON-able value. `outputs_match` compares two outputs through it.
- `safe_repr` is the bounded text a model sees; it never raises.

Standard library only: the sandbox worker loads this file by path.
"""

from __future__ import annotations

import ast
import json
import math
import re
from typing import Any


class InputParseError(ValueError):
    """The input is not an acceptable Python literal (too long, too deeply nested, or not a literal)."""


# ---------------------------------------------------------------- input parsing

_SCAN = re.compile(r"[()\[\]{}'\"#]")
# bodies of string literals, matched from just after the opening quote; unambiguous, so linear
_STRING_BODY = {
    "'": re.compile(r"(?:[^'\\\n]|\\.)*'", re.S),
    '"': re.compile(r'(?:[^"\\\n]|\\.)*"', re.S),
    "'''": re.compile(r"(?:[^'\\]|\\.|'(?!''))*'''", re.S),
    '"""': re.compile(r'(?:[^"\\]|\\.|"(?!""))*"""', re.S),
}


def _check_nesting(text: str, max_depth: int) -> None:
    """Raise InputParseError if brackets outside string literals nest deeper than max_depth."""
    if text.count("(") + text.count("[") + text.count("{") <= max_depth:
        return  # cannot be deeper: skip the scan (the common case)
    depth = 0
    pos = 0
    while True:
        m = _SCAN.search(text, pos)
        if m is None:
            return
        c = m.group()
        pos = m.end()
        if c in "([{":
            depth += 1
            if depth > max_depth:
                raise InputParseError(f"input nests deeper than {max_depth} levels")
        elif c in ")]}":
            depth -= 1
        elif c == "#":
            nl = text.find("\n", pos)
            pos = len(text) if nl < 0 else nl
        else:
            quote = c * 3 if text.startswith(c * 2, pos) else c
            body = _STRING_BODY[quote].match(text, pos + len(quote) - 1)
            if body is None:
                raise InputParseError("input is not a Python literal: unterminated string")
            pos = body.end()


def parse_literal(text: str, *, max_chars: int = 10000, max_depth: int = 50) -> Any:
    """`ast.literal_eval(text)` after bounding its length and nesting; InputParseError otherwise."""
    if not isinstance(text, str):
        raise InputParseError(f"input must be a str, got {type(text).__name__}")
    text = text.strip()
    if not text:
        raise InputParseError("input is empty")
    if len(text) > max_chars:
        raise InputParseError(f"input has {len(text)} characters, more than the limit of {max_chars}")
    _check_nesting(text, max_depth)
    try:
        return ast.literal_eval(text)
    except Exception as exc:  # SyntaxError, ValueError, RecursionError, MemoryError, ...
        msg = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
        raise InputParseError(f"input is not a Python literal: {msg}") from None


def parse_input(input_str: str, *, spread_list: bool = True, max_chars: int = 10000,
                max_depth: int = 50) -> tuple:
    """Call arguments for `input_str` (the PAU rule, docs/method.md §3).

    A tuple is spread into the arguments; a list too when `spread_list` (the release's rule:
    `"([1,2])"` calls `f(1, 2)`); anything else is one argument (`"([1, 2],)"` -> one list).
    """
    value = parse_literal(input_str, max_chars=max_chars, max_depth=max_depth)
    if type(value) is tuple or (spread_list and type(value) is list):
        return tuple(value)
    return (value,)


# ---------------------------------------------------------------- normalisation

_MAX_DEPTH = 100  # deeper structures are compared through their (bounded) repr
_MAX_PARSE_CHARS = 100_000  # longer strings are never parsed as stored reprs
_REPR_BUDGET = 1_000_000  # repr length used for values JSON cannot hold
_INT_BITS = 14_000  # ~4,200 digits: beyond Python's int<->str limit, such ints become hex strings
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+>")
# a stored repr that parses to one of these replaces the string; numbers, bools and None do not,
# so `str(n)` never equals `n`
_REPR_TYPES = (tuple, list, dict, set, frozenset, bytes, complex, str)
DIGEST_KEY = "__sha256__"


class _NotJson(Exception):
    pass


def _is(v: object, kind: type | tuple[type, ...]) -> bool:
    """isinstance by the real type, as json's C encoder checks (a `__class__` property cannot lie)."""
    return issubclass(type(v), kind)


def _int(v: int) -> Any:
    return v if v.bit_length() <= _INT_BITS else hex(v)


def _key(k: object, lenient: bool) -> str:
    """A dict key as `json.dumps` writes it; keys JSON refuses become canonical JSON text (lenient)."""
    if _is(k, str):
        return str.__str__(k)
    if k is True or k is False:
        return "true" if k else "false"
    if k is None:
        return "null"
    if _is(k, int):
        return str(_int(int.__int__(k)))
    if _is(k, float):
        k = float.__float__(k)
        if math.isnan(k):
            return "NaN"
        if math.isinf(k):
            return "Infinity" if k > 0 else "-Infinity"
        return repr(k)
    if not lenient:
        raise _NotJson
    return canonical_json(_convert(k, True, 0, set()))


def _sort_key(v: object) -> str:
    return canonical_json(v)


def _convert(v: object, lenient: bool, depth: int, path: set[int]) -> Any:
    """JSON-able form of v. Strict mode mirrors `json.dumps` (subclasses count) and raises _NotJson
    where it would fail; lenient mode handles literal values (`ast.literal_eval` results)."""
    t = type(v)
    if t is str or t is float or v is None or t is bool:  # exact types first: the common, fast case
        return v
    if t is int:
        return _int(v)
    if _is(v, str):
        return str.__str__(v)
    if _is(v, int):
        return _int(int.__int__(v))
    if _is(v, float):
        return float.__float__(v)
    container = _is(v, (list, tuple, dict)) or (lenient and _is(v, (set, frozenset)))
    if not container:
        if not lenient:
            raise _NotJson
        if t in (bytes, complex):
            return repr(v)
        return _ADDRESS.sub(">", safe_repr(v, 1000))  # e.g. Ellipsis from a "[...]" repr
    if depth >= _MAX_DEPTH or id(v) in path:
        raise _NotJson  # json.dumps: "Circular reference detected", or a RecursionError
    path.add(id(v))
    depth += 1
    if _is(v, dict):
        out: Any = {_key(k, lenient): _convert(x, lenient, depth, path) for k, x in dict.items(v)}
    elif _is(v, list):
        out = [_convert(x, lenient, depth, path) for x in list.__iter__(v)]
    elif _is(v, tuple):
        out = [_convert(x, lenient, depth, path) for x in tuple.__iter__(v)]
    else:
        out = sorted((_convert(x, lenient, depth, path) for x in v), key=_sort_key)
    path.discard(id(v))
    return out


def _parse_repr(text: str) -> Any:
    """The value a stored repr string stands for, or the string itself."""
    head = text.lstrip()[:1]
    if not head or head not in "([{'\"bBrRuUsf-+0123456789." or len(text) > _MAX_PARSE_CHARS:
        return _ADDRESS.sub(">", text)
    try:
        value = parse_literal(text, max_chars=_MAX_PARSE_CHARS, max_depth=_MAX_DEPTH)
    except InputParseError:
        return _ADDRESS.sub(">", text)
    if type(value) not in _REPR_TYPES:
        return text
    if type(value) is str:
        return value
    return _convert(value, True, 0, set())


def normalize(value: object) -> Any:
    """The one output normalisation (docs/method.md §2): a JSON-able value equal for `value`, its JSON round
    trip (tuples -> lists, dict keys -> str) and its stored `repr` string.

    - values `json.dumps` accepts become what `json.loads(json.dumps(value))` gives;
    - other values (sets, bytes, complex, tuple keys, objects, cycles) go through their `repr`:
      a repr that parses as a literal becomes that literal's JSON-able form (sets sorted, bytes and
      complex as their repr, odd dict keys as canonical JSON text), else it stays a string with
      memory addresses removed;
    - a top-level string that parses as a container, bytes, complex or quoted string is taken as a
      stored repr; digit strings, "True" or "None" stay strings.
    """
    if _is(value, str):
        return _parse_repr(str.__str__(value))
    try:
        return _convert(value, False, 0, set())
    except _NotJson:
        return _parse_repr(safe_repr(value, _REPR_BUDGET))


def canonical_json(value: object) -> str:
    """Compact, key-sorted JSON text of a normalised value (NaN/Infinity allowed)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _digest_form(v: object) -> Any:
    # integral floats hash like ints so a digest keeps `outputs_match`'s 1 == 1.0
    if type(v) is float and v.is_integer():
        return int(v)
    if type(v) is list:
        return [_digest_form(x) for x in v]
    if type(v) is dict:
        return {k: _digest_form(x) for k, x in v.items()}
    return v


def digest(normalized: object) -> dict[str, str]:
    """Stand-in for a normalised value too large to carry around; `outputs_match` understands it."""
    import hashlib  # here: keeps the sandbox worker's start-up short

    text = canonical_json(_digest_form(normalized))
    return {DIGEST_KEY: hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()}


def _is_digest(v: object) -> bool:
    return type(v) is dict and len(v) == 1 and DIGEST_KEY in v


def _equal(a: object, b: object) -> bool:
    ta, tb = type(a), type(b)
    if ta is bool or tb is bool or a is None or b is None:
        return ta is tb and a == b
    if ta in (int, float) and tb in (int, float):
        return a == b or (ta is float and tb is float and math.isnan(a) and math.isnan(b))
    if ta is not tb:
        return False
    if ta is list:
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b))
    if ta is dict:
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    return a == b


def outputs_match(a: object, b: object) -> bool:
    """Whether two outputs are equal after `normalize` (ints equal floats of the same value, bools
    are not numbers, NaN equals NaN). Either side may be a `digest` of a large output."""
    na, nb = normalize(a), normalize(b)
    if _is_digest(na) or _is_digest(nb):
        da = na if _is_digest(na) else digest(na)
        db = nb if _is_digest(nb) else digest(nb)
        return da == db
    return _equal(na, nb)


# ---------------------------------------------------------------- bounded repr

_SEQ = {list: ("[", "]", "[...]"), tuple: ("(", ")", "(...)"), set: ("{", "}", "{...}"),
        frozenset: ("frozenset({", "})", "frozenset(...)"), dict: ("{", "}", "{...}")}


class _Budget(Exception):
    pass


class _Writer:
    def __init__(self, limit: int):
        self.parts: list[str] = []
        self.left = limit

    def put(self, s: str) -> None:
        self.parts.append(s)
        self.left -= len(s)
        if self.left < 0:
            raise _Budget


def _type_name(v: object) -> str:
    try:
        return str.__str__(type(v).__name__)
    except Exception:
        return "object"


def _repr_into(v: object, w: _Writer, depth: int, path: set[int]) -> None:
    t = type(v)
    if t is str or t is bytes:
        w.put(repr(v[: w.left + 1]))  # a prefix is enough: the rest would be cut anyway
    elif t is int:
        try:
            w.put(repr(v))
        except ValueError:  # more digits than Python converts
            w.put(f"<int with {v.bit_length()} bits>")
    elif v is None or t in (bool, float, complex):
        w.put(repr(v))
    elif t in _SEQ:
        opening, closing, cycle = _SEQ[t]
        if not v:
            w.put({list: "[]", tuple: "()", set: "set()", frozenset: "frozenset()", dict: "{}"}[t])
            return
        if id(v) in path or depth >= _MAX_DEPTH:
            w.put(cycle)
            return
        path.add(id(v))
        w.put(opening)
        items = dict.items(v) if t is dict else v
        for i, item in enumerate(items):
            if i:
                w.put(", ")
            if t is dict:
                _repr_into(item[0], w, depth + 1, path)
                w.put(": ")
                _repr_into(item[1], w, depth + 1, path)
            else:
                _repr_into(item, w, depth + 1, path)
        if t is tuple and len(v) == 1:
            w.put(",")
        w.put(closing)
        path.discard(id(v))
    else:  # other types: their own repr (user code, run inside the sandbox), cut to size
        try:
            text = repr(v)
            text = str.__str__(text) if isinstance(text, str) else f"<unrepresentable {_type_name(v)} object>"
        except Exception:
            text = f"<unrepresentable {_type_name(v)} object>"
        w.put(text[: w.left + 1])


def safe_repr(value: object, max_chars: int) -> str:
    """`repr(value)` cut to at most `max_chars` characters (ending in "..." when cut).

    Never raises; builtin containers are walked with the budget, so a huge or self-referencing
    value costs O(max_chars), and an object whose `__repr__` fails shows as `<unrepresentable T object>`.
    """
    max_chars = max(int(max_chars), 3)
    w = _Writer(max_chars)
    try:
        _repr_into(value, w, 0, set())
    except _Budget:
        pass
    except KeyboardInterrupt:
        raise
    except BaseException:  # noqa: B036 - user code may raise anything, SystemExit included
        return f"<unrepresentable {_type_name(value)} object>"[:max_chars]
    return clip("".join(w.parts), max_chars)


def clip(text: str, max_chars: int) -> str:
    """`text` cut to at most `max_chars` characters, ending in "..." when cut (as `safe_repr` cuts)."""
    max_chars = max(int(max_chars), 3)
    return text if len(text) <= max_chars else text[: max_chars - 3] + "..."
