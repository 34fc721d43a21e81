"""Anonymise a source function into the PAU shape, by AST only (nothing here runs the code).

`anonymize(code, entry_point)` drops code that imports unsafe modules, strips docstrings,
annotations and the entry's defaults, renames the entry to `test_func`, its parameters to
`arg0..argN`, and every other function to `helper0..`, so that no original name or docstring
survives; it keeps only the top-level code the entry reaches (`aac.data.callgraph`: unused helpers,
classes, imports and constants go). `with_validator` then puts the inferred input validator in front and calls it first.
"""

from __future__ import annotations

import ast
import copy
import inspect
import warnings
from dataclasses import dataclass, field

from aac.data.callgraph import keep_reachable

UNSAFE_MODULES = frozenset({"os", "sys", "subprocess", "shutil", "socket", "requests"})
# builtins that reach the file system, the interpreter or the terminal: a row using them is dropped
UNSAFE_NAMES = frozenset({"eval", "exec", "open", "compile", "__import__", "input", "breakpoint",
                          "exit", "quit", "globals", "locals", "vars", "__builtins__"})
ENTRY = "test_func"
VALIDATOR = "validate_input_args"


class RejectedCode(ValueError):
    """A source row the builder cannot use; `reason` is a short key for the summary."""

    def __init__(self, reason: str, detail: str = ""):
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason


@dataclass(frozen=True)
class Anonymized:
    source: str  # the anonymised module without validator; `test_func` is its last statement
    params: tuple[str, ...]  # the entry's original parameter names (kept for binding test calls)
    defaults: dict[int, ast.expr] = field(default_factory=dict)  # position -> original default
    annotations: tuple[str | None, ...] = ()  # original annotations, a hint for seed inputs
    docstring: str | None = None  # the entry's original docstring (a description when the source has none)
    unreached: str = ""  # the top-level code dropped as unreached from the entry (original names: never stored)

    @property
    def arity(self) -> int:
        return len(self.params)

    @property
    def header(self) -> str:
        return f"def {ENTRY}({', '.join(arg_names(self.arity))}):"


def arg_names(n: int) -> list[str]:
    return [f"arg{i}" for i in range(n)]


