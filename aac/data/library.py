"""The `library` builder: real library functions under the unseen name `test_func`, as PAU rows.

    python -m aac.data.library out=DIR [modules=math,numpy] [seed=S]   # DIR/{train,test}.jsonl, meta.json

Candidates are the public callables of numpy (top level) and of standard-library modules (math,
statistics, itertools, string, textwrap, bisect, heapq, operator, functools, collections); this
process only introspects them (signature, docstring), never calls them. Per function:
- the gold description is the first paragraph of its docstring (a leading signature line skipped);
- the stored `test_func_validated` is a wrapper `def test_func(arg0, ...)` that imports the module
  inside and calls the real function (`wrapper_source`). Outputs are made literal there: a numpy
  array becomes the dict `{'array': nested list, 'dtype': 'int64'}` and a numpy scalar
  `{'scalar': value, 'dtype': 'float64'}` (dicts compare exactly through the one normalisation, and
  the dtype stays visible to the agent); iterators become lists of at most ITEMS_CAP items (`{'items':
  [...], 'more': True}` when there were more); dict subclasses become dicts, deques lists. An error
  message naming the real function names `test_func` instead; a call that prints is refused.
- inputs: the docstring's own examples (`>>> f(...)` doctest lines and `f(...) --> ...` lines; literal
  arguments only, read with `ast`, never `eval`; names bound to literals by earlier doctest lines and
  `np.array(<literal>)` resolve to the literal), typed guesses (`probe_calls`) when there are none,
  then seeded type-aware mutation (aac/data/inputs.py) of what ran, in the sandbox; inputs are kept when they reach new behaviour: an output or an error type not
  seen before. Branch coverage does not apply: most of these functions are C code.
- rows: 2 context examples with distinct outputs, 4..10 test examples (the distinct outputs first);
  a row is dropped (counted by reason) when a call prints, no fast call gives a literal output, the
  real name shows in an example, or its examples do not reproduce in a fresh sandbox.
`build_splits()` is `builtin:library` (aac/data/builtin.py BUILTINS): a seeded 80/20 split by function.
"""

from __future__ import annotations

import ast
import doctest
import functools
import importlib
import inspect
import json
import platform
import random
import re
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from aac.cli import Key, UsageError, count, items, parse_keys
from aac.data.examples import Example, stored_output, two_distinct, unreproduced
from aac.data.inputs import Mutator, render
from aac.data.search import probe_calls
from aac.data.splits import split_instances
from aac.data.summary import BuildSummary, mean
from aac.env.domains import pool_preload
from aac.env.instance import Instance
from aac.env.rows import write_instances
from aac.errors import entry_point
from aac.sandbox.pool import SandboxPool
from aac.sandbox.result import CallKind
from aac.sandbox.values import canonical_json

DOMAIN = "library"
MODULES = ("math", "statistics", "itertools", "string", "textwrap", "bisect", "heapq", "operator", "functools",
           "collections", "numpy")
ITEMS_CAP = 30  # items of an iterator output kept (itertools.count never ends)
PRINTED = "PrintedOutput"  # the error type of a call that printed (such functions are dropped)
PRELOAD = pool_preload("library")  # as a library run's pools (aac.env.domains.open_pool)


@dataclass(frozen=True)
class LibraryConfig:
    seed: int = 0
    modules: tuple[str, ...] = MODULES
    only: tuple[str, ...] = ()  # qualified names (numpy.cumsum) to build, of those modules; empty: all
    rounds: int = 2  # sandbox batches per function: seeds + mutations, then mutations of the novel ones
    budget: int = 24  # mutated candidate inputs per batch
    probe_budget: int = 24  # typed guesses for a function whose docstring shows no call
    max_seeds: int = 12  # doctest calls used per function
    min_tests: int = 4
    max_tests: int = 10
    call_timeout_s: float = 0.5
    max_call_s: float = 0.1  # slower calls make poor examples (code match runs them under 0.5 s)
    max_output_chars: int = 300
    max_description_chars: int = 600
    workers: int = 2


# ---------------------------------------------------------------- the wrapper (runs in the sandbox)

