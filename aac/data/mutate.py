"""Single-point mutants of a function's source, by AST operator: what a row's mutants are drawn from
(aac/data/mutants.py keeps those the row's inputs tell apart).

Operators (`OPERATORS`), each applied at one place:
- `compare`: a comparison flipped: `<` <-> `<=`, `>` <-> `>=` (the boundary), `==` <-> `!=`, `is` <-> `is not`,
  `in` <-> `not in`;
- `boolean`: `and` <-> `or`;
- `constant`: an int or float moved by one (both ways), a bool flipped;
- `arithmetic`: a binary or augmented-assignment operator swapped (`+` <-> `-`, `*` -> `+`, `/` -> `*`,
  `//` -> `/`, `%` -> `//`, `**` -> `*`, `&` <-> `|`, `^` -> `|`, `<<` <-> `>>`);
- `slice`: a slice's bounds swapped (`a[i:]` -> `a[:i]`, `a[i:j]` -> `a[j:i]`), or its step dropped;
- `negate`: the condition of an `if`, `while`, conditional expression or comprehension negated;
- `drop`: a simple statement of a function body replaced by `pass`;
- `call` (an expression dropped, as `drop` drops a statement): a call of one positional argument replaced by
  that argument (`len(set(s))` -> `len(s)`), a method call without arguments by its object (`s.lower()` ->
  `s`), a keyword argument dropped (`sorted(x, reverse=True)` -> `sorted(x)`). Not in issue 50's list: the
  others are mostly told apart by the two context examples already, these often are not.
Nothing in the dataset's `validate_input_args` changes, nor its call: the validator is the dataset's, not
the function's. A mutant is the original text with one span replaced (the rest keeps its formatting); a
replaced expression is parenthesised, so precedence around it cannot change.
"""

from __future__ import annotations

import ast
import copy
import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Optional

from aac.data.anonymize import VALIDATOR

OPERATORS = ("compare", "boolean", "constant", "arithmetic", "slice", "negate", "drop", "call")

_COMPARE: dict[type, type] = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq,
                              ast.NotEq: ast.Eq, ast.Is: ast.IsNot, ast.IsNot: ast.Is, ast.In: ast.NotIn,
                              ast.NotIn: ast.In}
_ARITHMETIC: dict[type, type] = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Add, ast.Div: ast.Mult,
                                 ast.FloorDiv: ast.Div, ast.Mod: ast.FloorDiv, ast.Pow: ast.Mult,
                                 ast.BitAnd: ast.BitOr, ast.BitOr: ast.BitAnd, ast.BitXor: ast.BitOr,
                                 ast.LShift: ast.RShift, ast.RShift: ast.LShift}
_SIMPLE = (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr, ast.Return, ast.Raise, ast.Assert, ast.Delete,
           ast.Break, ast.Continue)


@dataclass(frozen=True)
class Mutation:
    op: str  # one of OPERATORS
    change: str  # "line N: before -> after"
    code: str  # the whole mutated source


def candidates(source: str) -> list[Mutation]:
    """Every single-point mutant of `source` that compiles and differs from it, once each, in source order."""
    tree = ast.parse(source)
    lines = source.encode().splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    raw = source.encode()
    out: list[Mutation] = []
    seen = {source}
    for op, node, text in _edits(tree):
        lo = starts[node.lineno - 1] + node.col_offset
        hi = starts[node.end_lineno - 1] + node.end_col_offset
        before = raw[lo:hi].decode()
        code = (raw[:lo] + text.encode() + raw[hi:]).decode()
        if code in seen:
            continue
        try:
            ast.parse(code)
        except SyntaxError:
            continue
        seen.add(code)
        out.append(Mutation(op, f"line {node.lineno}: {_one_line(before)} -> {_one_line(text)}", code))
    return out


