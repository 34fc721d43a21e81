"""Classes of a `module:` package -> rows of the stateful domain, through the stateful builder's sequence
search and replay (aac/data/stateful.py: `build_class`), not a second builder.

Per class (its module code as aac/data/modules.py bundles it, original names):
- the interface: its public methods, those it inherits from base classes of its package, and its
  properties (read as a method without arguments); a method's parameters are its positional ones and
  its keyword-only ones without a default (passed by keyword); `*args` and `**kwargs` stay empty. The
  constructor is its `__init__`, else the nearest package base's, else a dataclass's fields, else none.
  A class with no public methods whose constructor takes arguments (an exception that formats its
  message, a record) gets one method, its text (`str(obj)`).
  Methods that reach files, processes or the network (what aac.data.anonymize rejects: `open`, `os`,
  ...), async ones and those calling them on `self` are taken out of the class first: a `save(path)`
  beside pure methods costs the class that method, not the row.
- the row's code: the module code with docstrings dropped, then `class Obj(Cls)`, whose `__init__`
  and methods `m0..mK` (a seeded order) hand their `arg0..` to the original ones. The class runs as
  written (its calls of its own methods, its base classes, its decorators), and the actor sees only
  the anonymised interface; the critic reads both.
- the gold description: the class docstring, then new(...) and each mK(...) with the original
  parameter names and the first part of its docstring (members without one are left out).
- seeds: the call sequences of the package's tests (aac/data/test_seeds.py) and of the class's
  doctests, bound to the interface (keywords and literal defaults filled in).
- argument pools for what no seed shows (`Prober`): the seeds' arguments, literal defaults, typed
  guesses (aac.data.search.probe_calls) and the code's constants, run in the sandbox in batches (one
  sandbox call replays many `new`-then-call sequences). Each method is tried on fresh objects of a
  few constructor calls, then after each seed sequence and after one call of every method that ran,
  also with the values other calls took and returned (`release` of the number `reserve` gave). A
  TypeError or AttributeError is a wrong guess, another error a result; per member one argument
  signature is kept: the seeds' or defaults' types where guesses of them ran, plain values before
  containers, else the commonest.
Then `build_class` searches and replays sequences. A class is dropped with its reason: CLASS_REASONS,
or what `build_class` found (too few distinct sequences; `nondeterministic` when sequences did not
replay the same).
"""

from __future__ import annotations

import ast
import random
import re
from collections import Counter
from dataclasses import dataclass, field, replace

from aac.data.anonymize import (
    RejectedCode,
    check_safe,
    fill_empty_bodies,
    literal_defaults,
    parse_quietly,
    strip_docstrings,
)
from aac.data.callgraph import keep_reachable
from aac.data.coverage import CoverageRunner
from aac.data.inputs import code_constants, render
from aac.data.modules import binds
from aac.data.search import probe_calls
from aac.data.sources import RawClass, SeedCall, bind, clean_description
from aac.data.stateful import AnonClass, ClassResult, StatefulConfig, build_class
from aac.data.test_seeds import READ, doctest_sequences
from aac.env.domains.stateful import (
    CLASS,
    NEW,
    RAISED,
    RECORD_HARNESS,
    calls_literal,
    render_header,
    step_error,
)
from aac.sandbox.pool import SandboxPool
from aac.sandbox.result import CallKind

