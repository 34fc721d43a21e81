"""Seeds from a package's own tests, read by AST and never run: what its tests call is the builder's
first input, as doctests are (aac/data/sources.py: `doctest_calls`).

Test files are those in the package (`test_*.py`, `*_test.py`, `conftest.py`, every file under a `test`
or `tests` folder) and beside it (the same names in the folder holding the package, and under its
`test`/`tests` folders) that import the package. In each, a call is resolved through the file's
imports (`from pkg.mod import f`, `import pkg.mod as m` then `m.f(...)`, `from pkg.mod import *`,
relative imports inside the package) to a dotted name of the package, and kept when its arguments
are literals (or names bound to one in the same scope):
- every such call is a seed of the function it names (`calls`);
- `x = Cls(...)` followed by `x.method(...)` calls (and `x.attr` reads, which name a property) is a
  sequence of the class it names (`sequences`), in statement order within one test; the object may
  also come from a fixture (a function returning or yielding it, taken as a test's parameter of that
  name) or from `setUp` (`self.x = Cls(...)`, for each test method of the class).
A call whose arguments are not literals is left out of its sequence; a test's sequences end with it.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from aac.data.anonymize import parse_quietly

MAX_FILES = 2000  # test files looked at per package, in path order (the standard library's test/ has 820)
MAX_FILE_BYTES = 1_000_000
_TEST_DIRS = ("test", "tests")
_SKIP_DIRS = {"__pycache__", ".git", "node_modules", ".tox", ".venv", "venv", "site-packages"}
READ = "<read>"  # a step that reads an attribute (a property, if the class has one of that name)
Args = tuple[tuple, dict]  # a call's literal positional and keyword arguments (the fields of aac.data.sources.SeedCall)


@dataclass
class TestSeeds:
    """What a package's tests call: per dotted name (`pkg.mod.f`), its literal calls; per class,
    its call sequences, each `[(name, call), ...]` starting with the constructor (`new`)."""

    calls: dict[str, list[Args]] = field(default_factory=dict)
    sequences: dict[str, list[list[tuple[str, Args]]]] = field(default_factory=dict)
    files: int = 0

    def calls_of(self, qualified: str) -> list[Args]:
        return [c for key in _aliases(qualified) for c in self.calls.get(key, [])]

    def sequences_of(self, qualified: str) -> list[list[tuple[str, Args]]]:
        return [s for key in _aliases(qualified) for s in self.sequences.get(key, [])]


def _aliases(qualified: str) -> list[str]:
    """`pkg.mod.sub.f` and the names a package re-exporting it gives it: `pkg.mod.f`, `pkg.f`."""
    module, _, name = qualified.rpartition(".")
    parts = module.split(".")
    return [".".join(parts[:k] + [name]) for k in range(len(parts), 0, -1)]


def package_tests(top: str, folder: Path | None, path: Path | None) -> TestSeeds:
    """The seeds of the tests of package `top` (its folder, or for a plain module its file)."""
    seeds = TestSeeds()
    files = list(_test_files(top, folder, path))[:MAX_FILES]
    fixtures: dict[str, tuple[str, list]] = {}
    readers = []
    for file, module in files:
        try:
            text = file.read_text(encoding="utf-8")
            if not _mentions(text, top, relative=module is not None):
                continue
            tree = parse_quietly(text)
        except (OSError, UnicodeDecodeError, SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        reader = _FileReader(top, module, tree)
        if not reader.imports_package:
            continue
        readers.append(reader)
        if file.name == "conftest.py":  # a conftest's fixtures serve the tests around it
            fixtures.update(reader.fixtures({}))
    for reader in readers:
        seeds.files += 1
        for name, call in reader.calls():
            seeds.calls.setdefault(name, []).append(call)
        for name, steps in reader.sequences({**fixtures, **reader.fixtures(fixtures)}):
            seeds.sequences.setdefault(name, []).append(steps)
    return seeds


def _test_files(top: str, folder: Path | None, path: Path | None) -> Iterator[tuple[Path, str | None]]:
    """(file, its dotted module inside the package or None) of the test files in and beside the package."""
    inside = folder
    beside = (folder or path).parent if (folder or path) is not None else None
    seen: set[Path] = set()
    if inside is not None:
        for file in _walk(inside):
            rel = file.relative_to(inside)
            if _is_test(rel):
                seen.add(file)
                yield file, ".".join([top, *rel.with_suffix("").parts])
    if beside is None:
        return
    for file in sorted(beside.glob("*.py")):
        if _is_test(Path(file.name)) and file not in seen:
            yield file, None
    for name in _TEST_DIRS:
        if (beside / name).is_dir() and beside / name != inside:
            for file in _walk(beside / name):
                if file not in seen:
                    yield file, None


def _walk(folder: Path) -> Iterator[Path]:
    try:
        entries = sorted(folder.iterdir())
    except OSError:
        return
    for entry in entries:
        if entry.is_dir() and entry.name not in _SKIP_DIRS and not entry.name.startswith("."):
            yield from _walk(entry)
        elif entry.suffix == ".py" and entry.is_file():
            try:
                if entry.stat().st_size <= MAX_FILE_BYTES:
                    yield entry
            except OSError:
                continue


def _is_test(rel: Path) -> bool:
    stem = rel.stem
    return (stem.startswith("test_") or stem.endswith("_test") or stem == "conftest"
            or any(part in _TEST_DIRS for part in rel.parts[:-1]))


# ---------------------------------------------------------------- one file


class _FileReader:
    """The calls and sequences of one test file, its imports resolved to the package's dotted names."""

    def __init__(self, top: str, module: str | None, tree: ast.Module):
        self.top, self.module, self.tree = top, module, tree
        self.names: dict[str, str] = {}  # local name -> dotted name it stands for
        self.stars: list[str] = []  # modules of the package imported with *
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    if self._own(a.name):
                        self.names[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
            elif isinstance(node, ast.ImportFrom):
                source = self._absolute(node)
                if source is None or not self._own(source):
                    continue
                for a in node.names:
                    if a.name == "*":
                        self.stars.append(source)
                    else:
                        self.names[a.asname or a.name] = f"{source}.{a.name}"
        self.imports_package = bool(self.names or self.stars)
        self.constants: dict[str, object] = {}  # the module's top-level names bound to literals
        for stmt in tree.body:
            _bind_literals(stmt, self.constants)

    def _own(self, dotted: str) -> bool:
        return dotted.split(".")[0] == self.top

    def _absolute(self, node: ast.ImportFrom) -> str | None:
        if not node.level:
            return node.module
        if self.module is None:
            return None
        base = self.module.split(".")[:-node.level]
        return ".".join(base + ([node.module] if node.module else [])) or None

    def dotted(self, func: ast.expr) -> str | None:
        """The package's dotted name a call's function stands for, or None."""
        attrs = []
        while isinstance(func, ast.Attribute):
            attrs.append(func.attr)
            func = func.value
        if not isinstance(func, ast.Name):
            return None
        if func.id in self.names:
            return ".".join([self.names[func.id], *reversed(attrs)])
        if not attrs and self.stars:
            return f"{self.stars[0]}.{func.id}"
        return None

    # ------------------------------------------------------------ functions
    def calls(self) -> Iterator[tuple[str, Args]]:
        for scope, bound in _scopes(self.tree, self.constants):
            for node in _calls_in(scope):
                name = self.dotted(node.func)
                call = name and _literal_call(node, bound)
                if call:
                    yield name, call

    # ------------------------------------------------------------ classes
    def fixtures(self, known: dict[str, tuple[str, list]]) -> dict[str, tuple[str, list]]:
        """{function name: (class, steps)} of the functions that return or yield an object they built."""
        out = {}
        for fn in _functions(self.tree):
            objects, _ = self._play(fn, known, {})
            for node in ast.walk(fn):
                key = _key(node.value) if isinstance(node, ast.Return | ast.Yield) else None
                if key in objects:
                    out[fn.name] = objects[key]
        return out

    def sequences(self, fixtures: dict[str, tuple[str, list]]) -> Iterator[tuple[str, list]]:
        """(class, steps) of every object the file's tests build."""
        for cls in (n for n in self.tree.body if isinstance(n, ast.ClassDef)):
            setup = next((n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name in ("setUp", "setup_method")),
                         None)
            prefix = self._play(setup, fixtures, {})[0] if setup else {}
            for fn in cls.body:
                if isinstance(fn, ast.FunctionDef) and fn is not setup and fn.name.startswith("test"):
                    yield from _all(*self._play(fn, fixtures, prefix))
        for fn in self.tree.body:
            if isinstance(fn, ast.FunctionDef) and fn.name not in fixtures:
                yield from _all(*self._play(fn, fixtures, {}))
        yield from _all(*self._play(self.tree, {}, {}))

    def _play(self, scope: ast.AST, fixtures: dict, prefix: dict) -> tuple[dict, list]:
        """Walk one function (or the module's top level) in statement order: ({target: (class, steps)}
        of the objects alive at its end, [(class, steps)] of those done with before it)."""
        objects = {k: (c, list(s)) for k, (c, s) in prefix.items()}
        if isinstance(scope, ast.FunctionDef):
            for arg in scope.args.args:
                if arg.arg in fixtures:
                    name, steps = fixtures[arg.arg]
                    objects[arg.arg] = (name, list(steps))
        finished: list = []
        bound = dict(self.constants) if isinstance(scope, ast.FunctionDef) else {}
        for stmt in _statements(scope.body if isinstance(scope, ast.FunctionDef | ast.Module) else []):
            _bind_literals(stmt, bound)
            target = value = built = None
            if isinstance(stmt, ast.Assign | ast.AnnAssign) and stmt.value is not None:
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                target = _key(targets[0]) if len(targets) == 1 else None
                value = stmt.value
                built = self._construct(value, bound) if target else None
            nodes = _nodes_in(stmt, skip=value if built else None)
            called = {id(n.func) for n in nodes if isinstance(n, ast.Call)}
            for node in nodes:
                self._step(node, objects, finished, bound, called)
            if target is not None:
                if target in objects:
                    finished.append(objects.pop(target))
                if built is not None:
                    objects[target] = built
        return objects, finished

    def _construct(self, value: ast.expr, bound: dict) -> tuple[str, list] | None:
        """(class, [("new", call)]) of Cls(literals), or None."""
        name = self.dotted(value.func) if isinstance(value, ast.Call) else None
        call = name and _literal_call(value, bound)
        return (name, [("new", call)]) if call else None

    def _step(self, node: ast.AST, objects: dict, finished: list, bound: dict, called: set[int]) -> None:
        """A method call or attribute read on an object held, or Cls(...).m(...) as an expression."""
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            held = _key(node.func.value)
            call = _literal_call(node, bound)
            if held in objects:
                if call:
                    objects[held][1].append((node.func.attr, call))
            elif call and (built := self._construct(node.func.value, bound)) is not None:
                finished.append((built[0], built[1] + [(node.func.attr, call)]))
        elif (isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load) and id(node) not in called
              and _key(node.value) in objects and not node.attr.startswith("_")):
            objects[_key(node.value)][1].append((READ + node.attr, ((), {})))


