"""One step's episodes spread over the rollout workers, and their batches merged back.

Episode keys are their position in the step, and the step seeds them, so the same step samples the
same tokens whatever the split across workers (`aac.rollout.driver.turn_seed`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from aac.env.instance import Instance
from aac.env.protocol import ProtocolConfig
from aac.rollout.driver import EpisodeSpec, SamplingSpec
from aac.rollout.workers import RolloutBatch, RolloutWorker

if TYPE_CHECKING:
    from aac.placement import Placed


def episode_specs(groups: list[list[Instance]]) -> list[EpisodeSpec]:
    """One episode per (group, instance): `groups[g]` are group g's episodes, keyed in order."""
    pairs = [(g, inst) for g, group in enumerate(groups) for inst in group]
    return [EpisodeSpec(key, inst, g) for key, (g, inst) in enumerate(pairs)]


class LaunchedStep:
    """A step's rollout sent to the workers (Ray runs it meanwhile; in-process it ran at launch)."""

    def __init__(self, workers: list[Placed[RolloutWorker]], futures: list[object]):
        self.workers, self.futures = workers, futures

    def result(self) -> RolloutBatch:
        return RolloutBatch.merge(self.workers[0].gather(self.futures))


def launch_step(workers: list[Placed[RolloutWorker]], groups: list[list[Instance]], *, adapter: Optional[str], seed: int,
                sampling: Optional[SamplingSpec] = None, protocol: Optional[ProtocolConfig] = None) -> LaunchedStep:
    """Send `groups` to `workers` (placed pieces, run side by side) to be played and scored.
    `sampling` and `protocol` replace the workers' training ones (held-out evaluation)."""
    specs = episode_specs(groups)
    shares = [specs[i :: len(workers)] for i in range(len(workers))]
    return LaunchedStep(workers, [w.submit("run", share, adapter=adapter, seed=seed, sampling=sampling,
                                           protocol=protocol) for w, share in zip(workers, shares) if share])
