"""Query efficiency: how fast an episode's queries rule out the alternatives the context left open (the row's
mutants, aac/data/mutants.py), beside an oracle that asks the best questions the builder found.

For the queries of an episode (its call inputs, in order, the context examples excluded) and its instance:
- `killed[k - 1]`: the share of the row's mutants killed after the first k queries, k = 1 .. n (a mutant is
  killed by an input whose outcome, the normalised output or the exception's type, differs from the original's;
  each query runs on the mutants still alive, as the mutants critic runs it);
- `queries_to_90`: the fewest queries after which at least 90% are killed (None: never);
- the oracle, greedy over the row's test inputs: at each step the input that kills the most mutants still
  alive (ties: the first in the row), until none kills more. Every stored mutant has a test input that kills
  it, so it ends at 100%: `oracle_killed`, `oracle_queries_to_90`.
None for a row without mutants built or with none kept. The input is plain (query strings and the instance),
so stored episodes can be scored again (`query_efficiency(record_queries(rec), instance)`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Optional

from aac.data.mutants import KillRunner
from aac.eval.stats import mean_std, pct

if TYPE_CHECKING:
    from aac.env.instance import Instance

TARGET = 0.9  # the share of mutants `queries_to_90` asks for


def record_queries(episode: dict) -> list[str]:
    """The call inputs of an `aac.eval` episode record, in order (its observations after the context)."""
    observations = episode.get("observations") or []
    return [o[0] for o in observations[len(observations) - episode.get("num_queries", 0):]]


def query_efficiency(queries: Sequence[str], instance: Instance, runner: Optional[KillRunner] = None) -> Optional[dict]:
    """The curves of `queries` (see the module doc); `runner` runs the calls (default: the process's sandbox pool,
    a 2 s timeout per call)."""
    if not instance.mutants:
        return None
    own = runner is None
    if runner is None:
        from aac.env.protocol import sandbox_caller

        runner = KillRunner(sandbox_caller(None), timeout_s=2.0)
    try:
        context = [x for x, _ in instance.train_examples]
        (alive,) = runner.survivors([(instance, [*context, *queries])])
        start = alive[len(context)]
        if not start:
            return None
        tests = [x for x, _ in instance.test_examples]
        oracle = _greedy(runner.kills(instance, tests, sorted(start)), start)
    finally:
        if own:
            runner.close()
    killed = [round(1 - len(a) / len(start), 4) for a in alive[len(context) + 1:]]
    return {"mutants": len(start), "killed": killed, "queries_to_90": _reach(killed),
            "oracle_killed": oracle, "oracle_queries_to_90": _reach(oracle)}


def _greedy(kills: list[set[int]], alive: frozenset[int]) -> list[float]:
    left, out = set(alive), []
    while left:
        best = max(range(len(kills)), key=lambda k: (len(kills[k] & left), -k), default=None)
        if best is None or not kills[best] & left:
            break
        left -= kills[best]
        out.append(round(1 - len(left) / len(alive), 4))
    return out


def _reach(curve: list[float]) -> Optional[int]:
    return next((k + 1 for k, share in enumerate(curve) if share >= TARGET), None)


def _at(curve: list[float], k: int) -> float:
    """The share after k queries (k >= 1): an episode that stopped asking keeps its last share."""
    return curve[min(k, len(curve)) - 1] if curve else 0.0


def summarize_efficiency(records: Sequence[dict]) -> Optional[dict]:
    """Means over the episodes' `query_efficiency` records (None: no episode had one). `killed_at_k[k - 1]`:
    the mean share killed after k queries, k = 1 .. the most any episode asked (an episode that stopped keeps
    its last share); `vs_oracle_mean`: the share an episode killed over the oracle's with as many queries."""
    qe = [r for r in records if r]
    if not qe:
        return None
    longest = max(max(len(r["killed"]), len(r["oracle_killed"])) for r in qe)
    asked = [r for r in qe if r["killed"]]
    reached = [r["queries_to_90"] for r in qe if r["queries_to_90"] is not None]
    oracle_reached = [r["oracle_queries_to_90"] for r in qe if r["oracle_queries_to_90"] is not None]
    return {
        "episodes": len(qe), "mutants_mean": mean_std([r["mutants"] for r in qe])[0],
        "killed_mean": mean_std([_at(r["killed"], len(r["killed"])) if r["killed"] else 0.0 for r in qe])[0],
        "killed_at_k": [mean_std([_at(r["killed"], k) for r in qe])[0] for k in range(1, longest + 1)],
        "oracle_killed_at_k": [mean_std([_at(r["oracle_killed"], k) for r in qe])[0] for k in range(1, longest + 1)],
        "queries_to_90_mean": mean_std(reached)[0] if reached else None,
        "reached_90_pct": pct([r["queries_to_90"] is not None for r in qe]),
        "oracle_queries_to_90_mean": mean_std(oracle_reached)[0] if oracle_reached else None,
        "oracle_reached_90_pct": pct([r["oracle_queries_to_90"] is not None for r in qe]),
        "vs_oracle_mean": mean_std([_at(r["killed"], len(r["killed"])) / o for r in asked
                                    if (o := _at(r["oracle_killed"], len(r["killed"]))) > 0])[0] if asked else None,
    }