def _all(objects: dict, finished: list) -> Iterator[tuple[str, list]]:
    for name, steps in finished + list(objects.values()):
        yield name, list(steps)


def _key(node: ast.expr | None) -> str | None:
    """What an object is held in: a name, or `self.attr`."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return f"self.{node.attr}"
    return None


def _functions(tree: ast.Module) -> Iterator[ast.FunctionDef]:
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            yield node
        elif isinstance(node, ast.ClassDef):
            yield from (n for n in node.body if isinstance(n, ast.FunctionDef))


def _scopes(tree: ast.Module, bound: dict[str, object]) -> Iterator[tuple[ast.AST, dict]]:
    """The module and each function in it, with the literal names bound in each (`bound`: the module's)."""
    yield ast.Module(body=[s for s in tree.body if not isinstance(s, ast.FunctionDef | ast.ClassDef)],
                     type_ignores=[]), dict(bound)
    for fn in (n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)):
        local = dict(bound)
        for stmt in _statements(fn.body):
            _bind_literals(stmt, local)
        yield fn, local


def _statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Statements in source order, compound ones followed by the statements of their blocks."""
    for stmt in body:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        yield stmt
        for name in ("body", "handlers", "orelse", "finalbody"):
            for sub in getattr(stmt, name, None) or []:
                yield from _statements(sub.body if isinstance(sub, ast.ExceptHandler) else [sub])


def _nodes_in(stmt: ast.stmt, skip: ast.AST | None = None) -> list[ast.AST]:
    """The expression nodes of a statement's own line(s) (not of its blocks), in source order."""
    roots = [v for name, v in ast.iter_fields(stmt) if name not in ("body", "handlers", "orelse", "finalbody")]
    nodes: list[ast.AST] = []
    stack = [r for v in roots for r in (v if isinstance(v, list) else [v]) if isinstance(r, ast.AST)]
    while stack:
        node = stack.pop()
        if node is skip:
            continue
        nodes.append(node)
        stack += [c for c in ast.iter_child_nodes(node)]
    return sorted((n for n in nodes if hasattr(n, "lineno")), key=lambda n: (n.lineno, n.col_offset))


