"""The PAU builder: source functions -> PAU rows, without an LLM (the CLI: `python -m aac.data.build`).

Per source row: drop code importing os/sys/subprocess/shutil/socket/requests (or using eval/exec/
open/...); strip docstrings, annotations and the entry's defaults; keep only the top-level code the
entry reaches (aac/data/callgraph.py); rename the entry to `test_func`, its parameters to `arg0..`
and every other function to `helper0..` (no original name or docstring survives); a generator's
output is the list it yields, and a function that returns nothing but changes an argument in place
returns that argument; infer `validate_input_args` from the types of the source's own test inputs
(where it has none: of those its annotations and body suggest that run, aac/data/infer_params.py);
run the source's test inputs and seeded type-aware mutations of them in the sandbox; keep the inputs that raise branch coverage
(coverage.py, branch=True, on the anonymised function, in an isolated child) or give new outputs;
pick 2 context examples with distinct outputs; keep rows with >= 4 test examples that reproduce on
a second sandbox run; then each kept row's mutants (aac/data/mutants.py: single-point changes of the
source that its test inputs, not its context, tell apart; a pass over the finished rows, which it does not
change). Descriptions: HumanEval's docstring without its examples, MBPP's task text;
CRUXEval has none, so its rows carry an empty description (code-match works, a judge score needs a
description from elsewhere). Outputs are stored as normalised JSON values when they have one, else
as their repr string (as the published rows are).
"""

from __future__ import annotations

import queue
import random
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path

from aac.data.anonymize import (
    VALIDATOR,
    Anonymized,
    RejectedCode,
    anonymize,
    fingerprint,
    literal_defaults,
    returning_arguments,
    returns_value,
    with_validator,
)
from aac.data.classes import build_module_class, search_config
from aac.data.coverage import Arc, CoverageReport, CoverageRunner, static_branch_arcs
from aac.data.examples import Example, stored_output, two_distinct, unreproduced
from aac.data.infer_params import ValueShape, changed_arguments, guess_inputs, needs, read_shapes
from aac.data.inputs import (
    Mutator,
    annotation_seeds,
    code_constants,
    infer_types,
    render,
    validator_source,
)
from aac.data.mutants import MAX_MUTANTS, add_mutants
from aac.data.search import InputSearch, probe_calls
from aac.data.sources import RawClass, RawTask, bind_signature, clean_description, read_tasks
from aac.data.summary import BuildSummary
from aac.data.targets import targeted_inputs
from aac.env.instance import Instance, load_instances
from aac.sandbox.pool import SandboxPool
from aac.sandbox.result import CallKind


@dataclass(frozen=True)
class BuildConfig:
    seed: int = 0
    rounds: int = 3  # sandbox batches per function: seeds + mutations, then mutations of the novel ones
    budget: int = 32  # mutated candidate inputs per batch and function
    search_budget: int = 24  # inputs drawn by the shape search (hypothesis) per later batch; 0: off
    target_budget: int = 32  # branch-targeted inputs (aac.data.targets) per batch after the rounds; 0: off
    target_rounds: int = 2  # such batches while arcs stay missed (the second also mutates what the first found)
    # guesses for a function whose source shows no input: first those its body suggests (aac/data/infer_params.py),
    # then common types; 0: drop such a function
    probe_budget: int = 32
    min_tests: int = 4
    max_tests: int = 10
    call_timeout_s: float = 0.2  # candidates slower than max_call_s are dropped anyway: cut them short
    max_timeouts: int = 4  # per batch; the rest of a batch is skipped (slow functions stay cheap)
    max_call_s: float = 0.1  # slower calls make poor examples (code-match runs them under 0.5 s)
    coverage_call_timeout_s: float = 1.0  # tracing slows calls down
    coverage_budget_s: float = 1.0  # per batch; inputs past it get no arcs (they may still show new outputs)
    max_output_chars: int = 300
    # the code a row may carry, as it carries it (only what the entry can run: aac/data/callgraph.py).
    # Each sandbox call executes it anew (0.4-0.6 ms at 22-43 KB, against the 0.1 s a kept call may
    # take) and the critic reads its first 2000 characters; the bound keeps a row from carrying a package
    max_code_chars: int = 50_000
    workers: int = 2  # functions built in parallel (sandbox workers and coverage helpers each)
    mutants: int = MAX_MUTANTS  # per row, at most (0: no mutants column)