CLASS_REASONS = {
    "methods": "no public methods",
    "clash": f"a name of its interface is taken ({CLASS}, or a method m0, m1, ...)",
    "constructor": "no constructor call runs",
}
NOT_REPRODUCED = "not reproduced on a second run"  # aac.data.stateful's reason for a sequence
MAX_DESCRIPTION_WORDS = 160  # a class's gold description: its docstring and a line per member
PROBES = 24  # typed guesses per member
POOL = 6  # argument tuples kept per member: few, so the methods of a sequence share values
MAX_SOURCES = 24  # other calls whose arguments a method is tried with
MAX_PREFIXES = 3  # states a method is tried in besides a fresh object: seed sequences, then one call of each method
FRESH_OBJECTS = 3  # constructor calls whose fresh objects every method is tried on
# a class without hand-written seeds gets more sequences than a built-in one (3 rounds of 24): mean branch
# coverage of the kept shop classes (tests/data/pkgs, 3 seeds) 89% -> 93%, string's 37% -> 51%, calendar's
# 36% -> 41%, for ~0.2-1.7 s more a class (benchmarks/class_rows.py; RESULTS.md, "A package's classes as stateful rows")
SEARCH_ROUNDS = 5
SEARCH_BUDGET = 32
MAX_BATCH_CHARS = 8000  # one sandbox call's input (the sandbox takes 10000)
MAX_TIMEOUTS = 8  # sequences of a class timed out alone before the prober runs no more of them alone
# the record harness's test_func, replaced for probing: a step's value only where it is a plain one (a
# date, an object, a generator stands as OPAQUE), so one such result does not make the whole batch a repr
OPAQUE = "<value>"
PROBE_HARNESS = f'''

def test_func(*calls):
    return [value if ok and type(value) in (int, float, str, bool, type(None)) else "{OPAQUE}" if ok
            else {{"{RAISED}": _aac_error(value)}} for ok, value in _aac_replay(calls)]
'''
_WRONG_TYPE = ("TypeError", "AttributeError")
_PLAIN = {"int", "float", "str", "bool"}
_INTERFACE_NAME = re.compile(r"^m\d+$")


@dataclass(frozen=True)
class Member:
    """A constructor, method or property of a class, as its wrapper calls it."""

    name: str  # as written (`__init__` for the constructor)
    params: tuple[str, ...]  # in the wrapper's order: positional, then keyword-only without a default
    keywords: int = 0  # how many of the last params are passed by keyword
    defaults: dict[int, ast.expr] = field(default_factory=dict)  # position -> the default as written
    doc: str = ""
    prop: bool = False  # a property: read, not called

    def passing(self) -> str:
        """The arguments the wrapper hands on: `arg0, arg1, key=arg2`."""
        n = len(self.params)
        return ", ".join(f"arg{k}" if k < n - self.keywords else f"{self.params[k]}=arg{k}" for k in range(n))


# the one member of a class with no public methods whose constructor takes arguments: what str() makes of it
TEXT_FORM = Member("__str__", (), doc="The object as text.")


# ---------------------------------------------------------------- the interface


def _signature(fn: ast.FunctionDef, drop_first: bool, prop: bool = False) -> Member:
    a = fn.args
    positional = a.posonlyargs + a.args
    offset = len(positional) - len(a.defaults)
    defaults = {i: a.defaults[i - offset] for i in range(offset, len(positional))}
    if drop_first and positional:
        positional = positional[1:]
        defaults = {i - 1: d for i, d in defaults.items() if i > 0}
    required = [k.arg for k, d in zip(a.kwonlyargs, a.kw_defaults) if d is None]
    params = () if prop else tuple(p.arg for p in positional) + tuple(required)
    return Member(fn.name, params, 0 if prop else len(required), {} if prop else defaults,
                  ast.get_docstring(fn) or "", prop)


def _decorators(fn: ast.FunctionDef) -> list[str]:
    return [ast.unparse(d.func if isinstance(d, ast.Call) else d) for d in fn.decorator_list]


def _member(fn: ast.FunctionDef) -> Member | None:
    """A public method as the interface shows it; None for a property's setter or deleter."""
    names = _decorators(fn)
    if any(n.endswith((".setter", ".deleter", ".getter")) for n in names):
        return None
    if any(n.split(".")[-1] in ("property", "cached_property") for n in names):
        return _signature(fn, True, prop=True)
    return _signature(fn, "staticmethod" not in names)


