"""A row's mutants (the privileged `mutants` column) and which of them an input kills, in the sandbox.

A mutant is a single-point change of the row's source (aac/data/mutate.py). `find_mutants` keeps one when
- it runs every stored input (context and test examples) to an end of its own (no timeout, no crash: such a
  mutant would cost a timeout per query in an episode, and its verdict would be the machine's load);
- the context examples do not tell it from the original (the actor sees them before its first query: a
  mutant they kill carries no information an episode could find), and
- some test input does (its `witness`): no equivalent mutant is kept, and the oracle of
  aac/eval/query_efficiency.py, greedy over the test inputs, can kill every one.
An input kills a mutant when both ran to an end and their outcomes differ: the normalised output, or the
exception's type (`outcome`). Candidates are tried in a seeded order that deals the operators in turn
(`seeded_order`), at most `TRIED_PER_KEPT` per mutant kept, until `cap` are kept.

Why `MAX_MUTANTS` = 16: the information a call gives is a share of the survivors, so 16 grade it in steps
of 1/16 (the stop threshold 0.7 falls between 11 and 12 killed); an episode's call then runs on at most 16
mutants besides the black box (benchmarks/RESULTS.md, "Mutants critic": the sandbox cost per call); 16 rows of source
keep a row's privileged side within ~20 KB. Mutants are a function of the row alone (its source and stored
inputs, the task id seeding the order), so they can be added to rows built before them: the builtin sets
are upgraded in place (aac/data/builtin.py), their rows otherwise unchanged (a rebuild would re-run the
builder's timing-bounded input search, which does not reproduce every row). `python -m aac.data.mutants
DIR` adds them to a folder of PAU rows.
"""

from __future__ import annotations

import hashlib
import json
import logging
import random
import sys
import threading
import time
from collections import Counter, OrderedDict
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Optional

from aac.cli import Key, parse_keys
from aac.data.mutate import candidates, seeded_order
from aac.env.instance import DatasetError, Instance, Mutant, load_instances, mutants_json
from aac.errors import entry_point
from aac.sandbox.result import CallKind
from aac.sandbox.values import canonical_json

if TYPE_CHECKING:
    from aac.env.domains import Caller
    from aac.sandbox.pool import SandboxPool
    from aac.sandbox.result import CallResult

log = logging.getLogger(__name__)

MUTANTS_VERSION = 1  # bump when which mutants a row gets changes: cached builtin sets get theirs again
MAX_MUTANTS = 16  # per row (see the module doc)
TRIED_PER_KEPT = 4  # candidates tried per mutant kept, at most: bounds a large function's build time
BUILD_TIMEOUT_S = 1.0  # per call while building: the original runs in < 0.1 s (BuildConfig.max_call_s)
CACHE_ENTRIES = 200_000  # (source, input) -> outcome


def outcome(result: CallResult) -> Optional[str]:
    """What an input's call came to, for comparing two sources on it: the normalised output, the
    exception's type, or None when it did not end on its own (timed out, the sandbox failed): unknown."""
    if result.kind.cut_short:
        return None
    if result.kind is not CallKind.OK:
        return "error:" + (result.error or "").split(":", 1)[0].strip()
    return "value:" + canonical_json(result.normalized)


