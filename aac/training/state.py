"""Where a run's state lives between steps: the learner's state of each version (what a rebuilt learner
restores), the run's config and the checkpoints a resumed run starts from.

Resume (`resume=true` with `out_dir=RUN`, or `resume=RUN_DIR`, or `resume=RUN/checkpoints/step_N`):
- the run's config comes back from `RUN/config.yaml` (written at every start of the run, resolved), so
  `python -m aac.train out_dir=RUN resume=true` needs no `+recipe=`; a key the command line sets
  differently from it is refused in one line, unless it is one of `RESUME_MAY_CHANGE`;
- the newest intact checkpoint is the one resumed (files checked against its manifest,
  `aac.run_dir.checkpoint_of`): a damaged newer one is named in one warning and left in place; none intact is
  one line (`CheckpointDamaged`); a run killed before its first checkpoint starts again at step 0
  with its own config;
- a path with no run (no config.yaml, no checkpoints) is an error (`ResumeError`).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

import aac.checkpoint as checkpoint
import aac.run_dir as run_dir
from aac.errors import UserError
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


# what a resumed run may set anew (a key, or a section with all its keys): how long it goes on, how often
# it checkpoints and evaluates, where it writes and logs, how many restarts it allows; every other key is
# the run's own, and a command line that sets one differently is refused
RESUME_MAY_CHANGE = ("resume", "out_dir", "max_steps", "time_budget_s", "time_budget_min_steps", "save_every",
                     "keep_checkpoints", "keep_adapters", "eval_every", "eval_limit", "logging", "max_actor_restarts", "ray")
_ABSENT = object()


class ResumeError(UserError):
    """`resume=` names no run, or the command line changes a key a resumed run keeps."""

    what = "cannot resume"


@dataclass(frozen=True)
class ResumePoint:
    run_dir: Path  # the run resumed (its config.yaml)
    checkpoint: Optional[Path]  # the intact checkpoint it goes on from; None: killed before its first


def _wants(resume: object) -> Optional[str]:
    """`cfg.resume` as None (fresh), "true" (the run in out_dir) or a path."""
    text = str(resume)
    if resume in (False, None) or text.lower() in ("false", "none", ""):
        return None
    return "true" if resume is True or text.lower() == "true" else text


def resume_point(resume: object, out_dir: Path) -> Optional[ResumePoint]:
    """Where `resume` (`cfg.resume`) goes on from; None for a fresh run."""
    want = _wants(resume)
    if want is None:
        return None
    given = Path(out_dir if want == "true" else want).expanduser()
    run = run_dir.run_of(given)
    ckpt, damaged = run_dir.checkpoint_of(given)  # a checkpoint named: that one, intact, or CheckpointDamaged
    if damaged:
        log.warning("resume: %s damaged (%s); resuming from %s", "checkpoints" if len(damaged) > 1 else "checkpoint",
                    "; ".join(damaged), ckpt.name)
    if ckpt is None and run_dir.config_file(run) is None:
        raise ResumeError(f"{given}: no run to resume there (no {run_dir.CONFIG}, no {run_dir.CHECKPOINTS}/); give the "
                          "out_dir of an aac.train run, or drop resume= to start one")
    return ResumePoint(run, ckpt)


def _override_keys(overrides: Sequence[str]) -> list[str]:
    """The config keys a command line's Hydra overrides set (`model=NAME`: the section; `+recipe=`: the
    recipe's name)."""
    keys = []
    for ov in overrides:
        key = ov.split("=", 1)[0].lstrip("+~")
        if not key.startswith("hydra."):
            keys.append("recipe_name" if key == "recipe" else key)
    return keys


def _leaves(node: object, prefix: str = "") -> list[str]:
    if isinstance(node, dict):
        return [k for name, v in node.items() for k in _leaves(v, f"{prefix}{name}.")] or [prefix[:-1]]
    return [prefix[:-1]]


def restore_config(cfg: TrainConfig, point: ResumePoint, overrides: Optional[Sequence[str]]) -> TrainConfig:
    """The resumed run's config: its saved one, with the keys of `RESUME_MAY_CHANGE` that `overrides` set
    taken from `cfg`. `overrides`: the command line's (None: `cfg` was composed in code, every key counts
    as set). A run saved before config.yaml existed: `cfg` as it is."""
    from omegaconf import OmegaConf

    from aac.config import TrainConfig, validate

    path = run_dir.config_file(point.run_dir)
    if path is None:
        log.warning("resume: %s has no %s (a run from before it was saved): resuming with this command line's "
                    "config; give the run's +recipe= and overrides again", point.run_dir, run_dir.CONFIG)
        return cfg
    saved = OmegaConf.merge(OmegaConf.structured(TrainConfig), OmegaConf.load(path))
    mine = OmegaConf.to_container(cfg, resolve=True)
    keys = _leaves(mine) if overrides is None else _override_keys(overrides)
    for key in keys:
        new = OmegaConf.select(cfg, key, default=_ABSENT)
        if any(key == k or key.startswith(k + ".") for k in RESUME_MAY_CHANGE):
            OmegaConf.update(saved, key, new, merge=False)
            continue
        old = OmegaConf.select(saved, key, default=_ABSENT)
        plain = [OmegaConf.to_container(v, resolve=True) if OmegaConf.is_config(v) else v for v in (new, old)]
        if plain[0] != plain[1]:
            raise ResumeError(f"{path}: {key}={_show(plain[0])} differs from the run's {_show(plain[1])}; a resumed run "
                              f"keeps its config but for {', '.join(RESUME_MAY_CHANGE)}: drop the override, or "
                              "start a new run in another out_dir")
    validate(saved)
    return saved


def _show(value: object) -> str:
    return "(unset)" if value is _ABSENT else str(value)


def save_config(cfg: TrainConfig, out_dir: Path) -> None:
    """The run's one saved config (aac/run_dir.py): resolved, so a `${now:}` out_dir stays the run's."""
    from omegaconf import OmegaConf

    run_dir.write_config(out_dir, OmegaConf.to_yaml(cfg, resolve=True))


def run_config(cfg: TrainConfig, out_dir: Path) -> tuple[TrainConfig, Optional[ResumePoint]]:
    """The run's config and where it resumes from: a resumed run's own (RUN/config.yaml), checked against the
    command line's overrides; saved in the run dir either way."""
    from aac.cli import command_line_overrides

    point = resume_point(cfg.resume, out_dir)
    if point is not None:
        cfg = restore_config(cfg, point, command_line_overrides() or None)
    save_config(cfg, out_dir)
    return cfg, point


def resume(cfg: TrainConfig, point: Optional[ResumePoint], learner: LearnerLike,
           metrics: Path) -> tuple[int, int, Optional[Ahead]]:
    """(step, adapter version, the rollout collected ahead or None) to start from: `point`'s checkpoint
    restored into `learner`, the metrics after it dropped; (0, 0, None) when fresh (or no checkpoint yet)."""
    if point is None or point.checkpoint is None:
        if point is not None:
            truncate(metrics, 0)
            log.info("resume: %s has no checkpoint yet; starting it again from step 0 with its config", point.run_dir)
        return 0, 0, None
    state = checkpoint.load(point.checkpoint, learner=learner)
    if state.get("config_hash") != checkpoint.config_hash(cfg):
        log.info("resume: settings changed since the checkpoint (only keys a resume may change: %s)",
                 ", ".join(RESUME_MAY_CHANGE))
    truncate(metrics, state["step"])  # steps after the checkpoint rerun
    log.info("resumed from %s at step %d (adapter v%d)", point.checkpoint, state["step"], state["version"])
    return state["step"], state["version"], state["ahead"]