def _dataclass_init(chain: list[ast.ClassDef]) -> Member | None:
    """The constructor a dataclass decorator writes: its fields, bases' first."""
    if not any(n.split(".")[-1] == "dataclass" for n in _decorators(chain[0])):
        return None
    params, defaults = [], {}
    for cls in reversed(chain):
        for stmt in cls.body:
            if (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)
                    and "ClassVar" not in ast.unparse(stmt.annotation)):
                if stmt.target.id in params:
                    continue
                params.append(stmt.target.id)
                value = stmt.value
                if isinstance(value, ast.Call) and ast.unparse(value.func).split(".")[-1] == "field":
                    value = next((k.value for k in value.keywords if k.arg == "default"), None)
                if value is not None:
                    defaults[len(params) - 1] = value
    return Member("__init__", tuple(params), 0, defaults)


def _chain(tree: ast.Module, cls: ast.ClassDef) -> list[ast.ClassDef]:
    """The class and its base classes defined in the module, nearest first (depth first)."""
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    chain: list[ast.ClassDef] = []

    def visit(c: ast.ClassDef) -> None:
        if c not in chain:
            chain.append(c)
            for base in c.bases:
                if isinstance(base, ast.Name) and base.id in classes:
                    visit(classes[base.id])

    visit(cls)
    return chain


def members_of(tree: ast.Module, name: str) -> tuple[Member | None, list[Member]]:
    """(constructor or None, public members) of class `name` of a module, its package's bases
    included (the nearest definition of a name wins)."""
    chain = _chain(tree, next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name))
    init, members, seen = None, [], set()
    for cls in chain:
        for fn in cls.body:
            if not isinstance(fn, ast.FunctionDef) or fn.name in seen:
                continue
            seen.add(fn.name)
            if fn.name == "__init__":
                init = init or _signature(fn, True)
            elif not fn.name.startswith("_") and (m := _member(fn)) is not None:
                members.append(m)
    return init or _dataclass_init(chain), members


# ---------------------------------------------------------------- the row's class


def anonymize_module_class(raw: RawClass, seed: int = 0) -> tuple[AnonClass, Member | None, dict[str, Member]]:
    """The class as a stateful row's class (see the module doc), its constructor and its members by
    interface name; RejectedCode with a CLASS_REASONS reason (or the unsafe code's) when it cannot be."""
    try:
        tree = parse_quietly(raw.code)
    except (SyntaxError, ValueError) as e:
        raise RejectedCode("syntax error", str(e)) from None
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == raw.name)
    tree.body = _without_unsafe_methods(tree.body, _chain(tree, cls))
    check_safe(tree)
    init, members = members_of(tree, raw.name)
    if not members and init is not None and init.params:
        members = [TEXT_FORM]  # an object its constructor defines (an exception, a record): explored by its text
    if not members:
        raise RejectedCode(CLASS_REASONS["methods"])
    taken = {m.name for m in members} | {n.name for n in ast.walk(cls) if isinstance(n, ast.FunctionDef)}
    top = {b for stmt in tree.body for b in binds(stmt)} - {raw.name}
    if any(_INTERFACE_NAME.match(n) for n in taken) or CLASS in top:
        raise RejectedCode(CLASS_REASONS["clash"])
    doc = ast.get_docstring(cls) or ""
    docs = [doc] + ([init.doc] if init else []) + [m.doc for m in members]
    order = [m.name for m in members]
    random.Random(f"{seed}:{raw.task_id}").shuffle(order)
    names = {name: f"m{k}" for k, name in enumerate(order)}
    by_name = {names[m.name]: m for m in members}
    ctor = init or Member("__init__", ())
    strip_docstrings(tree)
    fill_empty_bodies(tree)
    wrapper = [f"class {CLASS}({raw.name}):", f"    def __init__(self{_args(len(ctor.params))}):",
               f"        super().__init__({ctor.passing()})"]
    for iname, m in sorted(by_name.items(), key=lambda kv: int(kv[0][1:])):
        call = f"self.{m.name}" if m.prop else f"self.{m.name}({m.passing()})"
        wrapper += ["", f"    def {iname}(self{_args(len(m.params))}):", f"        return {call}"]
    code = ast.unparse(tree) + "\n\n\n" + "\n".join(wrapper) + "\n"
    arities = {NEW: len(ctor.params)} | {n: len(m.params) for n, m in by_name.items()}
    sequences = [*raw.sequences, *_doctests(docs, raw.task_id)]
    seeds = [s for s in (_bind(steps, ctor, members, names) for steps in sequences) if s]
    anon = AnonClass(raw.task_id, raw.source, code, render_header(arities),
                     class_description(raw.name, doc, init, by_name), seeds, arities,
                     raw.task_id)
    return anon, init, by_name


