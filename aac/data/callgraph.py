"""The top-level code an entry point needs: a call graph by names, read from the AST (nothing runs).

`keep_reachable(body, roots)` keeps the top-level statements the `roots` reach through the names
they read, transitively: a function or class when kept code names it (a kept class keeps all its
methods, so what they name is reached too), an assignment when kept code reads a name it binds, an
import alias when kept code uses it. The rest is dead weight in a stored row: unused helpers add
branch arcs no input of the entry point can take, and the critic would read them as part of the
function. A statement that binds no name on its own (a top-level `for`, `if`, `try`, `with`) may run
code that matters: it stays, and what it names is reached. A mutation of a module name without a
call in it (`Cls.attr = Other`, `TABLE[0] = 1`) goes with the name it mutates.
Reads follow Python's scoping (`symtable`), so a parameter named like a helper does not keep it.

`methods=True` (an entry that is a function: every call it makes is in the code) also prunes the
classes it keeps: a method stays when kept code may call it, that is when its name is used as an
attribute (`x.area()`, `self._parse`) or written as a string (`getattr(x, "area")`) anywhere in the
kept code, or it is a dunder (`__init__`, `__eq__`, ...). A module that looks attributes up by
computed names (`getattr(x, name)`, `__getattr__`, `__dict__`, `vars`, `dir`) keeps every method.
"""

from __future__ import annotations

import ast
import symtable

_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_TARGETS = (ast.Name, ast.Tuple, ast.List, ast.Starred, ast.expr_context)


def keep_reachable(body: list[ast.stmt], roots: set[str], *, methods: bool = False) -> list[ast.stmt]:
    """The statements of `body` (a module's, in order) that `roots` reach; import statements keep
    only the aliases reached (`from m import *` always stays: what it binds is not in the source);
    `methods`: kept classes keep only the methods kept code may call (see the module doc)."""
    prune = methods and not _dynamic(body)
    reached = set(roots)
    attrs: set[str] = set()  # attribute names and strings the kept code uses
    prunable: list[tuple[ast.stmt, set[str]]] = []
    for stmt in body:
        names = _bound_names(stmt)
        if names is None:
            reached |= _read_names(stmt, set())
            attrs |= _attributes(stmt)
        elif not isinstance(stmt, ast.Import | ast.ImportFrom):
            prunable.append((stmt, names))
    kept: set[int] = set()
    optional = {}  # id(class) -> its methods that stay only when called
    called: set[int] = set()
    grew = True
    while grew:  # a fixpoint: modules are small, so rescanning is cheap
        grew = False
        for stmt, names in prunable:
            if id(stmt) not in kept and names & reached:
                kept.add(id(stmt))
                grew = True
                if prune and isinstance(stmt, ast.ClassDef):
                    optional[id(stmt)] = [m for m in stmt.body if isinstance(m, ast.FunctionDef | ast.AsyncFunctionDef)
                                          and not (m.name.startswith("__") and m.name.endswith("__"))]
                    shell = _shell(stmt, optional[id(stmt)])
                    reached |= _read_names(shell, names)
                    attrs |= _attributes(shell) | {n.id for n in ast.walk(shell) if isinstance(n, ast.Name)}
                else:
                    reached |= _read_names(stmt, names)
                    attrs |= _attributes(stmt)
        for group in optional.values():
            for m in group:
                if id(m) not in called and m.name in attrs:
                    called.add(id(m))
                    reached |= _read_names(m, {m.name})
                    attrs |= _attributes(m)
                    grew = True
    out = []
    for stmt in body:
        if isinstance(stmt, ast.Import | ast.ImportFrom):
            stmt.names = [a for a in stmt.names if a.name == "*" or _alias_name(a) in reached]
            if stmt.names:
                out.append(stmt)
        elif _bound_names(stmt) is None or id(stmt) in kept:
            if id(stmt) in optional:
                dropped = {id(m) for m in optional[id(stmt)]} - called
                stmt.body = [m for m in stmt.body if id(m) not in dropped] or [ast.Pass()]
            out.append(stmt)
    return out


def _shell(cls: ast.ClassDef, optional: list[ast.stmt]) -> ast.ClassDef:
    """A class without the methods that stay only when called."""
    drop = {id(m) for m in optional}
    return ast.ClassDef(name=cls.name, bases=cls.bases, keywords=cls.keywords, decorator_list=cls.decorator_list,
                        body=[s for s in cls.body if id(s) not in drop] or [ast.Pass()])


def _attributes(node: ast.AST) -> set[str]:
    return {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)} | {
        n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and type(n.value) is str and n.value.isidentifier()}


def _dynamic(body: list[ast.stmt]) -> bool:
    """Whether the code looks attributes up by computed names (then no method can be proved unused)."""
    for node in (n for stmt in body for n in ast.walk(stmt)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in (
                "getattr", "hasattr", "setattr", "delattr") and not (
                len(node.args) > 1 and isinstance(node.args[1], ast.Constant)):
            return True
        if isinstance(node, ast.Name) and node.id in ("vars", "dir"):
            return True
        if isinstance(node, ast.Attribute) and node.attr in ("__dict__", "__getattr__", "__getattribute__"):
            return True
        if isinstance(node, ast.FunctionDef) and node.name in ("__getattr__", "__getattribute__"):
            return True
    return False


def _alias_name(alias: ast.alias) -> str:
    return (alias.asname or alias.name).split(".")[0]


def _bound_names(stmt: ast.stmt) -> set[str] | None:
    """The names a definition, an import or a plain assignment binds; None for any other statement."""
    if isinstance(stmt, _DEFINITIONS):
        return {stmt.name}
    if isinstance(stmt, ast.Import | ast.ImportFrom):
        return {_alias_name(a) for a in stmt.names}
    if isinstance(stmt, ast.Assign | ast.AnnAssign | ast.AugAssign):
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        nodes = [n for t in targets for n in ast.walk(t)]
        if not all(isinstance(n, _TARGETS) for n in nodes):
            # `Cls.attr = Other`, `TABLE[0] = 1`: a mutation of a module name; one that calls
            # nothing matters only to that name, anything else stays
            roots = [_root(t) for t in targets]
            calls = any(isinstance(n, ast.Call) for n in ast.walk(stmt))
            return None if calls or None in roots else set(roots)
        walrus = [n.target.id for n in ast.walk(stmt.value) if isinstance(n, ast.NamedExpr)] if stmt.value else []
        return {n.id for n in nodes if isinstance(n, ast.Name)} | set(walrus)
    return None


def _root(target: ast.expr) -> str | None:
    """The name an attribute or item target hangs from (`Cls` of `Cls.a.b`, `T` of `T[0]`), else None."""
    while isinstance(target, ast.Attribute | ast.Subscript):
        target = target.value
    return target.id if isinstance(target, ast.Name) else None


def _read_names(stmt: ast.stmt, binds: set[str]) -> set[str]:
    """The module-level names a statement uses, by Python's own scoping (`symtable`): at the top level
    every name it touches but those it binds itself; inside its functions, classes, lambdas and
    comprehensions the names that resolve to the module (a parameter or local named like a helper
    does not reach the helper)."""
    try:
        table = symtable.symtable(ast.unparse(stmt), "<statement>", "exec")
    except SyntaxError:  # `nonlocal` or `return` at the top level: read every name, to be safe
        return {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name)}
    out = {s.get_name() for s in table.get_symbols()} - binds
    scopes = list(table.get_children())
    while scopes:
        scope = scopes.pop()
        out |= {s.get_name() for s in scope.get_symbols() if s.is_global()}
        scopes += scope.get_children()
    return out