@dataclass
class RowResult:
    task_id: str
    instance: Instance | None = None  # when kept
    reason: str | None = None  # why the row was dropped
    coverage: float | None = None  # branch coverage of the kept test examples


# ---------------------------------------------------------------- one function

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

    def _anonymized(self, task: RawTask) -> tuple[Anonymized, list[ValueShape]]:
        """The task's code as `test_func`, within the size bound, returning what it changes in place; and what
        its body says of each parameter."""
        anon = anonymize(task.code, task.entry_point)
        if len(anon.source) > self.cfg.max_code_chars:
            raise RejectedCode(f"reaches more than {self.cfg.max_code_chars} characters of code")
        shapes = read_shapes(anon.source, anon.kinds)
        if (changed := changed_arguments(shapes)) and not returns_value(anon.source):
            anon = returning_arguments(anon, changed)
        return anon, shapes

    def _seeds(self, task: RawTask, anon: Anonymized, shapes: list[ValueShape], rng: random.Random) -> dict[str, tuple]:
        """The first inputs: the task's own literal calls (doctests, tests) bound to the signature, else the ones
        read from the body."""
        seeds: dict[str, tuple] = {}
        for call in task.seeds:
            args = bind_signature(call, anon.signature)
            text = render(args) if args is not None else None
            if text is not None:
                seeds.setdefault(text, args)
        seeds = seeds or self._guessed(anon, shapes, rng)
        if not seeds:
            raise RejectedCode("no literal test inputs")
        return seeds

    def _run(self, task: RawTask) -> RowResult:
        cfg = self.cfg
        anon, shapes = self._anonymized(task)
        rng = random.Random(f"{cfg.seed}:{task.task_id}")
        target_rng = random.Random(f"{cfg.seed}:{task.task_id}:targets")
        seeds = self._seeds(task, anon, shapes, rng)
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

    def _guessed(self, anon, shapes: list, rng: random.Random) -> dict[str, tuple]:
        """Seeds for a function whose source shows no call: its annotations' seeds and the inputs
        its body suggests (aac/data/infer_params.py) that run, else common types that run.
        RejectedCode when an argument needs what no literal is (a function, a file, an object)."""
        cfg = self.cfg
        seeds = {t: a for a in annotation_seeds(anon.annotations, rng) if (t := render(a)) is not None}
        defaults = literal_defaults(anon.defaults)
        if (need := needs(shapes, defaults)) is not None:
            raise RejectedCode(f"takes {need}")
        if not cfg.probe_budget:
            return seeds
        # the code's own words first (`null`, `true`: what a parser further in compares with)
        words = tuple(sorted((c for c in code_constants(anon.source, limit=200) if type(c) is str),
                             key=lambda c: not (c.isalpha() and len(c) > 1)))
        guesses = [(t, a) for a in guess_inputs(shapes, defaults, rng, names=anon.params, strings=words,
                                                 n=cfg.probe_budget) if (t := render(a)) is not None]
        typed = {_signature(a) for a in seeds.values()}  # annotations, where given, say the types
        seeds |= self._running(anon, [(t, a) for t, a in guesses if not typed or _signature(a) in typed])
        return seeds or self._running(anon, probe_calls(anon.arity, cfg.probe_budget, rng.randrange(2**32)))

    def _running(self, anon, guesses: list[tuple[str, tuple]]) -> dict[str, tuple]:
        """Seeds for a function whose source shows no input: the (rendered) guesses that run,
        of the type signature most of them share (one coherent domain for the validator)."""
        plain = with_validator(anon, f"def {VALIDATOR}(*args):\n    pass\n")
        results = self._call_many(plain, [text for text, _ in guesses], self.cfg.call_timeout_s)
        ran = [(text, args) for (text, args), r in zip(guesses, results)
               if r and r.ok and stored_output(r, self.cfg.max_output_chars) is not None
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
                if slow or result.kind.sandbox_failed:
                    result = self.pool.call(code, text, timeout_s=timeout_s)
            timeouts += result.kind is CallKind.TIMEOUT
            results.append(result)
        return results

    def _run_batch(self, code: str, plain: str, batch: list[tuple[str, tuple]],
                   examples: dict[str, Example], seeds: set[str]) -> CoverageReport:
        """Run a batch in the sandbox; the inputs that run (fast, storable) become examples with arcs."""
        results = self._call_many(code, [text for text, _ in batch], self.cfg.call_timeout_s)
        ok = []
        for (text, args), result in zip(batch, results):
            stored = stored_output(result, self.cfg.max_output_chars) if result and result.ok else None
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
            context = two_distinct(sorted((e for e in rest if e not in tests), key=lambda e: not e.seed))
        if len(context) < 2:  # borrow from the tests what their coverage can spare
            spare = [e for e in reversed(tests) if report.coverage(x.arcs for x in tests if x is not e)
                     >= report.coverage(x.arcs for x in tests)]
            context = two_distinct([e for e in rest if e not in tests] + spare)
            tests = [e for e in tests if e not in context]
        if len(context) < 2:  # last resort: two distinct outputs, sparing the examples only they cover
            context = two_distinct(sorted(pool, key=lambda e: (_sole_cover(e, pool, report), not e.seed)))
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
            stored = stored_output(result, self.cfg.max_output_chars) if result and result.ok else None
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


# ---------------------------------------------------------------- a whole source

def build(source: str, *, limit: int | None = None, cfg: BuildConfig = BuildConfig(),
          exclude: set[str] = frozenset(), sample: int | None = None) -> tuple[list, BuildSummary]:
    """Instances built from a source spec (see module doc) and the summary of the run.

    A function whose `fingerprint` was seen before in the source, or is in `exclude`, is dropped
    as a duplicate; `sample` builds a seeded random sample of that many of the remaining tasks.
    A class (`module:`) becomes a row of the stateful domain (aac/data/classes.py), its drop reason
    counted as `class: REASON`."""
    start = time.monotonic()
    summary = BuildSummary(source)
    tasks: list[RawTask | RawClass] = []
    seen = set(exclude)
    for item in read_tasks(source):
        if limit is not None and summary.rows_in >= limit:
            break
        summary.rows_in += 1
        if isinstance(item, RawClass):
            tasks.append(item)
            continue
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
                results = list(ex.map(run, [t for t in tasks if isinstance(t, RawTask)]))
            results += [_class_row(t, pool, runners[0], cfg) for t in tasks if isinstance(t, RawClass)]
            instances = []
            for res in results:
                if res.instance is None:
                    summary.dropped[res.reason] += 1
                    continue
                instances.append(res.instance)
                summary.keep(res.instance, res.coverage)
            if cfg.mutants:
                instances = add_mutants(instances, pool, seed=cfg.seed, cap=cfg.mutants)
    finally:
        for r in runners:
            r.close()
    summary.seconds = time.monotonic() - start
    return instances, summary


def _class_row(raw: RawClass, pool, coverage: CoverageRunner, cfg: BuildConfig) -> RowResult:
    res = build_module_class(raw, pool, coverage, search_config(cfg.seed))
    return RowResult(raw.task_id, res.instance, None if res.reason is None else f"class: {res.reason}", res.coverage)


def verify(path: str | Path, *, timeout_s: float = 5.0) -> dict:
    """Re-run every stored context and test example of a built file in a fresh sandbox."""
    instances = load_instances(path, on_bad_row="raise")
    with SandboxPool(workers=2) as pool:
        bad = sorted(unreproduced(instances, pool, timeout_s=timeout_s))
    examples = sum(len(inst.train_examples) + len(inst.test_examples) for inst in instances)
    return {"rows": len(instances), "examples": examples, "rows_not_reproduced": bad}


def fingerprints(spec: str) -> set[str]:
    """The normalised sources of a source's functions (nothing runs)."""
    return {key for t in read_tasks(spec) if isinstance(t, RawTask)
            and (key := fingerprint(t.code, t.entry_point)) is not None}
