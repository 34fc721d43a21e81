"""The stateful builder: documented classes -> rows of the `stateful` domain, without an LLM.

    python -m aac.data.stateful out=stateful.jsonl [limit=N] [seed=S]
    python -m aac.data.stateful verify=stateful.jsonl   # re-run every stored sequence

Sources: aac/_data/stateful/{stdlib,designs}/*.py, one class each: thin wrappers whose behaviour is the
standard library's documented one (collections, heapq, bisect, fractions, textwrap, difflib, random, ...)
and classes of common stateful designs (stack, LRU cache, rate limiters, bank account, ...). A file holds
the gold description as its docstring (method names in braces, `{push}`), imports, the class, and SEEDS:
a few call sequences `[("new", (3,)), ("push", (1,)), ...]`.

Per class: anonymise it (the class becomes `Obj`, its public methods `m0..mK` in a seeded order, their
parameters `arg0..` rebound to the original names, docstrings dropped, only the module code the class
reaches kept: aac/data/callgraph.py); run the seed sequences and
seeded type-aware variants of them (inputs.Mutator on each call's arguments; steps inserted, dropped,
swapped, repeated) in the sandbox through the domain's record harness, which returns every step's
result; keep a sequence when it reaches branch arcs of the class (coverage.py, branch=True, class lines
only) or step results the kept ones did not; re-run the kept ones (a class must be deterministic, replay
depends on it); choose 2 short context sequences (seeds first) and a greedy branch cover of the rest as
held-out test sequences (4 to 6). The summary counts rows and sequences kept and why the others were
dropped, and the branch coverage of each row's test sequences.
"""

from __future__ import annotations

import ast
import json
import logging
import random
import sys
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, ClassVar

from aac.cli import Key, UsageError, count, parse_keys
from aac.data.callgraph import keep_reachable
from aac.data.coverage import Arc, CoverageRunner, static_branch_arcs
from aac.data.examples import unreproduced
from aac.data.inputs import Mutator, code_constants, render
from aac.data.splits import TEST_FRACTION, split_instances
from aac.data.summary import BuildSummary, mean, write_built
from aac.env.domains.stateful import (
    CLASS,
    NEW,
    PAPER,
    RAISED,
    RECORD_HARNESS,
    StatefulDomain,
    render_header,
    sequence_calls,
)
from aac.env.instance import Instance, load_instances
from aac.env.prompts import in_context_prompt
from aac.errors import entry_point
from aac.sandbox.pool import SandboxPool
from aac.sandbox.values import canonical_json

log = logging.getLogger(__name__)
SOURCES = Path(__file__).resolve().parents[1] / "_data" / "stateful"
DOMAIN = StatefulDomain()


@dataclass(frozen=True)
class StatefulConfig:
    seed: int = 0
    rounds: int = 3  # sandbox batches per class: seeds + variants, then variants of the kept ones
    budget: int = 24  # candidate sequences per batch
    max_steps: int = 8  # method calls of a generated sequence after its new(...)
    min_tests: int = 4
    max_tests: int = 6
    max_context_steps: int = 5  # context sequences are shown in every prompt: short ones
    call_timeout_s: float = 1.0
    max_call_s: float = 0.2  # a slower sequence is dropped (code match replays under 0.5 s)
    max_output_chars: int = 300  # per step result
    coverage_budget_s: float = 2.0


# ---------------------------------------------------------------- anonymising one class


@dataclass(frozen=True)
class AnonClass:
    name: str  # the file's stem
    source: str  # stateful/stdlib or stateful/designs
    code: str  # the anonymised module: imports, class Obj
    header: str
    description: str  # the gold description, in the anonymised names
    seeds: list[list[tuple[str, tuple]]]  # seed sequences, in the anonymised names
    arities: dict[str, int]
    uid: str  # the row's id: stateful/<name>, a module class's qualified name
    pools: dict[str, list[tuple]] = field(default_factory=dict)  # arguments found for members (aac/data/classes.py)


def _params(fn: ast.FunctionDef, where: str) -> list[str]:
    a = fn.args
    if a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs or a.defaults or not a.args or a.args[0].arg != "self":
        raise ValueError(f"{where}: {fn.name} must take self and plain positional parameters only")
    return [p.arg for p in a.args[1:]]


