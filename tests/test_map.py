"""The map stays exact: docs/architecture.md names every module of `aac` and none that does not exist, and no
docstring names a function, class or attribute of `aac` that does not exist. Both checks read the source
(AST), import nothing."""

from __future__ import annotations

import ast
import builtins
import functools
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "aac"
MAP = ROOT / "docs" / "architecture.md"


def _code_files() -> list[Path]:
    return sorted(p for p in PKG.rglob("*.py") if "_data" not in p.relative_to(PKG).parts)


@functools.cache
def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text())


# ---------------------------------------------------------------- every module on the map


def _table_rows(section: str) -> list[list[str]]:
    text = MAP.read_text()
    body = text[text.index(f"## {section}"):]
    body = body[: body.index("\n## ", 1)] if "\n## " in body[1:] else body
    return [[c.strip() for c in line.strip().strip("|").split("|")] for line in body.splitlines()
            if line.startswith("| `")]


def mapped_modules() -> set[str]:
    """The files the Packages table names, relative to the repository: a row's first cell names a package
    (`aac/env/`, its modules named relative to it in the second cell) or top-level modules (`aac/cli.py`)."""
    named = set()
    for place, holds, *_ in _table_rows("Packages"):
        places = re.findall(r"`([^`]+)`", place)
        package = next((p for p in places if p.startswith("aac/") and p.endswith("/")), None)
        named |= {p for p in places if p.startswith("aac/") and p.endswith(".py")}
        for name in re.findall(r"`([\w/]+\.py)`", holds):
            named.add(name if name.startswith("aac/") else f"{package or 'aac/'}{name}")
    return named


def test_the_map_names_every_module_and_no_other():
    actual = {str(p.relative_to(ROOT)) for p in _code_files() if p.name != "__init__.py"}
    named = mapped_modules()
    assert len(named) > 150 and "aac/env/domains/base.py" in named and "aac/cli.py" in named  # the table parsed
    assert not actual - named, f"modules missing from docs/architecture.md's Packages table: {sorted(actual - named)}"
    assert not named - actual, f"docs/architecture.md names modules that do not exist: {sorted(named - actual)}"


# ---------------------------------------------------------------- names in docstrings


@functools.cache
def _modules() -> dict[str, Path]:
    """Dotted module name -> file, packages included (`aac.env` -> aac/env/__init__.py)."""
    out = {}
    for p in _code_files():
        parts = p.relative_to(ROOT).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = p
    return out


def _self_attributes(cls: ast.ClassDef) -> set[str]:
    return {t.attr for f in cls.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) for n in ast.walk(f)
            for t in (n.targets if isinstance(n, ast.Assign) else [n.target] if isinstance(n, (ast.AnnAssign, ast.AugAssign)) else [])
            for t in ([*t.elts] if isinstance(t, ast.Tuple) else [t])
            if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"}


def _body_names(body: list[ast.stmt]) -> set[str]:
    names = set()
    for n in body:
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(n.name)
        elif isinstance(n, ast.Assign):
            names |= {e.id for t in n.targets for e in ([*t.elts] if isinstance(t, ast.Tuple) else [t])
                      if isinstance(e, ast.Name)}
        elif isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name):
            names.add(n.target.id)
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in n.names}
        elif isinstance(n, (ast.If, ast.Try)):  # `if TYPE_CHECKING:`, guarded imports
            names |= _body_names(n.body) | _body_names(getattr(n, "orelse", []))
    return names


@functools.cache
def _classes() -> dict[str, list[tuple[ast.ClassDef, Path]]]:
    out: dict[str, list[tuple[ast.ClassDef, Path]]] = {}
    for p in _code_files():
        for n in ast.walk(_tree(p)):
            if isinstance(n, ast.ClassDef):
                out.setdefault(n.name, []).append((n, p))
    return out


def _members(cls: ast.ClassDef, seen: frozenset = frozenset()) -> set[str]:
    """What `Class.x` may name: its body's names, `self.x` attributes, and the same of its aac base classes."""
    names = _body_names(cls.body) | _self_attributes(cls)
    for base in cls.bases:
        name = base.id if isinstance(base, ast.Name) else base.attr if isinstance(base, ast.Attribute) else None
        for parent, _ in _classes().get(name, []) if name not in seen else []:
            names |= _members(parent, seen | {cls.name})
    return names


