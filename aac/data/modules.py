"""The `module:` source: the public functions and classes of an importable package or module, as the
builder's raw tasks (the builder: aac/data/pau.py, classes: aac/data/classes.py; the sources
reference: docs/sources.md).

    python -m aac.data.build source=module:PKG[.SUB] out=DIR        # every public function and class
    python -m aac.data.build source=module:PKG.SUB.func out=f.jsonl  # one function (or class)

Nothing of the package is imported or run here: its files are found on `sys.path` (the venv's
packages, PYTHONPATH) as Python would find them and read by AST. A package's modules are walked in
name order, leaving out modules and subpackages whose name starts with `_` (the package's
`__init__.py` is read) and test modules (`test`, `tests`, `test_*`, `conftest`: read for seeds by
aac/data/test_seeds.py, never built). A public function or class is a top-level `def` or `class` whose
name does not start with `_` (and is in `__all__` where the module lists one); `module:PKG.func`
names one, public or not.

The black box of a function is the code it reaches in its module (helpers, classes, constants and
imports: aac/data/callgraph.py), with what it imports from its own package inlined, dependencies
first (`from .mod import name`, and `mod.name` where `mod` is a module of the package imported whole):
the sandbox has no package, only the row's code runs there. Its docstring is the gold
description (a function without one gets an empty description: code match works, a judge score needs
a description); the calls in its doctest lines are its first inputs (else the builder's seeds from
its annotations and from what its body does with each parameter, then typed probes).

Skipped, each counted by reason in the build summary (private or unlisted names and async functions
are no task; the rest cannot run alone in the sandbox): SKIP_REASONS. The builder then drops what it cannot use
either (unsafe imports or builtins, no arguments, no input that runs: aac/data/anonymize.py,
aac/data/pau.py).
"""

from __future__ import annotations

import ast
import copy
import importlib.util
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from aac.data.anonymize import is_demo_code, parse_quietly
from aac.data.callgraph import keep_reachable

# what a package may import only when the network is there (the sandbox has none)
NETWORK_MODULES = frozenset({"urllib", "http", "httpx", "urllib3", "aiohttp", "ftplib", "smtplib", "imaplib",
                             "poplib", "ssl", "websocket", "websockets", "grpc", "boto3", "botocore", "paramiko"})
SKIP_REASONS = {
    "private": "private (its name starts with _)",
    "unlisted": "not in its module's __all__",
    "async": "an async function",
    "namespace": "imports a module of its own package as a namespace",
    "nested": "imports from its own package inside a function",
    "clash": "a name its code needs is defined in two modules of its package",
    "missing": "imports a module that is not installed",
    "network": "network import",
    "unresolved": "imports a name its package does not define",
}
_TEST_NAMES = ("test", "tests", "conftest")


class ModuleSourceError(ValueError):
    """A `module:` target that names no importable module or function (one line)."""


class _Skip(Exception):
    def __init__(self, key: str, detail: str = ""):
        super().__init__(SKIP_REASONS[key] + (f" ({detail})" if detail else ""))
        self.key = key


@dataclass(frozen=True)
class Module:
    name: str  # dotted, as imported
    path: Path | None  # its source file (None: a namespace package)
    folder: Path | None  # a package's folder (None: a plain module)


def locate(dotted: str) -> Module | None:
    """The module `dotted` names, found by file as the import system would (only a top-level name
    is looked up through `importlib`, which imports nothing for it); None when there is none.
    ModuleSourceError for a module without Python source (compiled, built in)."""
    parts = dotted.split(".")
    if not all(p.isidentifier() for p in parts):
        return None
    try:
        spec = importlib.util.find_spec(parts[0])
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    origin = spec.origin if spec.has_location else None
    if spec.origin in ("built-in", "frozen") or (origin is not None and not origin.endswith(".py")):
        where = Path(origin).name if origin else spec.origin
        raise ModuleSourceError(f"module:{dotted}: {parts[0]} has no Python source ({where})")
    if spec.submodule_search_locations is None:
        return Module(parts[0], Path(origin), None) if len(parts) == 1 and origin else None
    folders = [Path(p) for p in spec.submodule_search_locations]
    module = Module(parts[0], Path(origin) if origin else None, folders[0])
    for part in parts[1:]:
        if module.folder is None:
            return None
        name = f"{module.name}.{part}"
        if (module.folder / part / "__init__.py").is_file():
            module = Module(name, module.folder / part / "__init__.py", module.folder / part)
        elif (module.folder / f"{part}.py").is_file():
            module = Module(name, module.folder / f"{part}.py", None)
        elif (module.folder / part).is_dir():
            module = Module(name, None, module.folder / part)
        else:
            return None
    return module