def _drop_docstring(body: list[ast.stmt]) -> list[ast.stmt]:
    first = body[0] if body else None
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        return body[1:] or [ast.Pass()]
    return body


def anonymize_class(path: Path, seed: int = 0) -> AnonClass:
    """The anonymised class of one source file; ValueError (one line) for a file that is not one."""
    where = f"{path.parent.name}/{path.name}"
    tree = ast.parse(path.read_text(encoding="utf-8"))
    template = ast.get_docstring(tree)
    classes = [n for n in tree.body if isinstance(n, ast.ClassDef)]
    seeds_node = next((n for n in tree.body if isinstance(n, ast.Assign)
                       and [t.id for t in n.targets if isinstance(t, ast.Name)] == ["SEEDS"]), None)
    if not template or len(classes) != 1 or seeds_node is None:
        raise ValueError(f"{where}: needs a docstring, exactly one class and SEEDS")
    cls = classes[0]
    methods = [n for n in cls.body if isinstance(n, ast.FunctionDef) and not n.name.startswith("_")]
    init = next((n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None)
    if init is None or not methods:
        raise ValueError(f"{where}: the class needs an __init__ and public methods")
    order = [m.name for m in methods]
    random.Random(f"{seed}:{path.stem}").shuffle(order)
    names = {orig: f"m{k}" for k, orig in enumerate(order)}
    arities = {NEW: len(_params(init, where))} | {names[m.name]: len(_params(m, where)) for m in methods}
    for fn in [init, *methods]:
        params = _params(fn, where)
        fn.args.args[1:] = [ast.arg(f"arg{k}") for k in range(len(params))]
        rebind = [ast.parse(f"{p} = arg{k}").body[0] for k, p in enumerate(params)]
        fn.body = rebind + _drop_docstring(fn.body)
        fn.name = names.get(fn.name, fn.name)
    for node in ast.walk(cls):  # self.push(...) inside the class calls the renamed method
        if (isinstance(node, ast.Attribute) and node.attr in names and isinstance(node.value, ast.Name)
                and node.value.id in ("self", cls.name)):
            node.attr = names[node.attr]
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id == cls.name:
            node.id = CLASS
    cls.name = CLASS
    cls.body = _drop_docstring(cls.body)
    # without the docstring and SEEDS, and only the module code the class reaches (aac.data.callgraph)
    tree.body = keep_reachable([n for n in tree.body[1:] if n is not seeds_node], {CLASS})
    seeds = []
    for sequence in ast.literal_eval(seeds_node.value):
        calls = [(NEW if name == NEW else names[name], tuple(args)) for name, args in sequence]
        if calls[0][0] != NEW:
            raise ValueError(f"{where}: a seed sequence must start with new")
        seeds.append(calls)
    description = " ".join(template.format_map(names).split())
    return AnonClass(path.stem, f"stateful/{path.parent.name}", ast.unparse(tree) + "\n", render_header(arities),
                     description, seeds, arities, f"stateful/{path.stem}")


def class_files(root: Path = SOURCES) -> list[Path]:
    return sorted(root.glob("*/*.py"))


# ---------------------------------------------------------------- call sequences


@dataclass(eq=False)
class Calls:
    calls: list[tuple[str, tuple]]
    literal: str
    results: list[Any] = field(default_factory=list)  # per step: the normalised value or {"raised": text}
    arcs: frozenset[Arc] = frozenset()
    seed: bool = False

    def outcomes(self) -> set[tuple[str, str]]:
        """(method, result) per step, an error by its type: what novelty of results means."""
        out = set()
        for (name, _), r in zip(self.calls, self.results):
            error = r.get(RAISED) if type(r) is dict and len(r) == 1 else None
            out.add((name, f"raised {str(error).split(':', 1)[0]}" if type(error) is str else canonical_json(r)))
        return out


class _Variants:
    """Seeded, type-aware call sequences for one class (nothing here runs the code)."""

    def __init__(self, anon: AnonClass, rng: random.Random, max_steps: int):
        self.rng, self.max_steps, self.arities = rng, max_steps, anon.arities
        self.mutator = Mutator(rng, code_constants(anon.code))
        self.methods = [m for m in anon.arities if m != NEW]
        self.args: dict[str, list[tuple]] = {m: [] for m in anon.arities}
        for sequence in anon.seeds:
            for name, args in sequence:
                if args not in self.args[name]:
                    self.args[name].append(args)
        for name, pool in anon.pools.items():
            self.args[name] += [args for args in pool if args not in self.args[name]]

    def call(self, name: str) -> tuple[str, tuple]:
        args = self.rng.choice(self.args[name] or [(0,) * self.arities[name]])
        if args and self.rng.random() < 0.5:
            variants = self.mutator.mutations(args)
            args = self.rng.choice(variants) if variants else args
        return name, args

    def fresh(self) -> list[tuple[str, tuple]]:
        steps = [self.call(self.rng.choice(self.methods)) for _ in range(self.rng.randint(2, self.max_steps))]
        return [self.call(NEW), *steps]

    def vary(self, calls: list[tuple[str, tuple]]) -> list[tuple[str, tuple]]:
        """One edit of a kept sequence: new arguments for a step, a step inserted, dropped, repeated or
        swapped, or a new constructor call."""
        out = list(calls)
        k = self.rng.randrange(1, len(out)) if len(out) > 1 else None
        op = self.rng.randrange(6)
        if op == 0 and k is not None:
            out[k] = self.call(out[k][0])
        elif op == 1 or k is None:
            out.insert(self.rng.randint(1, len(out)), self.call(self.rng.choice(self.methods)))
        elif op == 2 and len(out) > 2:
            del out[k]
        elif op == 3:
            out.insert(k, out[k])
        elif op == 4 and len(out) > 2:
            j = self.rng.randrange(1, len(out))
            out[k], out[j] = out[j], out[k]
        else:
            out[0] = self.call(NEW)
        return out[: self.max_steps + 1]


# ---------------------------------------------------------------- building one class


@dataclass
class ClassResult:
    name: str
    instance: Instance | None = None
    reason: str | None = None  # why the class was dropped
    coverage: float | None = None  # branch coverage of the kept test sequences
    candidates: int = 0
    kept: int = 0
    dropped: Counter = field(default_factory=Counter)  # sequences, by reason


def build_class(anon: AnonClass, pool: SandboxPool, coverage: CoverageRunner, cfg: StatefulConfig) -> ClassResult:
    res = ClassResult(anon.name)
    record = anon.code + RECORD_HARNESS
    class_lines = anon.code.count("\n")
    branch, parser = static_branch_arcs(record)
    static = (frozenset(a for a in branch if 0 < a[0] <= class_lines), parser)
    rng = random.Random(f"{cfg.seed}:{anon.name}")
    variants = _Variants(anon, rng, cfg.max_steps)
    kept: list[Calls] = []
    covered: set[Arc] = set()
    outcomes: set[tuple[str, str]] = set()
    seen: set[str] = set()
    batch = [(c, True) for c in anon.seeds] + [(variants.fresh(), False) for _ in range(cfg.budget)]
    for round_ in range(cfg.rounds):
        fresh = []
        for calls, is_seed in batch:
            literal = render(tuple((name, tuple(args)) for name, args in calls))  # = calls_literal(calls), or None
            if literal in seen:
                continue
            res.candidates += 1
            if literal is None:
                res.dropped["no exact literal of at most 300 characters"] += 1
                continue
            seen.add(literal)
            seq, why = _run(pool, record, Calls(calls, literal, seed=is_seed), cfg)
            if why:
                res.dropped[why] += 1
            else:
                fresh.append(seq)
        report = coverage.measure(record, [s.literal for s in fresh], static=static)
        if round_ == 0:
            covered |= {a for a in report.baseline if 0 < a[0] <= class_lines}
        for seq, arcs in zip(fresh, report.per_input):
            seq.arcs = frozenset(a for a in arcs or () if 0 < a[0] <= class_lines)
            new_outcomes = seq.outcomes() - outcomes
            # a small class reaches all its code soon: then new results decide, until there are enough
            distinct = len(kept) < cfg.min_tests + 2 and canonical_json(seq.results) not in {
                canonical_json(k.results) for k in kept}
            if seq.seed or seq.arcs - covered or new_outcomes or distinct:
                kept.append(seq)
                covered |= seq.arcs
                outcomes |= new_outcomes
            else:
                res.dropped["reaches no new code or result"] += 1
        bases = [s.calls for s in kept] or anon.seeds
        if not bases:  # nothing ran and nothing seeds a variation: no later round can find more
            break
        batch = [(variants.vary(rng.choice(bases)), False) for _ in range(cfg.budget)]
    for seq in list(kept):  # replay depends on determinism: a second run must agree step by step
        again, why = _run(pool, record, Calls(seq.calls, seq.literal), cfg)
        if why or canonical_json(again.results) != canonical_json(seq.results):
            kept.remove(seq)
            res.dropped["not reproduced on a second run"] += 1
    res.kept = len(kept)
    context, tests = _select(kept, static[0], covered, cfg)
    if len(context) < 2:
        return replace(res, reason="no 2 short context sequences with distinct results")
    if len(tests) < cfg.min_tests:
        return replace(res, reason=f"fewer than {cfg.min_tests} test sequences")
    hit = set().union(*(s.arcs for s in tests))
    res.coverage = len(hit & static[0]) / len(static[0]) if static[0] else 1.0
    inst = Instance(uid=anon.uid, source=anon.source, code=anon.code, description=anon.description,
                    header=anon.header, train_examples=[(s.literal, s.results) for s in context],
                    test_examples=[(s.literal, s.results) for s in tests],
                    all_examples=[(s.literal, s.results, None) for s in context], domain=DOMAIN.name)
    direct = in_context_prompt(inst, wording=PAPER, context=DOMAIN.context(inst))[-1]["content"]
    res.instance = replace(inst, direct_prompt=direct)
    return res


def _run(pool: SandboxPool, record: str, seq: Calls, cfg: StatefulConfig) -> tuple[Calls, str | None]:
    """The sequence with its per-step results, or the reason it makes no example."""
    result = pool.call(record, seq.literal, timeout_s=cfg.call_timeout_s)
    if not result.ok:
        return seq, f"sandbox: {result.error.split(':', 1)[0]}"
    if result.duration_s > cfg.max_call_s:
        return seq, f"slower than {cfg.max_call_s} s"
    steps = result.normalized
    try:
        json.dumps(steps, allow_nan=False)
    except (TypeError, ValueError):
        return seq, "a result JSON cannot store (inf, nan)"
    if type(steps) is not list or len(steps) != len(seq.calls):
        return seq, "a result JSON cannot store"
    if any(len(canonical_json(r)) > cfg.max_output_chars for r in steps):
        return seq, f"a step result over {cfg.max_output_chars} characters"
    seq.results = steps
    return seq, None


def _select(kept: list[Calls], branch: frozenset[Arc], covered: set[Arc],
            cfg: StatefulConfig) -> tuple[list[Calls], list[Calls]]:
    """Context: 2 short sequences with distinct results (seeds first, shortest first); tests: a greedy
    cover of the branch arcs (all arcs without branches) by the rest, then new results, to max_tests."""
    short = sorted((s for s in kept if len(s.calls) <= cfg.max_context_steps), key=lambda s: (not s.seed, len(s.calls)))
    context: list[Calls] = []
    for s in short:
        if len(context) < 2 and all(canonical_json(s.results) != canonical_json(c.results) for c in context):
            context.append(s)
    rest = [s for s in kept if s not in context]
    target = branch or frozenset(covered)
    tests: list[Calls] = []
    hit: set[Arc] = set()
    while len(tests) < cfg.max_tests:
        best = max((s for s in rest if s not in tests), key=lambda s: len((s.arcs & target) - hit), default=None)
        if best is None or not (best.arcs & target) - hit:
            break
        tests.append(best)
        hit |= best.arcs
    shown = set().union(*(s.outcomes() for s in tests)) if tests else set()
    for s in sorted(rest, key=lambda s: -len(s.outcomes())):
        if len(tests) >= cfg.max_tests:
            break
        if s not in tests and (s.outcomes() - shown or len(tests) < cfg.min_tests):
            tests.append(s)
            shown |= s.outcomes()
    return context, tests


# ---------------------------------------------------------------- the whole set


@dataclass
class StatefulSummary(BuildSummary):
    """The classes' summary (a test example is a call sequence), with the sequences tried, kept and
    dropped by reason, and the steps of each row's test sequences."""

    source: str = "stateful"
    sequences_tried: int = 0
    sequences_kept: int = 0
    sequences_dropped: Counter = field(default_factory=Counter)
    test_steps: list[int] = field(default_factory=list)  # per kept row

    unit: ClassVar[str] = "classes"

    def details(self) -> dict:
        return {"mean_test_steps": mean(self.test_steps), "sequences_tried": self.sequences_tried,
                "sequences_kept": self.sequences_kept, "sequences_dropped": dict(self.sequences_dropped.most_common())}

    def detail_lines(self) -> list[str]:
        return [f"  mean steps of a row's test sequences: {mean(self.test_steps) or 0:.1f}",
                f"  sequences: {self.sequences_tried} tried, {self.sequences_kept} kept"] + [
                f"  dropped sequence {n:4d}: {reason}" for reason, n in self.sequences_dropped.most_common()]


def build(files: Iterable[Path] | None = None, cfg: StatefulConfig = StatefulConfig()) -> tuple[list[Instance],
                                                                                                  StatefulSummary]:
    start = time.monotonic()
    summary = StatefulSummary()
    instances = []
    with SandboxPool(workers=1) as pool, CoverageRunner(call_timeout_s=cfg.call_timeout_s,
                                                        budget_s=cfg.coverage_budget_s) as coverage:
        for path in class_files() if files is None else files:
            summary.rows_in += 1
            try:
                res = build_class(anonymize_class(path, cfg.seed), pool, coverage, cfg)
            except ValueError as e:
                summary.dropped[f"bad source: {e}"] += 1
                continue
            summary.sequences_tried += res.candidates
            summary.sequences_kept += res.kept
            summary.sequences_dropped.update(res.dropped)
            if res.instance is None:
                summary.dropped[res.reason] += 1
                continue
            instances.append(res.instance)
            summary.keep(res.instance, res.coverage)
            summary.test_steps.append(sum(len(r) for _, r in res.instance.test_examples))
    summary.seconds = time.monotonic() - start
    return instances, summary


def build_splits(cfg: StatefulConfig = StatefulConfig()) -> tuple[dict[str, list[Instance]], dict, str]:
    """`builtin:stateful`: {train, test} (seeded 80/20 by class), its meta and the summary text."""
    instances, summary = build(cfg=cfg)
    splits = split_instances(instances, cfg.seed)
    meta = {"seed": cfg.seed, "test_fraction": TEST_FRACTION, "domain": "stateful", **summary.as_dict(),
            "sizes": {split: len(rows) for split, rows in splits.items()}}
    return splits, meta, summary.text()


def verify(instances: Iterable[Instance], *, timeout_s: float = 5.0) -> dict:
    """Re-run every stored context and test sequence in a fresh sandbox; the rows whose steps differ."""
    instances = list(instances)
    with SandboxPool(workers=1) as pool:
        bad = sorted(unreproduced(instances, pool, timeout_s=timeout_s, program=lambda inst: inst.code + RECORD_HARNESS))
    sequences = [lit for inst in instances for lit, _ in [*inst.train_examples, *inst.test_examples]]
    return {"rows": len(instances), "sequences": len(sequences),
            "steps": sum(len(sequence_calls(lit)) for lit in sequences), "rows_not_reproduced": bad}


USAGE = "usage: python -m aac.data.stateful out=FILE.jsonl [limit=N] [seed=S] | verify=FILE"
KEYS = (Key("out", "output .jsonl or .parquet (PAU schema + task_id, source, domain)"),
        Key("limit", "build only the first N classes", count), Key("seed", "seeds the sequence search", int, 0),
        Key("verify", "re-run every stored sequence of a built FILE and exit"))


@entry_point
def main(argv: list[str] | None = None) -> int:
    a = parse_keys(argv, KEYS, USAGE, doc=__doc__.split("\n\n")[0])
    if a.verify:
        result = verify(load_instances(a.verify, on_bad_row="raise", check=DOMAIN.check_instance, domain=DOMAIN.name))
        print(f"{a.verify}: {result['rows']} rows, {result['sequences']} sequences ({result['steps']} steps) re-run, "
              f"{len(result['rows_not_reproduced'])} rows not reproduced {result['rows_not_reproduced'][:10]}")
        return 1 if result["rows_not_reproduced"] else 0
    if not a.out:
        raise UsageError(f"out= is required (or verify=FILE); {USAGE}")
    files = class_files()[: a.limit] if a.limit else None
    instances, summary = build(files, StatefulConfig(seed=a.seed))
    write_built(a.out, instances, summary.text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
