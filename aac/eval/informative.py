"""Informative calls of an interactive episode: what the sandbox can verify about its queries.

A call is informative when the coverage critic (`critic.informativeness=coverage`,
aac/critic/coverage.py) scores it above 0: it reached branch arcs of the function that the episode's
earlier calls (the context examples included) had not, or it returned a result not seen before in the
episode; a call that raised or timed out is not (the reward counts it a format failure). The same rule
scores plans in training, so a tuned actor's count here is the signal it was trained on, measured on
held-out functions. PAU functions only (a stateful object's or a library's calls have no branch arcs of
their own to measure): None elsewhere.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from aac.critic.judgment import Judgment
from aac.env.observation import Observation

if TYPE_CHECKING:
    from aac.critic.coverage import CoverageInformativeness
    from aac.env.instance import Instance


def count_informative(episode: dict, instance: Instance, coverage: CoverageInformativeness) -> Optional[int]:
    """The informative calls among `episode`'s queries (an `aac.eval` record); `coverage` is a
    `CoverageInformativeness`. None for an in-context record or a domain other than pau."""
    if episode.get("mode") != "interactive" or instance.domain != "pau":
        return None
    seen = [Observation(*o) for o in episode["observations"]]
    first = len(seen) - episode["num_queries"]  # the context examples come first, then one per query
    asked = [Judgment("informativeness", instance, "", seen[:k], "", query=seen[k].input)
             for k in range(first, len(seen))]
    scores = coverage.score(asked) if asked else []
    return sum(s is not None and s > 0 for s in scores)