_HELPERS = f'''\
def _plain(value, depth=0):
    import collections.abc
    import itertools
    kind = type(value)
    if depth > 20 or kind in (str, bytes, int, float, bool, complex, type(None)):
        return value
    if kind.__module__ == "numpy" and hasattr(value, "tolist") and hasattr(value, "dtype"):
        key = "array" if kind.__name__ == "ndarray" else "scalar"
        return {{key: _plain(value.tolist(), depth + 1), "dtype": str(value.dtype)}}
    if isinstance(value, dict):
        return {{_plain(k, depth + 1): _plain(v, depth + 1) for k, v in value.items()}}
    if isinstance(value, (list, tuple)):
        return kind(_plain(v, depth + 1) for v in value) if kind in (list, tuple) else [_plain(v, depth + 1) for v in value]
    if isinstance(value, (set, frozenset)):
        return value
    if isinstance(value, (collections.abc.Iterator, range, collections.deque)):
        items = list(itertools.islice(iter(value), {ITEMS_CAP + 1}))
        shown = [_plain(v, depth + 1) for v in items[:{ITEMS_CAP}]]
        return {{"items": shown, "more": True}} if len(items) > {ITEMS_CAP} else shown
    return value


class {PRINTED}(Exception):
    pass


def _call(function, name, *args):
    import contextlib
    import io
    import re
    printed = io.StringIO()
    try:
        with contextlib.redirect_stdout(printed):
            value = function(*args)
        value = _plain(value)
    except Exception as error:
        message = str(error)
        renamed = re.sub("(?<![A-Za-z0-9])" + re.escape(name) + "(?![A-Za-z0-9])", "test_func", message)
        if renamed == message:
            raise
        try:
            clean = type(error)(renamed)
        except Exception:
            clean = RuntimeError(renamed)
        raise clean from None
    if printed.getvalue():
        raise {PRINTED}("the function printed to stdout")
    return value
'''


def wrapper_source(qualname: str, arity: int) -> str:
    """The stored `test_func_validated`: `def test_func(arg0..)` calling `qualname` (module.name)."""
    module, name = qualname.rsplit(".", 1)
    params = ", ".join(f"arg{i}" for i in range(arity))
    return (f"# test_func is {qualname} under an unseen name (the library domain)\n{_HELPERS}\n\n"
            f"def test_func({params}):\n    import {module}\n"
            f"    return _call({qualname}, {name!r}{''.join(', ' + p for p in params.split(', ') if p)})\n")


# ---------------------------------------------------------------- candidates (introspection only)

@dataclass
class Candidate:
    qualname: str
    name: str
    function: Any
    description: str
    params: list[inspect.Parameter] | None  # positional parameters; None: no signature
    required: int  # positional parameters without a default
    variadic: bool


def name_pattern(name: str) -> re.Pattern:
    """The real name as a word (letters and digits around it do not count; `_` does)."""
    return re.compile(rf"(?<![A-Za-z0-9]){re.escape(name)}(?![A-Za-z0-9])")


def doc_paragraph(function: Callable[..., object], name: str, max_chars: int = 600) -> str:
    """The first paragraph of the docstring that is not a signature line, on one line."""
    doc = inspect.getdoc(function) or ""
    for para in re.split(r"\n\s*\n", doc):
        text = " ".join(para.split())
        if not text or re.match(rf"{re.escape(name)}\s*\(", text) or text.startswith(("-", ">>>")):
            continue
        return text if len(text) <= max_chars else text[: max_chars - 1].rsplit(" ", 1)[0] + "…"
    return ""


def _signature(function: Callable[..., object]) -> tuple[list[inspect.Parameter] | None, int, bool]:
    nin = getattr(function, "nin", None)  # a numpy ufunc has no inspectable signature
    if isinstance(nin, int) and type(function).__name__ == "ufunc":
        params = [inspect.Parameter(f"x{i}", inspect.Parameter.POSITIONAL_ONLY) for i in range(nin)]
        return params, nin, False
    try:
        sig = inspect.signature(function)
    except (TypeError, ValueError):
        return None, 0, False
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    params = [p for p in sig.parameters.values() if p.kind in kinds]
    required = sum(p.default is inspect.Parameter.empty for p in params)
    variadic = any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in sig.parameters.values())
    return params, required, variadic


