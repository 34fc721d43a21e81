"""Inputs for the data builder: rendering argument tuples as PAU input literals, type-aware
mutation of seed inputs (seeded), and the input validator inferred from the observed types.

Nothing here runs source code; values are plain Python literals.
"""

from __future__ import annotations

import ast
import math
import random
import string
from collections.abc import Iterable
from dataclasses import dataclass

from aac.data.anonymize import parse_quietly

MAX_INPUT_CHARS = 300  # longer inputs make poor examples for a prompt of a small model
_MAX_INT = 10**6  # mutations stay in a range a test function answers quickly
_MAX_LEN = 40
_CHARS = string.ascii_letters + string.digits + " _-.,!?()éÄß"
# an empty seed says nothing about what goes inside: try a few small fillings of common types
_FILL_STR = ["a", "ab", "Hello World", "123", " ", "a1B2", "é"]
_FILL_SEQ = [[0], [1, 2], [3, -1, 3], ["a"], ["a", "bc"]]
_FILL_DICT = [{"a": 1}, {1: "a"}, {"x": "y", "z": "w"}, {1: 2, 3: 4}]


def render(args: tuple) -> str | None:
    """The PAU input string `(a, b)` / `(a,)` of an argument tuple; None when the tuple has a value
    `ast.literal_eval` cannot rebuild exactly (objects, `set()`, inf, nan) or is too long."""
    text = repr(tuple(args))
    if len(text) > MAX_INPUT_CHARS:
        return None
    try:
        back = ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    return text if same_value(back, tuple(args)) else None


