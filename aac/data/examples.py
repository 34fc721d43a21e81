"""Examples as the builders store them: a sandbox result made storable, the choice of two distinct
outputs for the context, and the check that stored examples reproduce."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from aac.data.coverage import Arc
from aac.sandbox.values import canonical_json, outputs_match

if TYPE_CHECKING:
    from aac.env.instance import Instance
    from aac.sandbox.pool import CallResult, SandboxPool


@dataclass(eq=False)  # compared by identity: each input is one example
class Example:
    input: str
    args: tuple
    output: Any  # as stored: its JSON value (tuples as lists), or its repr string
    key: str  # canonical JSON of the output, to compare outputs
    arcs: frozenset[Arc] | None
    seed: bool  # came from the source's own tests


def stored_output(result: CallResult, max_chars: int) -> tuple[Any, str] | None:
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


def two_distinct(pool: Iterable[Example]) -> list[Example]:
    """The first two examples of `pool` with different outputs (fewer when there are none)."""
    out: list[Example] = []
    for e in pool:
        if all(e.key != o.key for o in out):
            out.append(e)
        if len(out) == 2:
            break
    return out


def unreproduced(instances: Iterable[Instance], pool: SandboxPool, *, timeout_s: float = 5.0,
                 program: Callable[[Instance], str] = lambda inst: inst.code) -> set[str]:
    """uids of the rows whose stored context and test examples do not all reproduce in `pool` (give
    it a fresh one); `program`: the source run on an example's input (a domain's harness around the code)."""
    jobs = [(inst, i, o) for inst in instances for i, o in [*inst.train_examples, *inst.test_examples]]
    results = pool.call_many([(program(inst), i) for inst, i, _ in jobs], timeout_s=timeout_s)
    return {inst.uid for (inst, _, out), r in zip(jobs, results) if not (r.ok and outputs_match(out, r.normalized))}