def _without_unsafe_methods(body: list[ast.stmt], chain: list[ast.ClassDef]) -> list[ast.stmt]:
    """The module without the methods of the class and its package bases (`chain`) that reach files,
    processes or the network (`open`, `os`, ... as aac.data.anonymize rejects them), async ones, and
    those calling such a method on `self`; then without the imports only they used. A `save(path)`
    beside pure methods leaves the interface, and the class stays; what else needs such code is
    rejected by the caller's check of the whole."""
    unsafe_names = {b for stmt in body if isinstance(stmt, ast.Import | ast.ImportFrom) and _rejected(stmt)
                    for b in binds(stmt)}
    dropped: set[str] = set()
    methods = [n for cls in chain for n in cls.body
               if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name != "__init__"]
    changed = True
    while changed:  # a method calling a dropped one on self goes too
        changed = False
        for fn in methods:
            reads = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name)}
            calls = {n.attr for n in ast.walk(fn) if isinstance(n, ast.Attribute)
                     and isinstance(n.value, ast.Name) and n.value.id == "self"}
            if fn.name not in dropped and (isinstance(fn, ast.AsyncFunctionDef) or _rejected(fn)
                                           or reads & unsafe_names or calls & dropped):
                dropped.add(fn.name)
                changed = True
    if not dropped:
        return body
    for cls in chain:
        cls.body = [n for n in cls.body if n not in methods or n.name not in dropped] or [ast.Pass()]
    return keep_reachable(body, {chain[0].name})


def _rejected(node: ast.AST) -> bool:
    try:
        check_safe(node)
    except RejectedCode:
        return True
    return False


def _args(n: int) -> str:
    return "".join(f", arg{k}" for k in range(n))


def _doctests(docs: list[str], task_id: str) -> list[list[tuple[str, SeedCall]]]:
    return [[(name, SeedCall(*call)) for name, call in steps] for steps in doctest_sequences(docs, task_id)]


def _bind(steps: list[tuple[str, SeedCall]], ctor: Member, members: list[Member],
          names: dict[str, str]) -> list[tuple[str, tuple]] | None:
    """A seed sequence in the interface's names and full argument tuples; None unless it builds the
    object and calls something. Steps the interface cannot take are left out."""
    by_name = {m.name: m for m in members}
    out: list[tuple[str, tuple]] = []
    for name, call in steps:
        if name == NEW:
            member, iname = ctor, NEW
        else:
            member = by_name.get(name.removeprefix(READ))
            if member is None or member.prop != name.startswith(READ):
                continue
            iname = names[member.name]
        args = bind(call, member.params, member.defaults)
        if args is None or render(args) is None:
            if name == NEW:
                return None
            continue
        out.append((iname, args))
    return out if len(out) > 1 and out[0][0] == NEW else None