def _calls_in(scope: ast.AST) -> Iterator[ast.Call]:
    body = scope.body if isinstance(scope, ast.Module | ast.FunctionDef) else []
    for stmt in _statements(body):
        for node in _nodes_in(stmt):
            if isinstance(node, ast.Call):
                yield node


def _bind_literals(stmt: ast.stmt, bound: dict[str, object]) -> None:
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
        try:
            bound[stmt.targets[0].id] = ast.literal_eval(stmt.value)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            bound.pop(stmt.targets[0].id, None)


def _literal_call(node: ast.Call, bound: dict[str, object]) -> Args | None:
    if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
        return None

    def value(a: ast.expr):
        if isinstance(a, ast.Name) and a.id in bound:
            return bound[a.id]
        return ast.literal_eval(a)

    try:
        return (tuple(value(a) for a in node.args), {k.arg: value(k.value) for k in node.keywords})
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None


def _mentions(text: str, top: str, relative: bool) -> bool:
    """Whether a file may import package `top` (a cheap test before parsing it: a large suite beside a
    package, the standard library's `test/`, is mostly about other modules)."""
    alternatives = re.escape(top) + r"\b" + (r"|\." if relative else "")
    return re.search(rf"^\s*(?:from|import)\s+(?:{alternatives})", text, re.M) is not None


def doctest_sequences(docstrings: list[str], qualified: str) -> list[list[tuple[str, Args]]]:
    """The call sequences of a class's doctests (`>>> b = Basket()`, `>>> b.add('x', 1)`): the `>>>`
    lines of its docstrings, in order, read as one test module that imports the class by its name."""
    module, _, name = qualified.rpartition(".")
    body = ast.parse(f"from {module} import {name}").body
    for doc in docstrings:
        for line in doc.splitlines():
            if line.strip().startswith(">>> "):
                try:
                    body += parse_quietly(line.strip()[4:]).body
                except (SyntaxError, ValueError):
                    continue
    reader = _FileReader(module.split(".")[0], None, ast.Module(body=body, type_ignores=[]))
    return [steps for found, steps in reader.sequences({}) if found == qualified]