def walk(module: Module) -> list[Module]:
    """The module and, for a package, its modules and subpackages (name order; private and test ones left out)."""
    out = [module] if module.path is not None else []
    if module.folder is None:
        return out
    for entry in sorted(module.folder.iterdir()):
        stem = entry.stem if entry.suffix == ".py" else entry.name
        if stem.startswith("_") or stem in _TEST_NAMES or stem.startswith("test_") or not stem.isidentifier():
            continue
        if entry.is_file() and entry.suffix == ".py":
            out.append(Module(f"{module.name}.{stem}", entry, None))
        elif entry.is_dir() and (entry / "__init__.py").is_file():
            out += walk(Module(f"{module.name}.{stem}", entry / "__init__.py", entry))
    return out


def resolve_target(target: str) -> tuple[list[Module], str | None]:
    """(modules to read, the one function named or None) of `PKG[.SUB]` or `PKG.SUB.func`."""
    module = locate(target)
    if module is not None:
        return walk(module), None
    parent, _, function = target.rpartition(".")
    module = locate(parent) if parent else None
    if module is None or module.path is None:
        raise ModuleSourceError(f"module:{target}: no importable module or function of that name on sys.path "
                                "(install the package in this venv or put its folder on PYTHONPATH)")
    return [module], function


class _Package:
    """The parsed modules of one top-level package (each file read once)."""

    def __init__(self, top: str):
        self.top = top
        self.trees: dict[Path, ast.Module] = {}

    def tree(self, module: Module) -> ast.Module:
        if module.path is None:
            return ast.Module(body=[], type_ignores=[])
        if module.path not in self.trees:
            try:
                self.trees[module.path] = parse_quietly(module.path.read_text(encoding="utf-8"))
            except UnicodeDecodeError as e:
                raise ModuleSourceError(f"{module.path}: not UTF-8 ({e.reason} at byte {e.start})") from None
            except SyntaxError as e:
                raise ModuleSourceError(f"{module.path}:{e.lineno}: does not parse ({e.msg})") from None
        return self.trees[module.path]

    def own(self, name: str | None) -> bool:
        return name is not None and name.split(".")[0] == self.top

    def bundle(self, module: Module, function: str) -> str:
        """The code `function` of `module` reaches, with what it imports from its own package
        inlined (each module's part once, dependencies first); _Skip when that cannot be done."""
        needs: dict[str, set[str]] = {module.name: {function}}
        modules = {module.name: module}
        parts: dict[str, list[ast.stmt]] = {}
        edges: dict[str, list[str]] = {}
        changed = True
        while changed:  # a fixpoint over the modules: a name inlined from one may need more of another
            changed = False
            for name in list(needs):
                parts[name], edges[name], wanted = self._reach(modules[name], needs[name])
                for target, names in wanted.items():
                    modules.setdefault(target.name, target)
                    if not names <= needs.setdefault(target.name, set()):
                        needs[target.name] |= names
                        changed = True
        order: list[str] = []

        def visit(name: str) -> None:  # dependencies first (an import cycle keeps the first order)
            if name not in order:
                order.append(name)
                for dep in edges[name]:
                    visit(dep)

        visit(module.name)
        order.reverse()
        bound: dict[str, str] = {}
        imports: set[str] = set()  # the same import in two modules binds the same thing: kept once, no clash
        body = []
        for name in order:
            for stmt in parts[name]:
                if isinstance(stmt, (ast.Import, ast.ImportFrom)):
                    if (key := ast.dump(stmt)) in imports:
                        continue
                    imports.add(key)
                for b in binds(stmt):
                    if bound.setdefault(b, name) != name:
                        raise _Skip("clash", f"{b} in {bound[b]} and {name}")
                body.append(stmt)
        self._check_imports(body)
        return ast.unparse(ast.Module(body=body, type_ignores=[]))

    def _reach(self, module: Module, roots: set[str]) -> tuple[list[ast.stmt], list[str], dict[Module, set[str]]]:
        """The statements of `module` that `roots` reach (imports from the package replaced by
        `alias = name` where renamed), the modules they import from, and the names needed of each."""
        tree = copy.deepcopy(self.tree(module))
        borrowed = self._namespaces(module, tree)
        defined = {n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.ClassDef)}
        body = [s for s in tree.body if not is_demo_code(s, defined) and not _never_runs(s)]
        # a top-level try/if/with that imports from the package cannot run alone: it goes when the
        # code reached reads nothing it binds (`try: from ._version import V` in an __init__)
        guarded = [s for s in body if binds(s) == set() and any(self._own_import(n) for n in ast.walk(s))]
        kept = keep_reachable([s for s in body if s not in guarded], set(roots))
        read = set(roots) | {n.id for stmt in kept for n in ast.walk(stmt) if isinstance(n, ast.Name)}
        for stmt in guarded:
            hit = read & {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name)} | read & {
                (a.asname or a.name) for n in ast.walk(stmt) if isinstance(n, ast.ImportFrom) for a in n.names}
            if hit:
                raise _Skip("nested", f"{sorted(hit)[0]} bound in a top-level block")
        out, deps, wanted = [], [], {}
        for name in sorted(read & set(borrowed)):  # `mod.name` became `name`: inlined from mod
            wanted.setdefault(borrowed[name], set()).add(name)
            deps.append(borrowed[name].name)
        for stmt in kept:
            if isinstance(stmt, ast.Import) and any(self.own(a.name) for a in stmt.names):
                raise _Skip("namespace", f"import {stmt.names[0].name}")
            if not (isinstance(stmt, ast.ImportFrom) and (stmt.level or self.own(stmt.module))):
                out.append(stmt)
                continue
            source = self._absolute(module, stmt)
            target = locate(source)
            for alias in stmt.names:
                if alias.name == "*" or target is None or locate(f"{source}.{alias.name}") is not None:
                    raise _Skip("namespace", f"from {source} import {alias.name}")
                if alias.name not in _top_names(self.tree(target)):
                    raise _Skip("unresolved", f"{alias.name} from {source}")
                wanted.setdefault(target, set()).add(alias.name)
                if alias.asname and alias.asname != alias.name:
                    out.append(ast.Assign(targets=[ast.Name(alias.asname, ast.Store())], value=ast.Name(alias.name, ast.Load()),
                                          lineno=0))
            deps.append(target.name)
        return out, deps, wanted

    def _namespaces(self, module: Module, tree: ast.Module) -> dict[str, Module]:
        """Rewrite `mod.name` to `name` where `mod` is a module of the package imported at the top
        (`from . import mod`, `from pkg import mod`, `import pkg.mod`) and `name` is defined at its top
        and not in this module; such an import goes once nothing else uses it. Returns the names
        rewritten and the module each comes from (to inline); other uses keep the import (skipped)."""
        aliases: dict[str, Module] = {}
        for stmt in tree.body:
            if isinstance(stmt, ast.ImportFrom) and (stmt.level or self.own(stmt.module)):
                source = self._absolute(module, stmt)
                for a in stmt.names:
                    if a.name != "*" and (target := locate(f"{source}.{a.name}")) is not None:
                        aliases[a.asname or a.name] = target
            elif isinstance(stmt, ast.Import):
                for a in stmt.names:
                    if self.own(a.name) and (target := locate(a.name if a.asname else a.name.split(".")[0])):
                        aliases[a.asname or a.name.split(".")[0]] = target
        if not aliases:
            return {}
        local = _top_names(tree) - set(aliases)
        borrowed: dict[str, Module] = {}
        package = self

        class Rewrite(ast.NodeTransformer):
            def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
                chain, base = [], node
                while isinstance(base, ast.Attribute):
                    chain.append(base.attr)
                    base = base.value
                if not (isinstance(base, ast.Name) and base.id in aliases and isinstance(node.ctx, ast.Load)):
                    return self.generic_visit(node)
                target, chain = aliases[base.id], chain[::-1]
                while len(chain) > 1 and target.folder is not None and (sub := locate(f"{target.name}.{chain[0]}")):
                    target, chain = sub, chain[1:]
                name = chain[0]
                if name in local or name not in _top_names(package.tree(target)) or borrowed.get(name, target) != target:
                    return self.generic_visit(node)
                borrowed[name] = target
                out: ast.expr = ast.Name(name, ast.Load())
                for attr in chain[1:]:
                    out = ast.Attribute(out, attr, ast.Load())
                return ast.copy_location(out, node)

        Rewrite().visit(tree)
        used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
        for stmt in tree.body:  # an import whose every use was rewritten binds nothing still read
            if isinstance(stmt, ast.Import | ast.ImportFrom):
                stmt.names = [a for a in stmt.names if (a.asname or a.name.split(".")[0]) not in aliases
                              or (a.asname or a.name.split(".")[0]) in used]
        tree.body = [s for s in tree.body if not isinstance(s, ast.Import | ast.ImportFrom) or s.names]
        return borrowed

    def _own_import(self, node: ast.AST) -> bool:
        return (isinstance(node, ast.ImportFrom) and bool(node.level or self.own(node.module))) or (
            isinstance(node, ast.Import) and any(self.own(a.name) for a in node.names))

    def _absolute(self, module: Module, stmt: ast.ImportFrom) -> str:
        if not stmt.level:
            return stmt.module or ""
        base = module.name.split(".")
        if module.folder is None:  # a plain module: level 1 is its package
            base = base[:-1]
        base = base[: len(base) - (stmt.level - 1)]
        return ".".join(base + ([stmt.module] if stmt.module else []))

    def _check_imports(self, body: list[ast.stmt]) -> None:
        for node in (n for stmt in body for n in ast.walk(stmt)):
            if self._own_import(node):
                raise _Skip("nested", ast.unparse(node))
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module] if isinstance(node, ast.ImportFrom) and node.module else [])
            for name in names:
                top = name.split(".")[0]
                if top in NETWORK_MODULES:
                    raise _Skip("network", top)
                if importlib.util.find_spec(top) is None:
                    raise _Skip("missing", top)