@functools.cache
def _known_names() -> set[str]:
    """What a bare name may be: every function, method, class, parameter and keyword of aac, every name it
    imports or reads as an attribute of another's objects (`model.disable_adapter()`: peft's), and the names it
    spells as strings (`test_func`, the black box's)."""
    names = set()
    for p in _code_files():
        for n in ast.walk(_tree(p)):
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(n.name)
            elif isinstance(n, ast.Attribute):
                names.add(n.attr)
            elif isinstance(n, ast.arg):
                names.add(n.arg)
            elif isinstance(n, ast.keyword) and n.arg:
                names.add(n.arg)
            elif isinstance(n, ast.alias):
                names |= {n.asname or n.name.rsplit(".", 1)[-1]}
            elif isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value.isidentifier():
                names.add(n.value)
    return names


def _locals(node: ast.AST) -> set[str]:
    """The parameters and local names of the function (or class) a docstring documents: `progress(...)` in
    its docstring is a call of its own argument."""
    if isinstance(node, ast.Module):
        return set()
    return {a.arg for n in ast.walk(node) if isinstance(n, ast.arguments)
            for a in [*n.posonlyargs, *n.args, *n.kwonlyargs, n.vararg, n.kwarg] if a is not None} | \
        {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)} | \
        {n.name for n in ast.walk(node) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n is not node}


@functools.cache
def _config_keys() -> set[str]:
    """Dotted config keys (`rollout.max_tokens_per_turn`) and their groups: names of settings, not of code."""
    from aac.config import TrainConfig
    from aac.settings import setting_fields

    keys = {key for key, _ in setting_fields(TrainConfig)}
    return keys | {k.rsplit(".", i)[0] for k in keys for i in range(1, k.count(".") + 1)}


def _visible_modules(path: Path) -> set[str]:
    """The short names under which `path`'s docstrings may name an aac module: the modules it imports (their
    bound names) and its package's own modules."""
    names = {p.stem for p in path.parent.glob("*.py")}
    for n in ast.walk(_tree(path)):
        if isinstance(n, ast.ImportFrom) and (n.module or "").startswith("aac"):
            names |= {a.asname or a.name for a in n.names} | {n.module.rsplit(".", 1)[-1]}
        elif isinstance(n, ast.Import):
            names |= {a.asname or a.name.rsplit(".", 1)[-1] for a in n.names if a.name.startswith("aac")}
    return names


@functools.cache
def _config_leaves() -> set[str]:
    """The last part of each config key (`max_tokens_per_turn`): a bare setting's name."""
    return {k.rsplit(".", 1)[-1] for k in _config_keys()}


def _resolves(dotted: str, path: Path) -> bool | None:
    """Whether `dotted`, in a docstring of `path`, names something of aac: True, False, or None when it is no
    name of aac's (a third party's, a variable's, another tool's config key)."""
    parts = dotted.split(".")
    modules = _modules()
    if parts[0] == "aac":  # a full path: the longest module prefix, then names inside it
        for cut in range(len(parts), 0, -1):
            module = ".".join(parts[:cut])
            if module in modules:
                return _inside(modules[module], parts[cut:])
        return False
    if path.is_relative_to(PKG / "skyrl") and parts[0] in SKYRL_SECTIONS:
        return None
    # a module `path` imports or sits beside, by its last name (`checkpoint.save`), or a class (`Trainer.evaluate`)
    visible = _visible_modules(path)
    candidates = [p for m, p in modules.items() if m.rsplit(".", 1)[-1] == parts[0] and parts[0] in visible]
    classes = _classes().get(parts[0], [])
    if not candidates and not classes:
        return None
    return any(_inside(p, parts[1:]) for p in candidates) or any(_in_class(c, parts[1:]) for c, _ in classes)


def _inside(path: Path, rest: list[str]) -> bool:
    if not rest:
        return True
    tree = _tree(path)
    if path.name == "__init__.py":  # a subpackage's module: aac.env.domains
        sub = path.parent / rest[0]
        if (sub.with_suffix(".py")).is_file():
            return _inside(sub.with_suffix(".py"), rest[1:])
        if (sub / "__init__.py").is_file():
            return _inside(sub / "__init__.py", rest[1:])
    if rest[0] not in _body_names(tree.body) and not any(rest[0] in _members(c) for c in tree.body
                                                         if isinstance(c, ast.ClassDef)):
        return False
    cls = next((c for c in tree.body if isinstance(c, ast.ClassDef) and c.name == rest[0]), None)
    return cls is None or _in_class(cls, rest[1:])