def candidates(modules: tuple[str, ...], dropped: Counter, max_chars: int = 600) -> list[Candidate]:
    """Public callables of each module, once per object (aliases dropped), with documentation."""
    out, seen = [], set()
    for module_name in modules:
        module = importlib.import_module(module_name)
        for name in sorted(getattr(module, "__all__", None) or dir(module)):
            function = getattr(module, name, None)
            if name.startswith("_") or not callable(function) or inspect.ismodule(function):
                continue
            if id(function) in seen:
                dropped["alias of another candidate"] += 1
                continue
            seen.add(id(function))
            if inspect.isclass(function) and issubclass(function, BaseException):
                dropped["exception class"] += 1
                continue
            description = doc_paragraph(function, name, max_chars)
            if len(description.split()) < 3:
                dropped["no documentation"] += 1
                continue
            params, required, variadic = _signature(function)
            out.append(Candidate(f"{module_name}.{name}", name, function, description, params, required, variadic))
    return out


# ---------------------------------------------------------------- doctest calls (ast only, never eval)

class _NotLiteral(Exception):
    pass


_ARRAY_MAKERS = {"array", "asarray", "asanyarray"}
_MAX_RANGE = 64


def _value(node: ast.AST, env: dict[str, Any]) -> Any:
    """The literal `node` stands for: literals, names bound to literals earlier in the doctest,
    `np.array(<literal>)` and small `range`/`np.arange`/`list`/`tuple` of literals."""
    if isinstance(node, ast.Name) and node.id in env:
        return env[node.id]
    if isinstance(node, (ast.List, ast.Tuple)):
        items = [_value(e, env) for e in node.elts]
        return items if isinstance(node, ast.List) else tuple(items)
    if isinstance(node, ast.Dict) and None not in node.keys:
        return {_value(k, env): _value(v, env) for k, v in zip(node.keys, node.values)}
    if isinstance(node, ast.Call) and not node.keywords:
        func = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        args = [_value(a, env) for a in node.args]
        if func in _ARRAY_MAKERS and len(args) == 1 and isinstance(args[0], (list, tuple, int, float)):
            return list(args[0]) if isinstance(args[0], tuple) else args[0]
        if func in ("range", "arange") and 1 <= len(args) <= 3 and all(type(a) is int for a in args):
            items = range(*args)
            if len(items) <= _MAX_RANGE:
                return list(items)
        if func in ("list", "tuple") and len(args) == 1 and isinstance(args[0], (list, tuple, str)):
            return list(args[0]) if func == "list" else tuple(args[0])
        raise _NotLiteral
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        raise _NotLiteral from None


def _is_target(func: ast.AST, cand: Candidate) -> bool:
    if isinstance(func, ast.Name):
        return func.id == cand.name
    return isinstance(func, ast.Attribute) and func.attr == cand.name


def _positional(cand: Candidate, args: list, kwargs: dict) -> tuple | None:
    """The call's arguments as positional ones (keywords moved to their places, gaps filled with
    literal defaults); None when that cannot be done."""
    if not kwargs:
        return tuple(args)
    if cand.params is None:
        return None
    names = [p.name for p in cand.params]
    if any(k not in names[len(args):] for k in kwargs):
        return None
    last = max(names.index(k) for k in kwargs)
    out = list(args)
    for p in cand.params[len(args): last + 1]:
        if p.name in kwargs:
            out.append(kwargs[p.name])
        elif p.default is not inspect.Parameter.empty and render((p.default,)) is not None:
            out.append(p.default)
        else:
            return None
    return tuple(out)