def _never_runs(stmt: ast.stmt) -> bool:
    """`from __future__` (it must stay first: the inlined code would move it) and `if TYPE_CHECKING:` blocks."""
    if isinstance(stmt, ast.ImportFrom):
        return stmt.module == "__future__"
    return isinstance(stmt, ast.If) and "TYPE_CHECKING" in ast.unparse(stmt.test)


def _top_names(tree: ast.Module) -> set[str]:
    return {b for stmt in tree.body for b in binds(stmt)}


def binds(stmt: ast.stmt) -> set[str]:
    if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return {stmt.name}
    if isinstance(stmt, ast.Import | ast.ImportFrom):
        return {(a.asname or a.name).split(".")[0] for a in stmt.names}
    if isinstance(stmt, ast.Assign | ast.AnnAssign | ast.AugAssign):
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return set()


def _public_names(tree: ast.Module) -> set[str] | None:
    """The literal `__all__` of a module, or None when it has none."""
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in stmt.targets):
            try:
                return {str(n) for n in ast.literal_eval(stmt.value)}
            except (ValueError, TypeError, SyntaxError):
                return None
    return None


@dataclass(frozen=True)
class ModuleFunction:
    """One function or class of a `module:` target: its task id, its bundled code, its docstring."""

    task_id: str  # the qualified name, PKG.SUB.func
    name: str
    code: str  # what the function reaches, its package's imports inlined (original names: the builder anonymises)
    docstring: str
    is_class: bool = False  # a class: a row of the stateful domain (aac/data/classes.py)


