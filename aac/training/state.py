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

import aac.run_dir as run_dir
from aac.errors import UserError
from aac.metrics import truncate

if TYPE_CHECKING:
    from aac.config import TrainConfig
    from aac.learner import LearnerLike
    from aac.learner.batching import Sample
    from aac.training.pipeline import Ahead

log = logging.getLogger("aac.train")


class LearnerStates:
    """What a rebuilt learner restores: the state written at the checkpoint cadence (`commit`, to
    `OUT/learner/state_vNNNNNN.pt` by the learner where it lives; only the newest is kept) and the samples of
    every update since (`updates`, in the driver's memory). `restore` loads that state and replays those
    updates, which are deterministic given the state: the rebuilt learner holds the weights and optimizer
    state the dead one had after its last complete update, so a retried update is applied once, and no
    step writes the learner's state (the flagship's is ~0.7 GB) but a checkpointed one."""

    def __init__(self, root: Path):
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        self.saved: Optional[int] = None  # the version of the state on disk
        self.updates: list[list[Sample]] = []  # the updates applied since, in order

    @property
    def version(self) -> int:
        """The version the learner holds: the one saved, plus the updates since."""
        assert self.saved is not None, "LearnerStates: nothing committed yet"
        return self.saved + len(self.updates)

    def path(self, version: int) -> Path:
        return self.root / f"state_v{version:06d}.pt"

    def commit(self, learner: LearnerLike, version: int) -> None:
        """Write the learner's state as `version`'s (the start's, a checkpoint's); the older one goes."""
        if self.saved is not None and version != self.version:
            raise RuntimeError(f"LearnerStates: the learner holds v{self.version}, not v{version}")
        learner.save_state(str(self.path(version)))
        for old in self.root.glob("state_v*.pt"):
            if old != self.path(version):
                old.unlink(missing_ok=True)
        self.saved, self.updates = version, []

    def restore(self, learner: LearnerLike) -> None:
        """Bring a rebuilt `learner` to the version the dead one held."""
        assert self.saved is not None
        learner.load_state(str(self.path(self.saved)))
        for i, samples in enumerate(self.updates):
            log.info("learner: replaying the update of v%d (%d of %d since the state of v%d)", self.saved + i + 1,
                     i + 1, len(self.updates), self.saved)
            learner.update(samples)

    def update(self, learner: LearnerLike, samples: list[Sample]) -> dict[str, Any]:
        """One update; recorded once it returned, for `restore` to replay."""
        out = learner.update(samples)
        self.updates.append(samples)
        return out


# what a resumed run may set anew (a key, or a section with all its keys): how long it goes on, how often
# it checkpoints and evaluates, where it writes and logs, how many restarts it allows; every other key is
# the run's own, and a command line that sets one differently is refused
RESUME_MAY_CHANGE = ("resume", "out_dir", "max_steps", "time_budget_s", "time_budget_min_steps", "save_every",
                     "keep_checkpoints", "keep_adapters", "eval_every", "eval_limit", "logging", "max_actor_restarts", "ray",
                     "watchdog", "sync_check_every")
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


def newest_checkpoint(root: Path) -> str:
    """Where a stopped run goes on from: its newest intact checkpoint, or from step 0."""
    ckpt, _ = run_dir.newest_intact(root)
    if ckpt is None:
        return f"no checkpoint in {root} yet: resume=true starts the run again from step 0"
    return f"checkpoint of step {int(ckpt.name.removeprefix('step_'))} in {root}"


def resume(cfg: TrainConfig, point: Optional[ResumePoint], learner: LearnerLike,
           metrics: Path) -> tuple[int, int, Optional[Ahead]]:
    """(step, adapter version, the rollout collected ahead or None) to start from: `point`'s checkpoint
    restored into `learner`, the metrics after it dropped; (0, 0, None) when fresh (or no checkpoint yet)."""
    if point is None or point.checkpoint is None:
        if point is not None:
            truncate(metrics, 0)
            log.info("resume: %s has no checkpoint yet; starting it again from step 0 with its config", point.run_dir)
        return 0, 0, None
    import aac.checkpoint as checkpoint  # torch: not for a run that fails its settings (python -m aac.train)

    state = checkpoint.load(point.checkpoint, learner=learner)
    if state.get("config_hash") != checkpoint.config_hash(cfg):
        log.info("resume: settings changed since the checkpoint (only keys a resume may change: %s)",
                 ", ".join(RESUME_MAY_CHANGE))
    truncate(metrics, state["step"])  # steps after the checkpoint rerun
    log.info("resumed from %s at step %d (adapter v%d)", point.checkpoint, state["step"], state["version"])
    return state["step"], state["version"], state["ahead"]