def doctest_calls(cand: Candidate) -> list[tuple]:
    """Argument tuples of the docstring's own calls of the function (literal arguments only)."""
    doc = inspect.getdoc(cand.function) or ""
    try:
        sources = [e.source for e in doctest.DocTestParser().get_examples(doc)]
    except ValueError:  # a malformed doctest
        sources = []
    sources += [m.group(1) for m in re.finditer(r"^\s*(\w+\(.*?\))\s*-->", doc, re.M)]  # itertools' notation
    env: dict[str, Any] = {}
    calls: list[tuple] = []
    for source in sources:
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            continue
        for stmt in tree.body:
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                try:
                    env[stmt.targets[0].id] = _value(stmt.value, env)
                except _NotLiteral:
                    env.pop(stmt.targets[0].id, None)
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and _is_target(node.func, cand)):
                continue
            try:
                args = [_value(a, env) for a in node.args if not isinstance(a, ast.Starred)]
                kwargs = {k.arg: _value(k.value, env) for k in node.keywords if k.arg is not None}
            except _NotLiteral:
                continue
            if len(args) != len(node.args) or len(kwargs) != len(node.keywords):
                continue
            call = _positional(cand, args, kwargs)
            if call is not None and render(call) is not None and call not in calls:
                calls.append(call)
    return calls


def choose_arity(cand: Candidate, calls: list[tuple]) -> int | None:
    """The wrapper's arity: the commonest among the doctest calls, else the required parameters
    (2 for a variadic function without any); None when the function takes no argument."""
    if calls:
        return Counter(len(c) for c in calls).most_common(1)[0][0] or None
    if cand.params is None:
        return None
    if cand.required:
        return cand.required
    return 2 if cand.variadic else (1 if cand.params else None)


# ---------------------------------------------------------------- building one function

@functools.cache
def _probes(arity: int, n: int, seed: int) -> tuple[tuple[str, tuple], ...]:
    """Typed guesses of one arity, shared by the functions without docstring calls (drawing them
    with hypothesis costs ~0.5 s; mutation then varies them per function)."""
    return tuple(probe_calls(arity, n, seed))


@dataclass
class _Row:
    qualname: str
    instance: Instance | None = None
    reason: str | None = None
    seeds_from_doc: int = 0
    error_types: int = 0  # distinct error types the build's calls reached
    outputs_found: int = 0  # distinct outputs the build's calls reached
    leaked: int = 0  # calls whose visible text showed the real name