def seeded_order(found: list[Mutation], rng: random.Random) -> list[Mutation]:
    """`found` shuffled within each operator, then dealt one operator at a time (their order shuffled too), so
    the first mutants kept are spread over the operators rather than the most frequent one's."""
    by_op: dict[str, list[Mutation]] = {}
    for c in found:
        by_op.setdefault(c.op, []).append(c)
    ops = sorted(by_op)
    rng.shuffle(ops)
    for op in ops:
        rng.shuffle(by_op[op])
    out: list[Mutation] = []
    while len(out) < len(found):
        out += [by_op[op].pop() for op in ops if by_op[op]]
    return out


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _paren(node: ast.AST) -> str:
    return f"({ast.unparse(node)})"


def _validator_call(stmt: ast.stmt) -> bool:
    return (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)
            and isinstance(stmt.value.func, ast.Name) and stmt.value.func.id == VALIDATOR)


def _mutable_nodes(tree: ast.Module) -> Iterator[tuple[ast.AST, bool]]:
    """Every node outside the validator and its call, with whether it is a statement of a function body."""
    def walk(node: ast.AST, in_function: bool) -> Iterator[tuple[ast.AST, bool]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef) and child.name == VALIDATOR:
                continue
            if _validator_call(child) or isinstance(child, ast.JoinedStr):  # f-string parts have no own spans
                continue
            yield child, in_function and isinstance(child, ast.stmt)
            yield from walk(child, in_function or isinstance(child, (ast.FunctionDef, ast.Lambda)))

    yield from walk(tree, False)


def _edits(tree: ast.Module) -> Iterator[tuple[str, ast.AST, str]]:
    """(operator, the node whose span is replaced, the replacement text)."""
    for node, body_statement in _mutable_nodes(tree):
        if body_statement and isinstance(node, _SIMPLE):
            yield "drop", node, "pass"
        if isinstance(node, ast.Compare):
            for k, cmp in enumerate(node.ops):
                if type(cmp) in _COMPARE:
                    new = copy.deepcopy(node)
                    new.ops[k] = _COMPARE[type(cmp)]()
                    yield "compare", node, _paren(new)
        elif isinstance(node, ast.BoolOp):
            yield "boolean", node, _paren(ast.BoolOp(ast.Or() if isinstance(node.op, ast.And) else ast.And(),
                                                     node.values))
        elif isinstance(node, ast.Constant):
            yield from (("constant", node, text) for text in _moved(node.value))
        elif isinstance(node, (ast.BinOp, ast.AugAssign)) and type(node.op) in _ARITHMETIC:
            new = copy.deepcopy(node)
            new.op = _ARITHMETIC[type(node.op)]()
            yield "arithmetic", node, _paren(new) if isinstance(node, ast.BinOp) else ast.unparse(new)
        elif isinstance(node, ast.Slice):
            yield from (("slice", node, text) for text in _slices(node))
        elif isinstance(node, ast.Call):
            yield from (("call", node, text) for text in _calls(node))
        if isinstance(node, (ast.If, ast.While, ast.IfExp)):
            yield "negate", node.test, f"(not {_paren(node.test)})"
        elif isinstance(node, ast.comprehension):
            yield from (("negate", cond, f"(not {_paren(cond)})") for cond in node.ifs)


def _calls(node: ast.Call) -> list[str]:
    out = []
    if len(node.args) == 1 and not node.keywords and not isinstance(node.args[0], ast.Starred):
        out.append(_paren(node.args[0]))
    if isinstance(node.func, ast.Attribute) and not node.args and not node.keywords:
        out.append(_paren(node.func.value))
    for k in range(len(node.keywords)):
        new = copy.deepcopy(node)
        del new.keywords[k]
        out.append(_paren(new))
    return out


def _moved(value: object) -> list[str]:
    if isinstance(value, bool):
        return [repr(not value)]
    if isinstance(value, (int, float)):
        return [f"({v!r})" if v < 0 else repr(v) for v in (value + 1, value - 1)]
    return []


def _slices(node: ast.Slice) -> list[str]:
    def text(part: Optional[ast.expr]) -> str:
        return "" if part is None else _paren(part)

    out = []
    if node.lower is not None or node.upper is not None:
        out.append(f"{text(node.upper)}:{text(node.lower)}" + (f":{text(node.step)}" if node.step else ""))
    if node.step is not None:
        out.append(f"{text(node.lower)}:{text(node.upper)}")
    return out