def _in_class(cls: ast.ClassDef, rest: list[str]) -> bool:
    return not rest or rest[0] in _members(cls)


NAME = re.compile(r"^(?P<name>[A-Za-z_][\w.]*?)(?P<call>\(.*\))?$")
# a bare name that looks like code: snake_case with an underscore (`build_run`) or CamelCase (`HeldOutEval`)
CODE_LIKE = re.compile(r"^(_?[a-z][a-z0-9]*_[a-z0-9_]+|[A-Z][a-z0-9]+[A-Z][A-Za-z0-9]*)$")
# bare names in docstrings that are others' code, examples or math, not aac's
EXAMPLES = {"setup": "torchtune's recipe method", "make": "skyrl_gym.make", "m2": "a stateful query: a method of the "
            "black box", "down": "the MLP's down projection, written as math", "load_weights": "vLLM's model method",
            "save_to_disk": "the datasets library's", "get_forecast": "a web service's operation, an example",
            "b_stop": "a reward term, written as math"}
SKYRL_SECTIONS = {"trainer", "generator", "data", "environment"}  # aac/skyrl/'s docstrings name SkyRL's config keys
FILES = re.compile(r"\.(py|json|jsonl|md|png|html|yaml|csv|txt|pt|gz|parquet|safetensors)$")  # a file, not code


def named_in_docstrings() -> list[tuple[str, str]]:
    """(where, span) of every backticked span of a docstring that names code: `module.name`, `Class.member`,
    `aac.x.y`, a call `name(...)` or a code-like bare name (`build_run`, `HeldOutEval`), unless it is a parameter
    or local name of what the docstring documents."""
    found = []
    for p in _code_files():
        for node in ast.walk(_tree(p)):
            if not isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            doc = ast.get_docstring(node, clean=False) or ""
            for span in re.findall(r"`([^`\n]+)`", doc):
                m = NAME.match(span)
                if not m or FILES.search(m.group("name")):
                    continue
                if not ("." in m.group("name") or m.group("call") or CODE_LIKE.match(m.group("name"))):
                    continue
                if "." not in m.group("name") and m.group("name") in _locals(node):
                    continue
                found.append((f"{p.relative_to(ROOT)}:{getattr(node, 'name', '<module>')}", span))
    return found


def unresolved(spans: list[tuple[str, str]]) -> list[str]:
    bad = []
    for where, span in spans:
        name = NAME.match(span).group("name")
        if name in _config_keys() or name in _config_leaves() or name.split(".")[0] in ("self", "cfg"):
            continue
        if "." not in name:  # a bare name: aac's function, class or parameter, a builtin, a callable instance
            called = any(c.lower() == name and any("__call__" in _members(k) for k, _ in ks) for c, ks in _classes().items())
            if name not in _known_names() and not hasattr(builtins, name) and name not in EXAMPLES and not called:
                bad.append(f"{where}: `{span}`")
            continue
        if _resolves(name, ROOT / where.split(":")[0]) is False:
            bad.append(f"{where}: `{span}`")
    return bad


def test_no_docstring_names_code_that_does_not_exist():
    spans = named_in_docstrings()
    assert len(spans) > 600  # the check reads what it should
    assert unresolved(spans) == []


def test_the_name_check_finds_a_stale_name():
    where = "aac/training/trainer.py:Trainer"  # imports run_dir (through state), fanout, ...
    assert unresolved([(where, "aac.run_dir.adapter_of"), (where, "fanout.launch_step(workers)"), (where, "Trainer.launch"),
                       (where, "build_run(cfg)"), (where, "rollout.max_tokens_per_turn"), (where, "torch.set_num_threads"),
                       ("aac/skyrl/translate.py:<module>", "generator.max_turns")]) == []  # SkyRL's key
    stale = ["aac.checkpoint.newest_intact", "play_step(workers)", "Trainer.play_step", "fanout.play_step",
             "checkpoint.run_dir_of", "play_step", "merged_weights", "RolloutAheadQueue"]
    assert unresolved([(where, s) for s in stale]) == [f"{where}: `{s}`" for s in stale]
