"""Branch-targeted inputs for the data builder (nothing here runs the code).

Mutation and the shape search stay near the seeds; a branch guarded by one value (`if ch == 'ö'`,
`if len(xs) == 7`, `if s.isdecimal()`) opens only for an input that holds it. For each branch arc
the examples so far missed, `targeted_inputs` reads the code on the arc's source line and puts what
that line tests into the inputs that reached it: its string and number literals (and the numbers
next to them), the lengths it compares with, and, where the code calls a str method, characters
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
_MAX_CHARS = 12  # characters of a string literal tried one by one
_FLOAT_FORMS = (1e16, -1e16, 1e-05)  # floats whose str() has no '.' (exponent form)


def line_targets(source: str, line: int) -> tuple[list, list[int]]:
    """(literals, lengths compared with `len(...)`) of the code whose nodes start on `line`."""
    literals: dict = {}
    lengths: set[int] = set()
    for node in ast.walk(parse_quietly(source)):
        if getattr(node, "lineno", None) != line:
            continue
        for value in _literals(node):
            literals.setdefault((type(value), value), value)
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(isinstance(s, ast.Call) and getattr(s.func, "id", None) == "len" for s in sides):
                lengths |= {s.value for s in sides if isinstance(s, ast.Constant) and type(s.value) is int}
    return list(literals.values()), sorted(lengths)


def calls_str_method(source: str) -> bool:
    """Whether the code calls a method str has (the test may sit on another line than the call:
    `for line in text.splitlines(): if line == ''`)."""
    return any(isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _STR_METHODS
               for node in ast.walk(parse_quietly(source)))


def _literals(node: ast.AST) -> list:
    """The values a literal node stands for in a test: the str or number it spells (`-1` included);
    also each character of a short string (`ch in '.:,'`), the character of a code point
    (`ord(ch) == 61`, bytes items) and the text of a bytes literal (`t.endswith(b'\\n')`)."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return [-v for v in _literals(node.operand) if type(v) in (int, float)]
    v = node.value if isinstance(node, ast.Constant) else None
    if type(v) is bytes:
        v = v.decode("latin-1")
    if type(v) is str and v:
        return [v, *dict.fromkeys(v[:_MAX_CHARS])] if len(v) > 1 else [v]
    if type(v) is int:
        return [v, chr(v)] if 0 <= v < 0x110000 else [v]
    return [v] if type(v) is float else []


def _pieces(v, depth: int = 0) -> list:
    """A few items, keys and leading characters of a value, nested ones included."""
    if isinstance(v, str):
        return [v[:1]] if v else []
    if isinstance(v, dict):
        v = list(v)
    if isinstance(v, (list, tuple)) and depth < 2:
        return [x for item in list(v)[:3] for x in ([item] if type(item) in (str, int) else []) + _pieces(item, depth + 1)]
    return []


def _variants(v, literals: list, lengths: list[int], chars: list[str], depth: int = 0) -> tuple[list, list]:
    """Values of v's type that hold what the line tests: (the tested values themselves, and
    values that hold them among v's own content). The first are tried first."""
    if isinstance(v, bool):
        return [not v], []
    if isinstance(v, int):
        return [c + d for c in literals if type(c) is int for d in (0, -1, 1)], []
    if isinstance(v, float):
        return [float(c) + d for c in literals if type(c) in (int, float) for d in (0.0, -0.5, 0.5)], list(_FLOAT_FORMS)
    if isinstance(v, str):
        atoms = [c for c in literals if type(c) is str]
        fill = v or "a"
        sized = [(fill * (n + 1))[:n] for m in lengths for n in (m - 1, m, m + 1) if 0 <= n <= _MAX_LEN]
        mid = len(v) // 2
        near = [x for a in atoms + chars for x in (v + a, a + v, v[:mid] + a + v[mid:], a * 3, a + v[1:])]
        return atoms + sized, ["", v[:1], *chars, *near]
    if isinstance(v, (list, tuple)) and depth < 2:
        xs = list(v)
        kinds = {type(x) for x in xs}
        exact, near = [xs + [c] for c in literals if type(c) in kinds], [[], xs[:1]] if xs else []
        for i in ([0, len(xs) - 1] if xs else []):
            first, rest = _variants(xs[i], literals, lengths, chars, depth + 1)
            exact += [xs[:i] + [m] + xs[i + 1:] for m in first]
            near += [xs[:i] + [m] + xs[i + 1:] for m in rest]
        if xs:  # lengths the line compares with, or counts it compares (`sum(...) > 3`), of mixed or equal items
            sizes = {n for m in lengths + [c for c in literals if type(c) is int]
                     for n in (m - 1, m, m + 1) if 0 <= n <= _MAX_LEN}
            exact += [x for n in sorted(sizes) for x in ((xs * (n + 1))[:n], xs[:1] * n, xs[-1:] * n)]
        return [type(v)(x) for x in exact], [type(v)(x) for x in near]
    if isinstance(v, dict) and depth < 2 and v:
        keys, values = list(v), list(v.values())
        kinds = {type(k) for k in keys}
        first, rest = _variants(values[0], literals, lengths, chars, depth + 1)
        exact = [{**v, c: values[0]} for c in literals if type(c) in kinds and c not in v]
        exact += [{k: x for k, x in v.items() if k != c} for c in literals if c in v]
        return exact + [{**v, keys[0]: m} for m in first], [{**v, keys[0]: m} for m in rest]
    return [], []


def targeted_inputs(source: str, missed: Iterable[Arc], bases: dict[int, list[tuple]], n: int,
                    rng: random.Random, seen: set[str]) -> list[tuple[str, tuple]]:
    """Up to n new rendered argument tuples aimed at the `missed` arcs, taken round-robin over the
    arcs' source lines; `bases[line]`: argument tuples of the inputs that reached that line (any
    inputs when none did). `seen` (rendered inputs) is updated."""
    chars = list(PREDICATE_CHARS) if calls_str_method(source) else []
    pools = []
    for line in sorted({a for a, _ in missed}):
        literals, lengths = line_targets(source, line)
        tiers: tuple[list, list] = ([], [])
        for args in bases.get(line, [])[:4]:
            for i, v in enumerate(args):
                # what the other arguments hold: `arg0[i] == arg1[j][0]` tests one against another
                tested = literals + [p for j, o in enumerate(args) if j != i for p in _pieces(o)]
                for tier, values in zip(tiers, _variants(v, tested, lengths, chars)):
                    tier += [args[:i] + (m,) + args[i + 1:] for m in values]
        for tier in tiers:
            rng.shuffle(tier)
        pools.append(tiers[1] + tiers[0])  # used up from the end: the tested values first
    return round_robin(pools, n, seen)