class _FunctionBuilder:
    def __init__(self, pool: SandboxPool, cfg: LibraryConfig):
        self.pool, self.cfg = pool, cfg

    def run(self, cand: Candidate) -> _Row:
        cfg, row = self.cfg, _Row(cand.qualname)
        rng = random.Random(f"{cfg.seed}:{cand.qualname}")
        calls = doctest_calls(cand)[: cfg.max_seeds]
        arity = choose_arity(cand, calls)
        if arity is None:
            row.reason = "no arguments or no signature"
            return row
        seeds = {text: args for args in calls if len(args) == arity and (text := render(args))}
        row.seeds_from_doc = len(seeds)
        if not seeds:
            seeds = dict(_probes(arity, cfg.probe_budget, cfg.seed))
        code = wrapper_source(cand.qualname, arity)
        leak = name_pattern(cand.name)
        examples: dict[str, Example] = {}
        behaviours: set[str] = set()  # "out:" output keys and "error:" types reached
        seen = set(seeds)
        mutator = Mutator(rng)
        batch = list(seeds.items()) + mutator.candidates(list(seeds.values()), cfg.budget, seen)
        slow = printed = not_literal = 0
        for round_ in range(cfg.rounds):
            results = self._call(code, [text for text, _ in batch])
            novel = []
            for (text, args), res in zip(batch, results):
                if res.kind is CallKind.TIMEOUT:
                    slow += 1
                    continue
                if not res.ok:
                    kind = res.error.split(":", 1)[0]  # the error's type: a behaviour of its own
                    printed += kind == PRINTED
                    row.leaked += bool(leak.search(res.error))
                    if f"error:{kind}" not in behaviours:
                        behaviours.add(f"error:{kind}")
                        novel.append(args)
                    continue
                stored = stored_output(res, cfg.max_output_chars)
                if (res.output is None and res.output_repr != "None") or stored is None:
                    not_literal += 1
                    continue
                if res.duration_s > cfg.max_call_s:
                    slow += 1
                    continue
                if leak.search(text) or leak.search(res.output_repr):
                    row.leaked += 1
                    continue
                value, key = stored
                if f"out:{key}" not in behaviours:
                    behaviours.add(f"out:{key}")
                    novel.append(args)
                examples[text] = Example(text, args, value, key, None, seed=text in seeds)
            if printed:
                row.reason = "prints"
                return row
            if round_ == cfg.rounds - 1:
                break
            batch = mutator.candidates(novel or [e.args for e in examples.values()] or list(seeds.values()),
                                       cfg.budget, seen)
        row.error_types = sum(b.startswith("error:") for b in behaviours)
        row.outputs_found = len({e.key for e in examples.values()})
        if not examples:
            row.reason = ("slow" if slow else "outputs not literals" if not_literal
                          else "name shows in every example" if row.leaked else "no input runs")
            return row
        picked = self._select(list(examples.values()))
        if isinstance(picked, str):
            row.reason = picked
            return row
        context, tests = picked
        row.instance = Instance(
            uid=cand.qualname, source=f"library:{cand.qualname.rsplit('.', 1)[0]}", code=code,
            description=cand.description, header=f"def test_func({', '.join(f'arg{i}' for i in range(arity))}):",
            train_examples=[(e.input, e.output) for e in context], test_examples=[(e.input, e.output) for e in tests],
            all_examples=[(e.input, e.output, None) for e in context], domain=DOMAIN)
        return row

    def _call(self, code: str, inputs: list[str]) -> list:
        """Sandbox results; a call slower than max_call_s is tried once more (a busy machine's wall
        time includes time descheduled)."""
        results = self.pool.call_many([(code, text) for text in inputs], timeout_s=self.cfg.call_timeout_s)
        again = [k for k, r in enumerate(results) if r.ok and r.duration_s > self.cfg.max_call_s]
        for k, res in zip(again, self.pool.call_many([(code, inputs[k]) for k in again],
                                                     timeout_s=self.cfg.call_timeout_s)):
            results[k] = res
        return results

    def _select(self, pool: list[Example]) -> tuple[list[Example], list[Example]] | str:
        """Context: 2 distinct outputs, docstring calls first; tests: one example per distinct output
        (in discovery order), then others, up to max_tests."""
        context = two_distinct(sorted(pool, key=lambda e: not e.seed))
        if len(context) < 2:
            return "no 2 distinct outputs"
        rest = [e for e in pool if e not in context]
        tests: list[Example] = []
        shown: set[str] = set()
        for e in rest:
            if e.key not in shown and len(tests) < self.cfg.max_tests:
                tests.append(e)
                shown.add(e.key)
        tests += [e for e in rest if e not in tests][: self.cfg.max_tests - len(tests)]
        if len(tests) < self.cfg.min_tests:
            return f"fewer than {self.cfg.min_tests} test examples"
        return context, tests


# ---------------------------------------------------------------- the whole set

@dataclass
class LibrarySummary(BuildSummary):
    """The functions' summary (no branch coverage: most are C code), with the rows per module, the
    rows seeded by their docstring, and per row the distinct outputs and error types the build reached."""

    source: str = DOMAIN
    kept_by_module: Counter = field(default_factory=Counter)
    rows_with_doctest_seeds: int = 0
    distinct_test_outputs: list[int] = field(default_factory=list)  # per row
    outputs_found: list[int] = field(default_factory=list)  # distinct outputs the build reached, per row
    error_types: list[int] = field(default_factory=list)  # distinct error types the build reached, per row
    leaked_calls: int = 0

    unit: ClassVar[str] = "candidate functions"
    measures_coverage: ClassVar[bool] = False

    def details(self) -> dict:
        def rounded(xs: list[float]) -> float | None:
            return None if not xs else round(mean(xs), 2)

        shown = [min(d / min(f, 10), 1.0) for d, f in zip(self.distinct_test_outputs, self.outputs_found) if f]
        return {"kept_by_module": dict(self.kept_by_module.most_common()),
                "rows_with_doctest_seeds": self.rows_with_doctest_seeds,
                "mean_distinct_test_outputs": rounded(self.distinct_test_outputs),
                "mean_share_of_found_outputs_in_tests": rounded(shown),
                "mean_error_types_reached": rounded(self.error_types),
                "rows_with_error_behaviour": sum(n > 0 for n in self.error_types),
                "calls_dropped_for_showing_the_name": self.leaked_calls}

    def detail_lines(self) -> list[str]:
        d = self.details()
        return ["  kept by module: " + ", ".join(f"{m} {n}" for m, n in d["kept_by_module"].items()),
                f"  rows seeded by their docstring's examples: {d['rows_with_doctest_seeds']}",
                f"  distinct outputs among a row's test examples: {d['mean_distinct_test_outputs']} (share of the "
                f"outputs the build found, up to 10: {d['mean_share_of_found_outputs_in_tests']})",
                f"  error types reached per row: {d['mean_error_types_reached']} "
                f"({d['rows_with_error_behaviour']} rows raise for some input)"]


