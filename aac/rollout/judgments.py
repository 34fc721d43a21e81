"""What the critic is asked about each played turn: one rule for `aac.train`'s rollout workers and
the SkyRL adapter (aac/skyrl/reward_env.py), so both score the same questions.

A turn here is anything with `step` (its `StepRecord`), `hypothesis` and `observations` (what the
actor had seen when it wrote it), such as the driver's `PlayedTurn` (`TurnLike`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Optional, Protocol

from aac.rewards.terms import HYPOTHESIS, INFORMATIVENESS, graded_text, judgment_kind

if TYPE_CHECKING:
    from aac.config import RewardConfig
    from aac.critic import Critic, Judgment
    from aac.env.instance import Instance
    from aac.env.observation import Observation
    from aac.env.protocol import StepRecord


class TurnLike(Protocol):
    """A played turn as its judgment reads it (the driver's `PlayedTurn` is one)."""

    step: StepRecord
    hypothesis: str  # the hypothesis the actor held when it wrote the turn
    observations: list[Observation]  # the calls it had seen


def reads_next_turn(step: StepRecord, rewards: RewardConfig) -> bool:
    """Whether the judgment of `step` reads the turn after it: a plan's informativeness judges the
    input its input turn actually called (`Judgment.query`), so it is known only once that turn is
    played (or the episode ended first)."""
    return judgment_kind(step, rewards) == INFORMATIVENESS


def turn_judgment(instance: Instance, turn: TurnLike, next_step: Optional[StepRecord],
                  rewards: RewardConfig) -> Optional[Judgment]:
    """The critic judgment `turn` needs under the schedule (`rewards.*`), or None; `next_step` is the
    step played after it (None: the episode ended on this turn)."""
    from aac.critic import Judgment
    from aac.env.observation import Observation

    step = turn.step
    kind = judgment_kind(step, rewards)
    if kind is None:
        return None
    # a hypothesis is judged as the step leaves it, against everything seen (its call included)
    hypothesis = step.hypothesis if kind == HYPOTHESIS else turn.hypothesis
    call = next_step.call if next_step is not None else None
    query = next_step.parsed if call is not None else None
    answer = Observation(query, call.output_repr, call.error) if call is not None and query is not None else None
    return Judgment(kind=kind, instance=instance, hypothesis=hypothesis, observations=turn.observations,
                    text=graded_text(step, kind), query=query, answer=answer)


def turn_judgments(instance: Instance, turns: Sequence[TurnLike], rewards: RewardConfig) -> list[Optional[Judgment]]:
    """`turn_judgment` of every turn of a finished episode, in order."""
    return [turn_judgment(instance, turn, turns[t + 1].step if t + 1 < len(turns) else None, rewards)
            for t, turn in enumerate(turns)]


def score_each(critic: Critic, judgments: Sequence[Optional[Judgment]]) -> list[Optional[float]]:
    """The critic's score of each judgment in ONE batched call; None where there is no judgment."""
    asked = [j for j in judgments if j is not None]
    scores = iter(critic.score(asked) if asked else [])
    return [next(scores) if j is not None else None for j in judgments]