class KillRunner:
    """Runs (source, input) pairs in the sandbox through `caller`, `workers` at a time, each pair once
    (outcomes cached, least recently used evicted). Thread-safe."""

    def __init__(self, caller: Caller, *, timeout_s: float, workers: int = 2):
        self.caller, self.timeout_s = caller, timeout_s
        self.calls = 0  # sandbox calls made (cache misses)
        self._cache: OrderedDict[tuple[str, str], Optional[str]] = OrderedDict()
        self._lock = threading.Lock()
        self._executor = ThreadPoolExecutor(workers, thread_name_prefix="aac-mutants") if workers > 1 else None

    def close(self) -> None:
        if self._executor is not None:
            self._executor.shutdown()

    def _map(self, fn: Callable, items: Sequence) -> list:
        """`fn` of each item, in order: `workers` at a time, or here when there is one worker or one item."""
        return list(self._executor.map(fn, items)) if self._executor is not None and len(items) > 1 else \
            [fn(item) for item in items]

    def outcomes(self, pairs: Sequence[tuple[str, str]]) -> list[Optional[str]]:
        """The outcome of each (source, input) pair, in order."""
        keys = [(_digest(source), text) for source, text in pairs]
        with self._lock:
            todo = {k: p for k, p in zip(keys, pairs) if k not in self._cache}
        jobs = list(todo.items())

        def run(job: tuple[tuple[str, str], tuple[str, str]]) -> Optional[str]:
            source, text = job[1]
            return outcome(self.caller(source, text, self.timeout_s))

        done = self._map(run, jobs)
        with self._lock:
            self.calls += len(jobs)
            fresh = {k: o for (k, _), o in zip(jobs, done)}
            for k, o in fresh.items():
                self._cache[k] = o
            out = []
            for k in keys:
                if k in fresh:
                    out.append(fresh[k])
                else:
                    out.append(self._cache[k])
                    self._cache.move_to_end(k)
            while len(self._cache) > CACHE_ENTRIES:
                self._cache.popitem(last=False)
        return out

    def outcomes_until(self, sources: Sequence[str], inputs: Sequence[str],
                       stop: Callable[[int, Optional[str]], bool]) -> list[list[Optional[str]]]:
        """Per source, the outcomes of `inputs` in order up to the first (k, outcome) that `stop` holds for,
        included. Sources run `workers` at a time, each one's inputs one after another: its warm sandbox
        worker serves them all, and an input after the stop costs nothing."""
        def until(source: str) -> list[Optional[str]]:
            got: list[Optional[str]] = []
            for k, x in enumerate(inputs):
                got.append(self.outcomes([(source, x)])[0])
                if stop(k, got[-1]):
                    break
            return got

        return self._map(until, sources)

    def kills(self, instance: Instance, inputs: Sequence[str], alive: Sequence[int]) -> list[set[int]]:
        """Per input, the mutants among `alive` (indices into `instance.mutants`) that it kills."""
        mutants = instance.mutants or ()
        pairs = [(instance.code, x) for x in inputs] + [(mutants[m].code, x) for x in inputs for m in alive]
        got = self.outcomes(pairs)
        ref, rest = got[:len(inputs)], iter(got[len(inputs):])
        out: list[set[int]] = []
        for r in ref:
            outs = [next(rest) for _ in alive]
            out.append(set() if r is None else {m for m, o in zip(alive, outs) if o is not None and o != r})
        return out

    def survivors(self, jobs: Sequence[tuple[Instance, Sequence[str]]]) -> list[list[frozenset[int]]]:
        """For each (instance, inputs) job, the mutants alive before each input and after the last
        (len(inputs) + 1 sets): each input runs only on the mutants still alive. The jobs advance together,
        one position at a time, so each position is one batch of sandbox calls for all of them."""
        alive = [frozenset(range(len(inst.mutants or ()))) for inst, _ in jobs]
        out = [[a] for a in alive]
        for pos in range(max((len(inputs) for _, inputs in jobs), default=0)):
            live = [k for k, (_, inputs) in enumerate(jobs) if pos < len(inputs) and alive[k]]
            pairs = [(jobs[k][0], jobs[k][1][pos], sorted(alive[k])) for k in live]
            self.outcomes([p for inst, x, ms in pairs for p in [(inst.code, x)] + [(inst.mutants[m].code, x)
                                                                                   for m in ms]])  # one batch
            for k, (inst, x, ms) in zip(live, pairs):
                alive[k] = alive[k] - self.kills(inst, [x], ms)[0]  # from the cache
            for k, (_, inputs) in enumerate(jobs):
                if pos < len(inputs):
                    out[k].append(alive[k])
        return out


def find_mutants(instance: Instance, runner: KillRunner, *, seed: int = 0,
                 cap: int = MAX_MUTANTS) -> tuple[Mutant, ...]:
    """The mutants of `instance` to store (see the module doc), at most `cap`, in the seeded order."""
    order = seeded_order(candidates(instance.code), random.Random(f"{seed}:{instance.uid}:mutants"))
    order = order[: cap * TRIED_PER_KEPT]
    context = [x for x, _ in instance.train_examples]
    tests = [x for x, _ in instance.test_examples]
    ref = runner.outcomes([(instance.code, x) for x in context + tests])
    ref_tests = ref[len(context):]
    # the context first: most candidates die there (and then need no test input), a looping one at
    # its first timeout
    def told_apart(k: int, o: Optional[str]) -> bool:  # or not ending on its own
        return o is None or (ref[k] is not None and o != ref[k])

    got = runner.outcomes_until([c.code for c in order], context, told_apart)
    alive = [c for c, outs in zip(order, got) if not any(told_apart(k, o) for k, o in enumerate(outs))]
    kept: list[Mutant] = []
    while alive and len(kept) < cap:  # then the tests, over as many candidates as are still wanted
        chunk, alive = alive[: cap - len(kept)], alive[cap - len(kept):]
        got = runner.outcomes_until([c.code for c in chunk], tests, lambda k, o: o is None)
        for c, outs in zip(chunk, got):
            witness = next((x for x, o, r in zip(tests, outs, ref_tests) if r is not None and o != r), None)
            if None not in outs and witness is not None:  # ran every test: only a timeout stops it early
                kept.append(Mutant(c.op, c.change, c.code, witness))
    return tuple(kept)