def build(cfg: LibraryConfig = LibraryConfig(), limit: int | None = None) -> tuple[list[Instance], LibrarySummary]:
    """Instances of every candidate (the first `limit` ones) and the summary of the run."""
    start, summary = time.monotonic(), LibrarySummary()
    cands = [c for c in candidates(cfg.modules, summary.dropped, cfg.max_description_chars)
             if not cfg.only or c.qualname in cfg.only][:limit]
    summary.rows_in = len(cands) + sum(summary.dropped.values())
    with SandboxPool(workers=cfg.workers, preload=PRELOAD) as pool:
        builder = _FunctionBuilder(pool, cfg)
        rows = [builder.run(c) for c in cands]
    kept = [r.instance for r in rows if r.instance is not None]
    with SandboxPool(workers=cfg.workers, preload=PRELOAD) as fresh:  # nondeterminism shows in a new process
        unstable = unreproduced(kept, fresh)
    instances = []
    for row in rows:
        summary.leaked_calls += row.leaked
        reason = row.reason or ("nondeterministic" if row.qualname in unstable else None)
        if reason is not None:
            summary.dropped[reason] += 1
            continue
        inst = row.instance
        instances.append(inst)
        summary.keep(inst)
        summary.kept_by_module[row.qualname.rsplit(".", 1)[0]] += 1
        summary.rows_with_doctest_seeds += row.seeds_from_doc > 0
        summary.distinct_test_outputs.append(len({canonical_json(o) for _, o in inst.test_examples}))
        summary.outputs_found.append(row.outputs_found)
        summary.error_types.append(row.error_types)
    summary.seconds = time.monotonic() - start
    return instances, summary


def build_splits(cfg: LibraryConfig = LibraryConfig(), limit: int | None = None
                 ) -> tuple[dict[str, list[Instance]], dict, str]:
    """`builtin:library`: {train, test} (seeded 80/20 by function), its meta and the summary text."""
    instances, summary = build(cfg, limit)
    splits = split_instances(instances, cfg.seed)
    versions = {"python": platform.python_version(), "numpy": importlib.import_module("numpy").__version__}
    meta = {"seed": cfg.seed, "domain": DOMAIN, "config": asdict(cfg), "versions": versions, **summary.as_dict(),
            "sizes": {split: len(rows) for split, rows in splits.items()}}
    return splits, meta, summary.text()


USAGE = "usage: python -m aac.data.library out=DIR [modules=math,numpy] [only=NAME,...] [limit=N] [seed=S]"
KEYS = (Key("out", "folder for train.jsonl, test.jsonl and meta.json", required=True),
        Key("modules", "the modules whose functions are candidates", items, list(MODULES)),
        Key("only", "qualified names to build (numpy.cumsum,...)", items, []),
        Key("limit", "build only the first N candidate functions", count), Key("seed", "seeds the split", int, 0))


@entry_point
def main(argv: list[str] | None = None) -> int:
    a = parse_keys(argv, KEYS, USAGE, doc=__doc__.split("\n\n")[0])
    cfg = LibraryConfig(seed=a.seed, modules=tuple(a.modules), only=tuple(a.only))
    try:
        splits, meta, text = build_splits(cfg, a.limit)
    except ImportError as e:  # a module named in modules= that is not installed
        raise UsageError(f"modules={','.join(a.modules)}: {e}") from None
    out = Path(a.out)
    for split, rows in splits.items():
        write_instances(out / f"{split}.jsonl", rows)
    (out / "meta.json").write_text(json.dumps(meta, indent=1))
    print(text)
    print(f"wrote {sum(meta['sizes'].values())} rows to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