def module_functions(target: str) -> Iterator[ModuleFunction | tuple[str, str]]:
    """Each function and class of `target` (`PKG[.SUB]`, `PKG.SUB.func` or `PKG.SUB.Class`) in file
    order, or (qualified name, reason) for one skipped; ModuleSourceError for a target that names nothing."""
    modules, only = resolve_target(target)
    package = _Package(target.split(".")[0])
    for module in modules:
        tree = package.tree(module)
        public = _public_names(tree)
        found = False
        for node in tree.body:
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                continue
            task_id = f"{module.name}.{node.name}"
            if only is not None:
                if node.name != only:
                    continue
            elif node.name.startswith("_") or (public is not None and node.name not in public):
                yield task_id, SKIP_REASONS["private" if node.name.startswith("_") else "unlisted"]
                continue
            found = True
            if isinstance(node, ast.AsyncFunctionDef):
                yield task_id, SKIP_REASONS["async"]
                continue
            try:
                code = package.bundle(module, node.name)
            except _Skip as e:  # counted by reason; the module a reason names is worth seeing
                yield task_id, str(e) if e.key in ("missing", "network") else SKIP_REASONS[e.key]
                continue
            yield ModuleFunction(task_id, node.name, code, ast.get_docstring(node) or "", isinstance(node, ast.ClassDef))
        if only is not None and not found:
            raise ModuleSourceError(f"module:{target}: {module.name} defines no top-level function or class {only!r}")