def add_mutants(instances: list[Instance], pool: SandboxPool, *, seed: int = 0,
                cap: int = MAX_MUTANTS) -> list[Instance]:
    """`instances` with their mutants (`find_mutants`); rows of other domains as they were."""
    runner = KillRunner(lambda s, x, t: pool.call(s, x, timeout_s=t), timeout_s=BUILD_TIMEOUT_S,
                        workers=pool.workers)
    start, out = time.monotonic(), []
    try:
        for k, inst in enumerate(instances):
            out.append(replace(inst, mutants=find_mutants(inst, runner, seed=seed, cap=cap))
                       if inst.domain == "pau" else inst)
            if (k + 1) % 50 == 0:
                log.info("mutants: %d of %d rows (%.0f s)", k + 1, len(instances), time.monotonic() - start)
    finally:
        runner.close()
    log.info("mutants: %s (%d sandbox calls, %.0f s)", summary(out)["text"], runner.calls, time.monotonic() - start)
    return out


def summary(instances: Sequence[Instance]) -> dict:
    """The mutants of a set of rows, for meta.json and the build's log."""
    built = [i.mutants for i in instances if i.mutants is not None]
    ops = Counter(m.op for ms in built for m in ms)
    counts = [len(ms) for ms in built]
    mean = sum(counts) / len(counts) if counts else 0.0
    return {"version": MUTANTS_VERSION, "cap": MAX_MUTANTS, "rows": len(built), "rows_without": counts.count(0),
            "mean": round(mean, 2), "by_op": dict(ops.most_common()),
            "text": f"{mean:.1f} mutants per row over {len(built)} rows, {counts.count(0)} rows with none"}


def add_to_folder(folder: Path, pool: SandboxPool, *, splits: Sequence[str], seed: int = 0) -> dict:
    """Add (or recompute) the `mutants` column of `folder/{split}.jsonl` in place, every other column of
    every row byte for byte as it was; the summary of what was added."""
    done: list[Instance] = []
    for split in splits:
        path = folder / f"{split}.jsonl"
        lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        instances = add_mutants(load_instances(path, on_bad_row="raise"), pool, seed=seed)
        if len(instances) != len(lines):
            raise ValueError(f"{path}: {len(lines)} lines, {len(instances)} rows")
        rows = [json.loads(line) for line in lines]
        for row, inst in zip(rows, instances):
            if inst.mutants is not None:
                row["mutants"] = mutants_json(inst.mutants)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
        tmp.replace(path)
        done += instances
    return summary(done)


def _digest(source: str) -> str:
    return hashlib.sha256(source.encode()).hexdigest()


USAGE = "usage: python -m aac.data.mutants folder=DIR [seed=S]"
KEYS = (Key("folder", "a folder with train.jsonl and/or test.jsonl (python -m aac.data.build out=DIR)", required=True),
        Key("seed", "seeds which candidate mutants are tried", int, 0))


@entry_point
def main(argv: list[str] | None = None) -> int:
    a = parse_keys(argv, KEYS, USAGE, doc="Add the mutants column to a folder of PAU rows, in place.")
    from aac.sandbox.pool import SandboxPool

    folder = Path(a.folder)
    splits = [s for s in ("train", "test") if (folder / f"{s}.jsonl").exists()]
    if not splits:
        raise DatasetError(f"{folder}: no train.jsonl or test.jsonl (a folder that python -m aac.data.build "
                           "out=DIR wrote)")
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    with SandboxPool(workers=2) as pool:
        print(add_to_folder(folder, pool, splits=splits, seed=a.seed)["text"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
