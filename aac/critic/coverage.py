"""Informativeness measured, not judged (`critic.informativeness=coverage`).

The critic holds the function's source, so it can check what a query explored instead of asking an
LLM to guess. For the call that a reasoning turn's plan led to (`Judgment.query`), after the calls the
episode made before it (`Judgment.observations`, context examples included):

    score = (1 - w) * (branch arcs of the true function first reached by this call / all its branch arcs)
            + w * (1 if the call's result was not seen before in the episode, else 0)

with w = `critic.coverage_output_weight`. A function without branch arcs scores the output term
alone (scaled to 1). A judgment with no call (query None) scores 0: nothing was explored; so does a
call that raised or timed out, which the reward counts a format failure with nothing observed
(aac/rewards/terms.py): paid as a new result (its exception type), a 135M actor's wrong-arity TypeError
earned its plan as much as the input turn lost, so a failing call cost nothing (issue 31). The arcs
come from the builder's `CoverageRunner` (coverage.py with branch=True, in a forked, rlimited
helper); the validator the dataset prepends (`validate_input_args`) is not the true function, so its
arcs do not count. The result comes from the sandbox (the `caller`), compared through the one output
normalisation (an earlier call's error as its exception type).

How this differs from the paper: the paper's critic LLM rates the reasoning turn's *plan* (0-9)
against the current hypothesis, before the call is made. This scores the *realised* call (so an input
turn that ignores its plan is what gets measured), is exact and free of LLM noise and parse failures,
and knows nothing of the hypothesis: a call that reaches new code or a new result is informative
whether or not it tests the current belief. Its arc term sums to at most 1 - w over an episode; the
output term pays every new result.
"""

from __future__ import annotations

import ast
import hashlib
import threading
from collections import OrderedDict
from typing import TYPE_CHECKING, Optional

from aac.critic.judgment import Judgment

if TYPE_CHECKING:
    from aac.data.coverage import CoverageRunner
    from aac.env.domains import Caller

ARC_CACHE_ENTRIES = 100_000  # (function, input) -> arcs; an episode's calls are re-measured each turn
VALIDATOR = "validate_input_args"


def true_branch_arcs(source: str, branch_arcs: frozenset) -> frozenset:
    """The branch arcs outside the prepended validator (the dataset's, not the function's)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return branch_arcs
    spans = [(n.lineno, n.end_lineno or n.lineno) for n in tree.body
             if isinstance(n, ast.FunctionDef) and n.name == VALIDATOR]
    return frozenset(a for a in branch_arcs if not any(lo <= abs(a[0]) <= hi for lo, hi in spans))


def result_key(output_repr: str, error: Optional[str]) -> str:
    """What makes two results the same: the normalised output, or the exception's type."""
    from aac.sandbox.values import canonical_json, normalize

    if error is not None:
        return "error:" + error.split(":", 1)[0].strip()
    return "value:" + canonical_json(normalize(output_repr))


class CoverageInformativeness:
    def __init__(self, caller: Optional[Caller] = None, *, output_weight: float = 0.5,
                 call_timeout_s: float = 2.0, runner: Optional[CoverageRunner] = None) -> None:
        if caller is None:
            from aac.env.protocol import sandbox_caller

            caller = sandbox_caller(None)
        if runner is None:
            from aac.data.coverage import CoverageRunner

            runner = CoverageRunner(call_timeout_s=call_timeout_s)
        self.caller = caller
        self.runner = runner
        self.output_weight = output_weight
        self.call_timeout_s = call_timeout_s
        self._arcs: OrderedDict[tuple[str, str], Optional[frozenset]] = OrderedDict()
        self._functions: dict[str, tuple[frozenset, frozenset]] = {}  # digest -> (true branch arcs, baseline)
        self._lock = threading.Lock()

    def close(self) -> None:
        self.runner.close()

    def score(self, judgments: list[Judgment]) -> list[Optional[float]]:
        """One score in [0, 1] per informativeness judgment; None where the function could not be measured."""
        self.measure(judgments)
        return [self._score(j) for j in judgments]

    def measure(self, judgments: list[Judgment]) -> None:
        """Arcs of every input not yet measured, one runner request per function."""
        wanted: dict[str, tuple[str, set[str]]] = {}
        for j in judgments:
            if j.query is None:
                continue
            code = j.instance.code
            digest = _digest(code)
            inputs = wanted.setdefault(digest, (code, set()))[1]
            for text in [o.input for o in j.observations] + [j.query]:
                if (digest, text) not in self._arcs:
                    inputs.add(text)
        for digest, (code, inputs) in wanted.items():
            if not inputs:
                continue
            ordered = sorted(inputs)
            report = self.runner.measure(code, ordered)
            with self._lock:
                if report.error is None:
                    self._functions[digest] = (true_branch_arcs(code, report.branch_arcs), report.baseline)
                for text, arcs in zip(ordered, report.per_input):
                    self._arcs[(digest, text)] = arcs if report.error is None else None
                while len(self._arcs) > ARC_CACHE_ENTRIES:
                    self._arcs.popitem(last=False)

    def new_branch_arcs(self, j: Judgment) -> Optional[tuple[frozenset, frozenset]]:
        """(the function's branch arcs, those of them `j.query` reached first) after `measure([j])`;
        None when the function could not be measured."""
        digest = _digest(j.instance.code)
        if digest not in self._functions:  # the module itself failed under coverage
            return None
        branch, baseline = self._functions[digest]
        seen = set(baseline)
        for o in j.observations:
            seen |= self._arcs.get((digest, o.input)) or set()
        reached = self._arcs.get((digest, j.query)) or frozenset()
        return branch, (reached - seen) & branch

    def _score(self, j: Judgment) -> Optional[float]:
        if j.query is None:
            return 0.0
        arcs = self.new_branch_arcs(j)
        if arcs is None:
            return None
        branch, new = arcs
        call = self.caller(j.instance.code, j.query, self.call_timeout_s)
        if not call.ok:
            return 0.0
        new_result = result_key(call.output_repr, call.error) not in {
            result_key(o.output_repr, o.error) for o in j.observations}
        if not branch:
            return float(new_result)
        share = len(new) / len(branch)
        return (1.0 - self.output_weight) * share + self.output_weight * float(new_result)


def _digest(code: str) -> str:
    return hashlib.sha256(code.encode()).hexdigest()
