"""Branch-targeted inputs for the data builder (nothing here runs the code).

Mutation and the shape search stay near the seeds; a branch guarded by one value (`if ch == 'ö'`,
`if len(xs) == 7`, `if s.isdecimal()`) opens only for an input that holds it. For each branch arc
the examples so far missed, `targeted_inputs` reads the code on the arc's source line and puts what
that line tests into the inputs that reached it: its string and number literals (and the numbers
next to them), the lengths it compares with, and, where the line calls a str method, characters
that tell the str predicates apart (non-ASCII letters and digits, whitespace, title case). Values
keep the types the inputs already have, so the validator inferred from the seeds accepts them.
"""

from __future__ import annotations

import ast
import random
from collections.abc import Iterable

from aac.data.anonymize import parse_quietly
from aac.data.inputs import round_robin

Arc = tuple[int, int]
# one of each class the str predicates and case maps split: ASCII letters of both cases, a digit,
# space, tab, newline, punctuation, accented, sharp s (upper() grows it), dotted I (lower() grows
# it), title-case digraph, superscript two (isdigit, not isdecimal), one half and a Roman numeral
# (isnumeric only), an Arabic-Indic digit (isdecimal), CJK (isalpha, no case)
PREDICATE_CHARS = ("a", "Z", "0", " ", "\t", "\n", "_", "-", ".", "é", "ß", "İ", "ǅ", "²", "½", "Ⅻ", "٣", "中")
_STR_METHODS = frozenset(n for n in dir(str) if not n.startswith("_"))
_MAX_LEN = 40  # longest string or list a length target grows


def line_targets(source: str, line: int) -> tuple[list, list[int], bool]:
    """(literals, lengths, calls a str method) of the code whose node starts on `line`."""
    literals: dict = {}
    lengths: set[int] = set()
    str_calls = False
    for node in ast.walk(parse_quietly(source)):
        if getattr(node, "lineno", None) != line:
            continue
        value = _literal(node)
        if value is not None:
            literals.setdefault((type(value), value), value)
        elif isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(isinstance(s, ast.Call) and getattr(s.func, "id", None) == "len" for s in sides):
                lengths |= {s.value for s in sides if isinstance(s, ast.Constant) and type(s.value) is int}
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            str_calls |= node.func.attr in _STR_METHODS
    return list(literals.values()), sorted(lengths), str_calls


def _literal(node: ast.AST):
    """The str or number a node spells (`-1` included), else None."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _literal(node.operand)
        return -inner if type(inner) in (int, float) else None
    if isinstance(node, ast.Constant) and type(node.value) in (str, int, float) and node.value != "":
        return node.value
    return None


def _variants(v, literals: list, lengths: list[int], chars: list[str], depth: int = 0) -> list:
    """Values of v's type that hold what the line tests."""
    if isinstance(v, bool):
        return [not v]
    if isinstance(v, int):
        return [c + d for c in literals if type(c) is int for d in (-1, 0, 1)]
    if isinstance(v, float):
        return [float(c) + d for c in literals if type(c) in (int, float) for d in (-0.5, 0.0, 0.5)]
    if isinstance(v, str):
        atoms = [c for c in literals if type(c) is str] + chars
        mid = len(v) // 2
        out = ["", v[:1]] + [x for a in atoms for x in (a, v + a, a + v, v[:mid] + a + v[mid:], a * 3, a + v[1:])]
        fill = v or "a"
        out += [(fill * (n + 1))[:n] for m in lengths for n in (m - 1, m, m + 1) if 0 <= n <= _MAX_LEN]
        return out
    if isinstance(v, (list, tuple)) and depth < 2:
        xs = list(v)
        out: list[list] = [[], xs[:1]] if xs else []
        for i in ([0, len(xs) - 1] if xs else []):
            out += [xs[:i] + [m] + xs[i + 1:] for m in _variants(xs[i], literals, lengths, chars, depth + 1)]
        kinds = {type(x) for x in xs}
        out += [xs + [c] for c in literals if type(c) in kinds]
        if xs:
            out += [(xs * (n + 1))[:n] for m in lengths for n in (m - 1, m, m + 1) if 0 <= n <= _MAX_LEN]
        return [type(v)(x) for x in out]
    if isinstance(v, dict) and depth < 2 and v:
        keys, values = list(v), list(v.values())
        kinds = {type(k) for k in keys}
        out = [{**v, c: values[0]} for c in literals if type(c) in kinds and c not in v]
        out += [{**v, keys[0]: m} for m in _variants(values[0], literals, lengths, chars, depth + 1)]
        out += [{k: x for k, x in v.items() if k != c} for c in literals if c in v]
        return out
    return []


def targeted_inputs(source: str, missed: Iterable[Arc], bases: dict[int, list[tuple]], n: int,
                    rng: random.Random, seen: set[str]) -> list[tuple[str, tuple]]:
    """Up to n new rendered argument tuples aimed at the `missed` arcs, taken round-robin over the
    arcs' source lines; `bases[line]`: argument tuples of the inputs that reached that line (any
    inputs when none did). `seen` (rendered inputs) is updated."""
    pools = []
    for line in sorted({a for a, _ in missed}):
        literals, lengths, str_calls = line_targets(source, line)
        chars = list(PREDICATE_CHARS) if str_calls else []
        pool = [args[:i] + (m,) + args[i + 1:] for args in bases.get(line, [])[:4]
                for i, v in enumerate(args) for m in _variants(v, literals, lengths, chars)]
        rng.shuffle(pool)
        pools.append(pool)
    return round_robin(pools, n, seen)