def class_description(name: str, docstring: str, init: Member | None, members: dict[str, Member]) -> str:
    """The gold description: the class docstring, then per documented member `mK(params): its doc`."""
    parts = [clean_description(docstring, name, rename=False)] if docstring.strip() else []
    documented = ([(NEW, init)] if init is not None and init.doc else []) + [
        (n, m) for n, m in sorted(members.items(), key=lambda kv: int(kv[0][1:])) if m.doc]
    for iname, m in documented:
        parts.append(f"{iname}({', '.join(m.params)}): {clean_description(m.doc, m.name, rename=False)}")
    words = " ".join(parts).split(" ")
    return " ".join(words[:MAX_DESCRIPTION_WORDS]) + (" …" if len(words) > MAX_DESCRIPTION_WORDS else "")


# ---------------------------------------------------------------- argument pools


class Prober:
    """Argument tuples per interface member that run on the class (see the module doc)."""

    def __init__(self, anon: AnonClass, init: Member | None, members: dict[str, Member], pool: SandboxPool,
                 cfg: StatefulConfig):
        self.anon, self.pool, self.cfg = anon, pool, cfg
        self.probe = anon.code + RECORD_HARNESS + PROBE_HARNESS
        self.members = {NEW: init or Member("__init__", ()), **members}
        self.rng = random.Random(f"{cfg.seed}:{anon.uid}:probe")
        self.constants = code_constants(anon.code)
        self.seeded: dict[str, list[tuple]] = {name: [] for name in anon.arities}
        for steps in anon.seeds:
            for name, args in steps:
                if args not in self.seeded[name]:
                    self.seeded[name].append(args)
        self.typed: dict[int, list[tuple]] = {}  # typed guesses per arity
        self.calls = self.timeouts = 0  # sandbox calls made, and those that timed out

    def pools(self) -> dict[str, list[tuple]]:
        """{name: argument tuples} of the constructor and every method with parameters; RejectedCode
        when no constructor call runs."""
        ctor_ok, _ = self._try(NEW, [[]])
        ctors = _unique(_same_types([args for args, _ in ctor_ok], self._preferred(NEW)))
        if not ctors:
            raise RejectedCode(CLASS_REASONS["constructor"])
        methods = [name for name, arity in self.anon.arities.items() if name != NEW and arity]
        # on fresh objects of a few constructor calls (a coupon made with no uses left refuses every price);
        # the one most methods ran on makes the objects of what follows
        tried = [(c, {name: self._try(name, [[(NEW, c)]]) for name in methods}) for c in ctors[:FRESH_OBJECTS]]
        ctor, _ = max(tried, key=lambda t: sum(bool(ok) for ok, _ in t[1].values()))
        fresh = {name: ([r for _, f in tried for r in f[name][0]], [a for _, f in tried for a in f[name][1]])
                 for name in methods}
        # then after other calls: each seed sequence, and one call of every method that ran
        prefixes = [list(seed) for seed in self.anon.seeds[:MAX_PREFIXES - 1]]
        prefixes.append([(NEW, ctor)] + [(name, ok[0][0]) for name, (ok, _) in fresh.items() if ok])
        ran = [(args, result) for ok, _ in fresh.values() for args, result in ok[:POOL]]
        sources = _unique([a for p in prefixes for _, a in p] + [a for a, _ in ran])[:MAX_SOURCES]
        bag = [v for args in sources for v in args] + [r for _, r in ran if type(r) in (int, float, str, bool)
                                                       and r != OPAQUE]
        pools = {NEW: [ctor] + [c for c in ctors if c != ctor][:POOL - 1]}
        # a seed longer than one sandbox input cannot run (its every call is refused): no state to try methods in
        # (tests/test_infer_params.py's acme_limits: 45k refused calls of a 700-step seed; its build 108 s -> 18 s)
        runnable = [p for p in prefixes if len(calls_literal(p)) <= self.pool.max_input_chars]
        for name in methods:
            prefer = self._preferred(name)
            ok, plausible = self._try(name, runnable, self._related(name, sources, bag, prefer))
            ok_fresh, plausible_fresh = fresh[name]
            keep = (_same_types([a for a, _ in ok + ok_fresh], prefer) or _same_types(plausible, prefer)
                    or _same_types(plausible_fresh, prefer))
            pools[name] = _unique(keep)[:POOL]
        return {name: args for name, args in pools.items() if args}

    def _related(self, name: str, sources: list[tuple], bag: list, prefer: list[tuple]) -> list[tuple]:
        """Arguments taken from other calls: each source's first values, its values of the preferred types
        in order (`remove(sku, n)` from `add(sku, price, n)`), and random picks of the values seen."""
        arity = self.anon.arities[name]
        out = []
        for a in sources:
            if len(a) >= arity:
                out.append(a[:arity])
            for wanted in prefer[:2]:
                left = list(a)
                picked = []
                for t in wanted:
                    value = next((v for v in left if type(v).__name__ == t), None) if t else (left[0] if left else None)
                    if value is None and not bag:  # nothing seen to fill the gap with: no such call
                        break
                    if value is None:
                        value = self.rng.choice(bag)
                    elif value in left:
                        left.remove(value)
                    picked.append(value)
                if len(picked) == len(wanted):
                    out.append(tuple(picked))
        if bag:
            out += [tuple(self.rng.choice(bag) for _ in range(arity)) for _ in range(PROBES)]
        return out

    def _preferred(self, name: str) -> list[tuple]:
        """Type signatures the class's own code vouches for: its seeds' arguments, then its literal defaults
        (`None` where a parameter has none)."""
        defaults = literal_defaults(self.members[name].defaults)
        return [_types(args) for args in self.seeded[name]] + (
            [tuple(type(defaults[i]).__name__ if i in defaults else None for i in range(self.anon.arities[name]))]
            if defaults else [])

    def _guesses(self, name: str, extra: list[tuple]) -> list[tuple]:
        """The seeds' arguments, literal defaults, typed guesses and the code's constants, as argument tuples."""
        member, arity = self.members[name], self.anon.arities[name]
        if not arity:
            return [()]
        defaults = literal_defaults(member.defaults)
        if arity not in self.typed:  # drawn once per arity: hypothesis takes ~0.2 s a draw
            self.typed[arity] = [args for _, args in probe_calls(arity, PROBES, self.rng.randrange(2**32))]
        guesses = self.typed[arity]
        out = list(self.seeded[name])
        if len(defaults) == arity:
            out.append(tuple(defaults[i] for i in range(arity)))
        strings = [c for c in self.constants if type(c) is str]
        numbers = [c for c in self.constants if type(c) in (int, float)]
        for args in guesses:
            if defaults:
                out.append(tuple(defaults.get(i, v) for i, v in enumerate(args)))
            out.append(args)
            if strings or numbers:
                out.append(tuple(self.rng.choice(strings) if type(v) is str and strings
                                 else self.rng.choice(numbers) if type(v) in (int, float) and numbers else v
                                 for v in args))
        out += extra
        unique = {render(args): args for args in out if render(args) is not None}
        return list(unique.values())

    def _try(self, name: str, prefixes: list[list[tuple[str, tuple]]],
             extra: list[tuple] = ()) -> tuple[list[tuple[tuple, object]], list[tuple]]:
        """([(args, result)] that ran, seeds first; [args] that raised another error than a wrong
        type's) of `name`'s guesses, each after each prefix."""
        guesses = self._guesses(name, list(extra))
        tried = [(args, prefix) for prefix in prefixes for args in guesses]
        results = self._run([[*prefix, (name, args)] for args, prefix in tried])
        ok, plausible = [], []
        for (args, _), steps in zip(tried, results):
            if steps is None:
                continue
            error = step_error(steps[-1])
            if error is None:
                ok.append((args, steps[-1]))
            elif not error.startswith(_WRONG_TYPE):
                plausible.append(args)
        return ok, plausible

    def _run(self, sequences: list[list[tuple[str, tuple]]]) -> list[list | None]:
        """Each sequence's step results (None: it failed alone), many sequences per sandbox call."""
        out: list[list | None] = []
        batch: list[list[tuple[str, tuple]]] = []
        size = 0
        for seq in sequences:
            chars = len(calls_literal(seq))
            if batch and size + chars > MAX_BATCH_CHARS:
                out += self._batch(batch)
                batch, size = [], 0
            batch.append(seq)
            size += chars
        return out + (self._batch(batch) if batch else [])

    def _batch(self, batch: list[list[tuple[str, tuple]]]) -> list[list | None]:
        """One sandbox call for the batch; when it fails (a slow or crashing sequence), each sequence
        alone under the builder's per-call limit, until MAX_TIMEOUTS of them timed out (then None)."""
        flat = [s for seq in batch for s in seq]
        steps = self._call(flat, self.cfg.call_timeout_s * 2)
        if steps is None:
            return [self._call(seq, self.cfg.call_timeout_s) if self.timeouts < MAX_TIMEOUTS else None for seq in batch]
        out, k = [], 0
        for seq in batch:
            out.append(steps[k: k + len(seq)])
            k += len(seq)
        return out


    def _call(self, steps: list[tuple[str, tuple]], timeout_s: float) -> list | None:
        self.calls += 1
        result = self.pool.call(self.probe, calls_literal(steps), timeout_s=timeout_s)
        self.timeouts += result.kind is CallKind.TIMEOUT
        out = result.normalized if result.ok else None
        return out if type(out) is list and len(out) == len(steps) else None


