"""The top-level code an entry point needs: a call graph by names, read from the AST (nothing runs).

`keep_reachable(body, roots)` keeps the top-level statements the `roots` reach through the names
they read, transitively: a function or class when kept code names it (a kept class keeps all its
methods, so what they name is reached too), an assignment when kept code reads a name it binds, an
import alias when kept code uses it. The rest is dead weight in a stored row: unused helpers add
branch arcs no input of the entry point can take, and the critic would read them as part of the
function. A statement that binds no name on its own (a top-level `for`, `if`, `try`, `with`, a
mutation like `table[0] = 1`) may run code that matters: it stays, and what it names is reached.
Reads follow Python's scoping (`symtable`), so a parameter named like a helper does not keep it.
"""

from __future__ import annotations

import ast
import symtable

_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_TARGETS = (ast.Name, ast.Tuple, ast.List, ast.Starred, ast.expr_context)


def keep_reachable(body: list[ast.stmt], roots: set[str]) -> list[ast.stmt]:
    """The statements of `body` (a module's, in order) that `roots` reach; import statements keep
    only the aliases reached (`from m import *` always stays: what it binds is not in the source)."""
    reached = set(roots)
    prunable: list[tuple[ast.stmt, set[str]]] = []
    for stmt in body:
        names = _bound_names(stmt)
        if names is None:
            reached |= _read_names(stmt, set())
        elif not isinstance(stmt, ast.Import | ast.ImportFrom):
            prunable.append((stmt, names))
    kept: set[int] = set()
    grew = True
    while grew:  # a fixpoint: modules are small, so rescanning is cheap
        grew = False
        for stmt, names in prunable:
            if id(stmt) not in kept and names & reached:
                kept.add(id(stmt))
                reached |= _read_names(stmt, names)
                grew = True
    out = []
    for stmt in body:
        if isinstance(stmt, ast.Import | ast.ImportFrom):
            stmt.names = [a for a in stmt.names if a.name == "*" or _alias_name(a) in reached]
            if stmt.names:
                out.append(stmt)
        elif _bound_names(stmt) is None or id(stmt) in kept:
            out.append(stmt)
    return out


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
            return None  # `table[k] = v`, `obj.x = v`: a mutation of something else
        walrus = [n.target.id for n in ast.walk(stmt.value) if isinstance(n, ast.NamedExpr)] if stmt.value else []
        return {n.id for n in nodes if isinstance(n, ast.Name)} | set(walrus)
    return None


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
