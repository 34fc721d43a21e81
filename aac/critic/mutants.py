"""The mutants critic (`critic.kind=mutants`): information measured exactly, over a hypothesis space.

A row's mutants (its `mutants` column, aac/data/mutants.py) are single-point changes of the source that
its context examples do not tell from the original and one of its test inputs does: the alternatives
the actor cannot yet rule out. In an episode each input is run, in the sandbox, on the mutants still
alive before it (and on the original); a mutant whose outcome differs (the normalised output, or the
exception's type; a call cut short kills nothing) is killed. With M the row's mutants:

- informativeness of a plan: the share of the mutants alive before its call (`Judgment.query`, after
  `Judgment.observations`) that the call kills; 0.0 when it made no call or none were left alive;
- hypothesis quality after the episode's calls: the share of the M mutants killed.

So `rewards.stop_threshold` keeps its meaning: a stop is right when more than that share of the
alternatives the context left open is ruled out (0.7 of 16: 12 killed), premature before, and
`rewards.continue_threshold` pays going on while fewer than its share are. The hypothesis text plays no
part; nothing the actor sees is read that the critic does not run itself.

A row whose mutants were built but none kept (the context already tells every one apart, or the
function offers no mutation point) is scored by the scripted rule (`critic.scripted_*`,
aac/critic/scripted.py), counted in `mutants_fallback`: the arm keeps a verified stop on every function.
Rows without the column at all are refused when training starts (`require_mutants`).
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Optional

from aac.critic.critic import Counted, _Counters
from aac.critic.judgment import Judgment
from aac.data.mutants import KillRunner
from aac.env.domains import get_domain
from aac.env.instance import DatasetError

if TYPE_CHECKING:
    from collections.abc import Sequence

    from aac.config import CriticConfig
    from aac.critic.scripted import ScriptedCritic
    from aac.env.domains import Caller
    from aac.env.instance import Instance


def require_mutants(instances: Sequence[Instance], data: str) -> None:
    """DatasetError (one line, naming the fix) when a row has no `mutants` column (critic.kind=mutants)."""
    missing = [i.uid for i in instances if i.mutants is None]
    if missing:
        raise DatasetError(f"{data}: critic.kind=mutants needs rows with mutants; {len(missing)} of {len(instances)} "
                           f"have none (first: {missing[0]}): add them with python -m aac.data.mutants folder=DIR (a folder "
                           "of PAU rows; builtin sets get them when loaded), or set critic.kind=scripted")


class MutantsCritic(Counted):
    def __init__(self, cfg: CriticConfig, *, fallback: ScriptedCritic, caller: Optional[Caller] = None) -> None:
        """`fallback`: the scripted critic that scores rows without a mutant kept."""
        if caller is None:
            from aac.env.protocol import sandbox_caller

            caller = sandbox_caller(None)
        self.runner = KillRunner(caller, timeout_s=cfg.coverage_call_timeout_s)
        self.fallback = fallback
        self._counters = _Counters()
        self._lock = threading.Lock()

    def score(self, judgments: list[Judgment]) -> list[Optional[float]]:
        """One score per judgment, in order; None where the function could not be measured."""
        own = [k for k, j in enumerate(judgments) if j.instance.mutants]
        rest = [k for k, j in enumerate(judgments) if not j.instance.mutants]
        out: list[Optional[float]] = [None] * len(judgments)
        for k, s in zip(rest, self.fallback.score([judgments[k] for k in rest]) if rest else []):
            out[k] = s
        calls = self.runner.calls
        walks = self.runner.survivors([(judgments[k].instance, self._inputs(judgments[k])) for k in own])
        for k, alive in zip(own, walks):
            out[k] = self._score(judgments[k], alive)
        with self._lock:
            c = self._counters
            c.judgments += len(judgments)
            c.coverage_judgments += len(judgments)  # measured in the sandbox, one way or the other
            c.coverage_failures += sum(s is None for s in out)
            c.mutants_fallback += len(rest)
            c.mutant_calls += self.runner.calls - calls
        return out

    @staticmethod
    def _inputs(j: Judgment) -> list[str]:
        inputs = [o.input for o in j.observations]
        return inputs + [j.query] if j.kind == "informativeness" and j.query is not None else inputs

    @staticmethod
    def _score(j: Judgment, alive: list[frozenset[int]]) -> float:
        """`alive[p]`: the mutants alive before the p-th input of `_inputs(j)`, and after the last."""
        if j.kind == "informativeness":
            if j.query is None or not alive[-2]:
                return 0.0
            return len(alive[-2] - alive[-1]) / len(alive[-2])
        first = len(get_domain(j.instance.domain).context(j.instance))  # alive after the context: all, as built
        start = alive[min(first, len(alive) - 1)]
        return (len(start) - len(alive[-1])) / len(start) if start else 1.0

    def close(self) -> None:
        self.runner.close()
        self.fallback.close()
