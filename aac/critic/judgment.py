"""What the critic is asked to grade: one turn, with what the actor had seen when it wrote it; and
`Critic`, what every critic (LLM or scripted) answers it through."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional, Protocol

if TYPE_CHECKING:
    from aac.env.instance import Instance
    from aac.env.observation import Observation


@dataclass
class Judgment:
    kind: str  # "informativeness" (a reasoning turn's plan) | "hypothesis" (a reflect turn's summary)
    instance: Instance
    hypothesis: str  # the hypothesis the graded turn worked from (reflect: the revised one)
    observations: list[Observation]  # the calls seen so far
    text: str  # what is graded: the plan, or the hypothesis (empty: `hypothesis` is graded)
    # informativeness: the input the plan's input turn actually called (None: that turn made no call,
    # or the episode ended first); lets a scorer judge the realised query, not only the plan
    query: Optional[str] = None
    # informativeness: what that call gave, as the actor saw it (None: no call); the symmetric scripted
    # critic reads a call's result here, not from the source
    answer: Optional[Observation] = None


class Critic(Protocol):
    """`PrivilegedCritic` (an LLM) or `ScriptedCritic`: a score in [0, 1] per judgment (None: no score),
    and health counters since start."""

    def score(self, judgments: list[Judgment]) -> list[Optional[float]]: ...

    def counts(self) -> dict[str, float]: ...

    def close(self) -> None: ...