def same_value(a, b) -> bool:
    """Equality that also requires equal types throughout (so 1, 1.0 and True differ)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(same_value(a[k], b[k]) for k in a)
    if isinstance(a, float) and math.isnan(a):
        return False
    return a == b


# ---------------------------------------------------------------- mutation

def code_constants(source: str, limit: int = 24) -> list:
    """Short string and number literals of the code: the values its comparisons and lookups test
    (`'+'`, `'.'`, `10`), the usual dictionary of a mutation fuzzer."""
    found: dict = {}
    for node in ast.walk(parse_quietly(source)):
        v = getattr(node, "value", None) if isinstance(node, ast.Constant) else None
        if (type(v) is str and 0 < len(v) <= 12) or (type(v) in (int, float) and abs(v) <= _MAX_INT):
            found.setdefault((type(v), v), v)
    return list(found.values())[:limit]


class Mutator:
    """Seeded, type-preserving mutation of argument tuples (nothing here runs the code)."""

    def __init__(self, rng: random.Random, constants: Iterable = ()):
        self.rng = rng
        self.strings = [c for c in constants if type(c) is str]
        self.numbers = [c for c in constants if type(c) in (int, float)]

    def value(self, v, depth: int = 0) -> list:
        """Variants of one value: near, boundary and code-constant numbers; shorter, longer,
        case-changed strings and strings holding the code's string constants; shuffled, truncated
        and extended containers; containers with one item mutated."""
        rng = self.rng
        if isinstance(v, bool):
            return [not v]
        if isinstance(v, int):
            consts = [c + d for c in self.numbers if type(c) is int for d in (-1, 0, 1)]
            out = [v + 1, v - 1, -v, 0, 1, -1, 2 * v, v // 2, v + rng.randint(2, 10), rng.randint(-20, 100)]
            out += rng.sample(consts, k=min(3, len(consts)))
            return [x for x in out if abs(x) <= max(_MAX_INT, abs(v))]
        if isinstance(v, float):
            return [v + 0.5, v - 1.0, -v, 0.0, 2 * v, round(v / 3, 3), round(rng.uniform(-10, 10), 2)]
        if isinstance(v, str):
            return self._str(v)
        if isinstance(v, (list, tuple)):
            return [type(v)(x) for x in self._seq(list(v), depth)]
        if isinstance(v, dict):
            return self._dict(v, depth)
        if isinstance(v, set):
            return [set(x) for x in self._seq(sorted(v, key=repr), depth) if x]
        return []

    def _str(self, s: str) -> list[str]:
        rng = self.rng
        out = list(_FILL_STR) if not s else []
        if s:
            alphabet = s + _CHARS
            extra = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 4)))
            pos, i = rng.randint(0, len(s)), rng.randrange(len(s))
            out += ["", s[: len(s) // 2], s[1:], s[:-1], s + s[-1:], s[:pos] + extra + s[pos:], s.upper(),
                    s.lower(), s.swapcase(), s[::-1], s.capitalize(), rng.choice(alphabet), s + " " + s[:3],
                    s[:i] + rng.choice(alphabet) + s[i + 1:]]
        for c in rng.sample(self.strings, k=min(3, len(self.strings))):
            pos = rng.randint(0, len(s))
            out += [c, s[:pos] + c + s[pos:]]
        return [x for x in out if len(x) <= max(_MAX_LEN, len(s))]

    def _seq(self, xs: list, depth: int) -> list[list]:
        rng = self.rng
        if not xs:
            return [list(x) for x in _FILL_SEQ] + [[c] for c in self.strings[:2]]
        shuffled = xs[:]
        rng.shuffle(shuffled)
        out = [[], xs[:-1], xs[1:], xs[::-1], xs[:1], shuffled, xs + [rng.choice(xs)], [xs[0]] + xs]
        try:
            out.append(sorted(xs))
        except TypeError:
            pass
        if depth < 2:
            i = rng.randrange(len(xs))
            inner = self.value(xs[i], depth + 1)
            for m in rng.sample(inner, k=min(3, len(inner))):
                out += [xs[:i] + [m] + xs[i + 1:], xs + [m]]
        return [x for x in out if len(x) <= max(_MAX_LEN, len(xs))]

    def _dict(self, d: dict, depth: int) -> list[dict]:
        if not d:
            return [dict(x) for x in _FILL_DICT]
        k = self.rng.choice(list(d))
        out = [{}, {x: y for x, y in d.items() if x != k}]
        if depth < 2:
            out += [{**d, k: m} for m in self.value(d[k], depth + 1)[:3]]
            out += [{**d, nk: d[k]} for nk in self.value(k, depth + 1)[:3] if nk not in d]
        return out

    def _cross(self, seed: tuple) -> list[tuple]:
        """Mutations that relate the arguments: one becomes (or gains) a part of another, so that
        membership and lookup branches (`key in d`, `x in xs`, `text.count(ch)`) get exercised."""
        out = []
        for i, v in enumerate(seed):
            for j, other in enumerate(seed):
                if i == j:
                    continue
                parts = parts_of(other)
                same = [p for p in parts if type(p) is type(v)]
                if same:
                    out.append(seed[:i] + (self.rng.choice(same),) + seed[i + 1:])
                if isinstance(v, list) and parts:
                    out.append(seed[:i] + (v + [self.rng.choice(parts)],) + seed[i + 1:])
        return out

    def mutations(self, seed: tuple) -> list[tuple]:
        """Single-argument mutations of an argument tuple, mutations relating its arguments, and one
        that mutates every argument."""
        out = [seed[:i] + (m,) + seed[i + 1:] for i, v in enumerate(seed) for m in self.value(v)]
        if len(seed) > 1:
            out += self._cross(seed)
            out.append(tuple(self.rng.choice(self.value(v) or [v]) for v in seed))
        return out

    def candidates(self, seeds: list[tuple], budget: int, seen: set[str]) -> list[tuple[str, tuple]]:
        """Up to `budget` new rendered mutations of `seeds`, drawn round-robin so that every seed
        contributes; `seen` (rendered inputs) is updated."""
        pools = []
        for seed in seeds:
            pool = self.mutations(seed)
            self.rng.shuffle(pool)
            pools.append(pool)
        return round_robin(pools, budget, seen)


def round_robin(pools: list[list[tuple]], n: int, seen: set[str]) -> list[tuple[str, tuple]]:
    """Up to n new rendered argument tuples, one from each pool in turn (pools are used up from
    the end); `seen` (rendered inputs) is updated."""
    out: list[tuple[str, tuple]] = []
    while len(out) < n and any(pools):
        for pool in pools:
            while pool:
                args = pool.pop()
                text = render(args)
                if text is not None and text not in seen:
                    seen.add(text)
                    out.append((text, args))
                    break
            if len(out) >= n:
                break
    return out


def parts_of(v) -> list:
    """What another argument could be taken from `v`: its items, keys, characters or substrings."""
    if isinstance(v, str):
        return [v[i:j] for i, j in ((0, 1), (len(v) // 2, len(v) // 2 + 1), (0, 2), (1, 3))] if v else []
    if isinstance(v, dict):
        return list(v)
    if isinstance(v, (list, tuple, set)):
        return sorted(v, key=repr)
    return []


# annotation -> a few seed values, for sources whose tests give no literal input
_ANNOTATION_SEEDS = {
    "int": [0, 3, -7, 12], "float": [0.5, -2.25, 3.0], "str": ["hello world", "aBc", "", "a1b2"],
    "bool": [True, False], "list": [[1, 2, 3], [], [5, -1, 4, 4]],
}


def annotation_seeds(annotations: Iterable[str | None], rng: random.Random, n: int = 6) -> list[tuple]:
    """Argument tuples guessed from parameter annotations (`str`, `List[int]`, …); [] if any is unknown."""
    pools = []
    for ann in annotations:
        if ann is None:
            return []
        base = ann.split("[")[0].split(".")[-1].lower()
        inner = ann[ann.find("[") + 1: ann.rfind("]")].split(",")[0].strip().lower() if "[" in ann else ""
        if base == "list" and inner in _ANNOTATION_SEEDS and inner != "list":
            values = _ANNOTATION_SEEDS[inner]
            pools.append([[v for v in values if v != ""], values[:2], []])
        elif base in _ANNOTATION_SEEDS:
            pools.append(_ANNOTATION_SEEDS[base])
        else:
            return []
    return [tuple(rng.choice(p) for p in pools) for _ in range(n)]


# ---------------------------------------------------------------- validator

_TYPE_NAMES = {type(None): "type(None)"}


@dataclass(frozen=True)
class ArgType:
    """Observed types of one argument: its own, and for containers those of items (keys, values)."""

    types: frozenset[type]
    items: frozenset[type] = frozenset()
    keys: frozenset[type] = frozenset()


def infer_types(inputs: list[tuple]) -> list[ArgType]:
    arity = len(inputs[0])
    out = []
    for i in range(arity):
        values = [args[i] for args in inputs]
        items = {type(x) for v in values if isinstance(v, (list, tuple, set)) for x in v}
        items |= {type(x) for v in values if isinstance(v, dict) for x in v.values()}
        keys = {type(k) for v in values if isinstance(v, dict) for k in v}
        out.append(ArgType(frozenset(type(v) for v in values), frozenset(items), frozenset(keys)))
    return out


def _names(types: frozenset[type]) -> str:
    names = sorted(_TYPE_NAMES.get(t, t.__name__) for t in types)
    return "(" + "".join(n + ", " for n in names).rstrip() + ")"


def _words(types: frozenset[type]) -> str:
    return " or ".join(sorted("None" if t is type(None) else t.__name__ for t in types))


def validator_source(types: list[ArgType]) -> str:
    """`validate_input_args(arg0..)`: TypeError for an argument of an unseen type, ValueError for a
    container holding items (dict keys) of an unseen type."""
    names = [f"arg{i}" for i in range(len(types))]
    lines = [f"def validate_input_args({', '.join(names)}):"]
    for name, t in zip(names, types):
        lines += [f"    if type({name}) not in {_names(t.types)}:",
                  f"        raise TypeError('{name} must be {_words(t.types)}')"]
        seqs = sorted(x.__name__ for x in t.types if x in (list, tuple, set))
        if t.items and seqs:
            cond = f"type({name}) in ({', '.join(seqs)},)"
            lines += [f"    if {cond} and any(type(v) not in {_names(t.items)} for v in {name}):",
                      f"        raise ValueError('items of {name} must be {_words(t.items)}')"]
        if dict in t.types and (t.items or t.keys):
            if t.keys:
                lines += [f"    if type({name}) is dict and any(type(k) not in {_names(t.keys)} "
                          f"for k in {name}):",
                          f"        raise ValueError('keys of {name} must be {_words(t.keys)}')"]
            if t.items:
                lines += [f"    if type({name}) is dict and any(type(v) not in {_names(t.items)} "
                          f"for v in {name}.values()):",
                          f"        raise ValueError('values of {name} must be {_words(t.items)}')"]
    return "\n".join(lines) + "\n"
