"""Handing the learner's adapter to the engine after each update, and checking that it is served.

Each version is written to `OUT/adapters/vNNNNNN/` and hot-loaded into the actor's engine under the
adapter name `actor`. The check compares the engine's log-probs of a probe with the learner's: the
engine is stale when its gap to the learner exceeds `sync_tolerance` (the numeric floor) and it is
not closer to the new weights than to the previous ones (a bf16 engine sits ~0.15/token from an fp32
learner when synced, so the floor alone cannot tell; benchmarks/RESULTS.md)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Optional

import numpy as np

ACTOR = "actor"  # the engine's name for the trained adapter


class SyncError(RuntimeError):
    """The engine does not serve the adapter the learner holds."""


Probe = tuple[list[int], list[int]]  # prompt ids, completion ids


class AdapterSync:
    """`sync(version, probe, before)`: save, load, check. `sync_adapter=false` skips the load after
    version 0 (only to test the check); `check_sync=false` skips the check."""

    def __init__(self, learner: Any, engine: Any, adapters: Path, *, sync_adapter: bool, check_sync: bool,
                 tolerance: float):
        self.learner, self.engine, self.adapters = learner, engine, adapters
        self.sync_adapter, self.check_sync, self.tolerance = sync_adapter, check_sync, tolerance

    def path(self, version: int) -> Path:
        return self.adapters / f"v{version:06d}"

    def probe_before(self, probe: Optional[Probe]) -> Optional[list[float]]:
        """The learner's log-probs of `probe` under the weights about to be replaced."""
        return self.learner.token_logprobs(*probe) if probe is not None and self.check_sync else None

    def sync(self, version: int, probe: Optional[Probe] = None, before: Optional[list[float]] = None) -> dict[str, float]:
        """Hand the learner's adapter to the engine as `version`; check it on `probe` (`before`: the
        learner's log-probs of it under the previous version)."""
        t0 = time.perf_counter()
        path = self.path(version)
        self.learner.save_adapter(str(path))
        if self.sync_adapter or version == 0:
            self.engine.load_adapter(ACTOR, str(path), version)
        out = {"time/sync_s": time.perf_counter() - t0}
        if probe is not None and self.check_sync:
            out.update(self._check(version, probe, before))
        return out

    def _check(self, version: int, probe: Probe, before: Optional[list[float]]) -> dict[str, float]:
        theirs = np.asarray(self.engine.score(*probe, ACTOR))
        gap = float(np.mean(np.abs(np.asarray(self.learner.token_logprobs(*probe)) - theirs)))
        out = {"sync/logprob_gap": gap}
        if before is not None:
            out["sync/logprob_gap_previous"] = float(np.mean(np.abs(np.asarray(before) - theirs)))
        if gap > self.tolerance and gap >= out.get("sync/logprob_gap_previous", 0.0):
            raise SyncError(
                f"engine log-probs differ from the learner's by {gap:.4f}/token (> sync_tolerance "
                f"{self.tolerance}, and no closer than to the previous weights) after loading "
                f"adapter v{version}: the engine is serving a stale adapter")
        return out
