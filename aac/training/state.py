"""Where a run's state lives between steps: the learner's state of each version (what a rebuilt learner
restores) and the checkpoints a resumed run starts from."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

from aac import checkpoint
from aac.learner.batching import Sample
from aac.metrics import truncate

if TYPE_CHECKING:
    from aac.config import TrainConfig
    from aac.learner import LearnerLike
    from aac.training.pipeline import Ahead

log = logging.getLogger("aac.train")


class LearnerStates:
    """`OUT/learner/state_vNNNNNN.pt`: the state after version N's update, written by the learner where it
    lives. The current version's and the next one's are kept: a learner rebuilt before a step ends
    restores the current one, so the retried update is applied once."""

    def __init__(self, root: Path):
        self.root = root
        root.mkdir(parents=True, exist_ok=True)

    def path(self, version: int) -> Path:
        return self.root / f"state_v{version:06d}.pt"

    def commit(self, learner: LearnerLike, version: int) -> None:
        learner.save_state(str(self.path(version)))

    def restore(self, learner: LearnerLike, version: int) -> None:
        learner.load_state(str(self.path(version)))

    def update(self, learner: LearnerLike, samples: list[Sample], version: int) -> dict[str, Any]:
        """One update from `version`'s state; its result saved as `version + 1`'s."""
        out = learner.update(samples)
        self.commit(learner, version + 1)
        self.path(version - 1).unlink(missing_ok=True)
        return out


def resume(cfg: TrainConfig, ckpt_root: Path, learner: LearnerLike, metrics: Path) -> tuple[int, int, Optional[Ahead]]:
    """(step, adapter version, the rollout collected ahead or None) to start from: `cfg.resume` (false,
    true = the latest under `ckpt_root`, or a checkpoint path) restored into `learner`, the metrics after
    it dropped; (0, 0, None) when fresh."""
    want = cfg.resume
    if want in (False, None, "false", "False"):
        return 0, 0, None
    path = checkpoint.latest(ckpt_root) if want in (True, "true", "True") else Path(str(want))
    if path is None or not path.exists():
        log.info("resume: no checkpoint under %s, starting fresh", ckpt_root)
        return 0, 0, None
    state = checkpoint.load(path, learner=learner)
    if state.get("config_hash") != checkpoint.config_hash(cfg):
        log.warning("resume: config differs from the checkpoint's; continuing with the new one")
    truncate(metrics, state["step"])  # steps after the checkpoint rerun
    log.info("resumed from %s at step %d (adapter v%d)", path, state["step"], state["version"])
    return state["step"], state["version"], state["ahead"]