def _same_types(tuples: list[tuple], prefer: list[tuple] = ()) -> list[tuple]:
    """The tuples of one type signature, in order: of those matching the first signature of `prefer`
    that any matches (None in it matches any type), else of all; the commonest of plain values (a
    method that takes a list as well as a string does not look inside: the string makes the clearer
    example), else the commonest."""
    counts = Counter(_types(t) for t in tuples)
    for wanted in prefer:
        fits = [s for s in counts if len(s) == len(wanted) and all(w in (None, t) for w, t in zip(wanted, s))]
        if fits:
            counts = Counter({s: counts[s] for s in fits})
            break
    plain = Counter({s: n for s, n in counts.items() if set(s) <= _PLAIN})
    if not counts:
        return []
    keep = (plain or counts).most_common(1)[0][0]
    return [t for t in tuples if _types(t) == keep]


def _unique(tuples: list[tuple]) -> list[tuple]:
    """In order, each once (1 and 1.0 apart)."""
    return list({render(t): t for t in tuples}.values())


def _types(args: tuple) -> tuple:
    return tuple(type(v).__name__ for v in args)


# ---------------------------------------------------------------- one class


def search_config(seed: int = 0) -> StatefulConfig:
    """The stateful builder's settings for a package's class (SEARCH_ROUNDS, SEARCH_BUDGET)."""
    return StatefulConfig(seed=seed, rounds=SEARCH_ROUNDS, budget=SEARCH_BUDGET)


def build_module_class(raw: RawClass, pool: SandboxPool, coverage: CoverageRunner,
                       cfg: StatefulConfig | None = None) -> ClassResult:
    """One class of a package as a stateful row (ClassResult.instance), or the reason it is dropped
    (`cfg`: default `search_config()`)."""
    cfg = cfg or search_config()
    try:
        anon, init, members = anonymize_module_class(raw, cfg.seed)
        prober = Prober(anon, init, members, pool, cfg)
        anon = replace(anon, pools=prober.pools())
    except RejectedCode as e:
        return ClassResult(raw.task_id, reason=str(e))
    res = build_class(anon, pool, coverage, cfg)
    if res.instance is None and res.dropped[NOT_REPRODUCED]:
        res.reason = f"nondeterministic ({res.reason}: {res.dropped[NOT_REPRODUCED]} sequences {NOT_REPRODUCED})"
    return res