def parse_quietly(text: str) -> ast.Module:
    """`ast.parse` without the SyntaxWarnings sloppy source code triggers (`1if x`, bad escapes)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntaxWarning)
        return ast.parse(text)


def anonymize(code: str, entry_point: str) -> Anonymized:
    try:
        tree = parse_quietly(code)
    except (SyntaxError, ValueError) as e:
        raise RejectedCode("syntax error", str(e)) from None
    _check_safe(tree)
    entry = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == entry_point), None)
    if entry is None:
        raise RejectedCode("no entry function", entry_point)
    a = entry.args
    if a.vararg or a.kwarg or a.kwonlyargs:
        raise RejectedCode("varargs")
    params = tuple(p.arg for p in a.posonlyargs + a.args)
    if not params:
        raise RejectedCode("no arguments")
    positional = a.posonlyargs + a.args
    defaults = {len(params) - len(a.defaults) + i: d for i, d in enumerate(a.defaults)}
    annotations = tuple(ast.unparse(p.annotation) if p.annotation else None for p in positional)
    docstring = _entry_docstring(entry)

    _strip_docstrings(tree)
    _StripAnnotations().visit(tree)
    _fill_empty_bodies(tree)
    _fill_self_calls(entry, entry_point, params, defaults)
    a.posonlyargs, a.args, a.defaults = [], positional, []
    # only the code the entry reaches stays (before renaming: helpers are numbered densely)
    defined = {n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.ClassDef)}
    body = [s for s in tree.body if s is not entry and not is_demo_code(s, defined)]
    tree.body = keep_reachable(body + [entry], {entry_point})
    unreached = [s for s in body if s not in tree.body and not isinstance(s, ast.Import | ast.ImportFrom)]

    methods = {id(s) for c in ast.walk(tree) if isinstance(c, ast.ClassDef) for s in c.body}
    functions = [n.name for n in ast.walk(tree)
                 if isinstance(n, ast.FunctionDef) and n.name != entry_point and id(n) not in methods]
    used = _identifiers(tree)
    helper_names = _fresh_names("helper", len(set(functions)), used)
    fn_map = {entry_point: ENTRY, **dict(zip(dict.fromkeys(functions), helper_names))}
    arg_map = dict(zip(params, arg_names(len(params))))
    clash = (used - set(fn_map) - set(arg_map)) & ({ENTRY, VALIDATOR} | set(arg_map.values()))
    if clash:
        raise RejectedCode("name clash", ", ".join(sorted(clash)))
    _Rename(fn_map).visit(tree)
    _Rename(arg_map).visit(entry)
    ast.fix_missing_locations(tree)
    return Anonymized(source=ast.unparse(tree), params=params, defaults=defaults, annotations=annotations,
                      docstring=docstring, unreached=ast.unparse(ast.Module(body=unreached, type_ignores=[])))


def fingerprint(code: str, entry_point: str) -> str | None:
    """The normalised source of a function (anonymised: names, docstrings, annotations and
    formatting gone), so that copies of one function under other names compare equal; None when
    the code is rejected anyway."""
    try:
        return anonymize(code, entry_point).source
    except RejectedCode:
        return None


def with_validator(anon: Anonymized, validator_source: str) -> str:
    """The PAU `test_func_validated`: validator, helper code, then `test_func` calling it first."""
    tree = ast.parse(anon.source)
    entry = tree.body[-1]
    assert isinstance(entry, ast.FunctionDef) and entry.name == ENTRY
    call = ast.parse(f"{VALIDATOR}({', '.join(arg_names(anon.arity))})").body[0]
    entry.body.insert(0, call)
    tree.body = ast.parse(validator_source).body + tree.body
    ast.fix_missing_locations(tree)
    return ast.unparse(tree)


def _check_safe(tree: ast.AST) -> None:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            mods = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            mods = [node.module or ""]
        else:
            mods = []
        bad = [m for m in mods if m.split(".")[0] in UNSAFE_MODULES]
        if bad:
            raise RejectedCode("unsafe import", bad[0])
        if isinstance(node, ast.Name) and node.id in UNSAFE_NAMES:
            raise RejectedCode("unsafe builtin", node.id)
        if isinstance(node, ast.AsyncFunctionDef | ast.Await):
            raise RejectedCode("async code")


def _is_bare_string(stmt: ast.stmt) -> bool:
    return (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)
            and isinstance(stmt.value.value, str))


def _entry_docstring(entry: ast.FunctionDef) -> str | None:
    """The first bare string of the body: some sources put an import before the docstring."""
    doc = next((s.value.value for s in entry.body if _is_bare_string(s)), None)
    return inspect.cleandoc(doc) if doc else None


def _strip_docstrings(tree: ast.AST) -> None:
    """Every bare string statement is a docstring or a no-op comment; none of them may survive."""
    for node in ast.walk(tree):
        for name in ("body", "orelse", "finalbody"):
            stmts = getattr(node, name, None)
            if isinstance(stmts, list) and any(isinstance(s, ast.stmt) and _is_bare_string(s) for s in stmts):
                setattr(node, name, [s for s in stmts if not _is_bare_string(s)])


class _StripAnnotations(ast.NodeTransformer):
    def visit_arg(self, node: ast.arg) -> ast.arg:
        node.annotation = None
        return node

    def visit_FunctionDef(self, node):
        node.returns = None
        self.generic_visit(node)
        return node

    def visit_AnnAssign(self, node: ast.AnnAssign):
        if node.value is None:
            return None  # a bare declaration does nothing at run time
        return ast.copy_location(ast.Assign(targets=[node.target], value=node.value), node)


def _fill_empty_bodies(tree: ast.AST) -> None:
    """Stripping can empty a block (a body that was only a docstring or a declaration)."""
    for node in ast.walk(tree):
        if not isinstance(node, ast.Module) and getattr(node, "body", None) == []:
            node.body = [ast.Pass()]


def _fill_self_calls(entry: ast.FunctionDef, name: str, params: tuple[str, ...],
                     defaults: dict[int, ast.expr]) -> None:
    """Recursive calls may lean on the defaults we strip: make them pass every argument by position."""
    for node in ast.walk(entry):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name):
            continue
        if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
            raise RejectedCode("unsupported self call")
        by_name = {k.arg: k.value for k in node.keywords}
        args = list(node.args)
        for i in range(len(args), len(params)):
            if params[i] in by_name:
                args.append(by_name.pop(params[i]))
            elif i in defaults:
                args.append(copy.deepcopy(defaults[i]))
            else:
                raise RejectedCode("unsupported self call")
        if by_name:
            raise RejectedCode("unsupported self call")
        node.args, node.keywords = args, []


def _identifiers(tree: ast.AST) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.FunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.alias):
            names.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, ast.Global | ast.Nonlocal):
            names.update(node.names)
    return names


def _fresh_names(prefix: str, n: int, used: set[str]) -> list[str]:
    out, i = [], 0
    while len(out) < n:
        if f"{prefix}{i}" not in used:
            out.append(f"{prefix}{i}")
        i += 1
    return out


class _Rename(ast.NodeTransformer):
    def __init__(self, mapping: dict[str, str]):
        self.mapping = mapping

    def visit_Name(self, node: ast.Name) -> ast.Name:
        node.id = self.mapping.get(node.id, node.id)
        return node

    def visit_arg(self, node: ast.arg) -> ast.arg:
        node.arg = self.mapping.get(node.arg, node.arg)
        return node

    def visit_FunctionDef(self, node):
        node.name = self.mapping.get(node.name, node.name)
        self.generic_visit(node)
        return node

    def visit_ClassDef(self, node: ast.ClassDef) -> ast.ClassDef:
        """Method names are attributes, not names in scope: they keep their names."""
        methods = [(s, s.name) for s in node.body if isinstance(s, ast.FunctionDef)]
        self.generic_visit(node)
        for s, name in methods:
            s.name = name
        return node

    def visit_Global(self, node):
        node.names = [self.mapping.get(n, n) for n in node.names]
        return node

    visit_Nonlocal = visit_Global


def is_demo_code(stmt: ast.stmt, defined: set[str]) -> bool:
    """Top-level expressions (prints, stray calls), `if __name__ == ...` blocks and statements
    that call the module's own functions (`result = f(x)`, `if f(s): print(...)`) are demo code:
    kept, they would run before `test_func` (which goes last) is defined."""
    if isinstance(stmt, ast.Expr):
        return True
    if isinstance(stmt, ast.If) and "__name__" in ast.unparse(stmt.test):
        return True
    if isinstance(stmt, ast.FunctionDef | ast.ClassDef | ast.Import | ast.ImportFrom):
        return False
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in defined
               for n in ast.walk(stmt))
