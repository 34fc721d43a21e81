"""Training checkpoints, written atomically: a killed run never leaves a half checkpoint.

Layout of `OUT/checkpoints/step_000010/`:
  adapter/       the LoRA in peft format (PeftModel.from_pretrained / vLLM LoRA can read it)
  learner.pt     optimizer and scheduler state (and the adapter weights, for exact resume)
  trainer.json   step, adapter version, data-order position, config hash
  rng.pt         python / numpy / torch RNG states
  manifest.json  every other file's size and sha256, written last
`OUT/checkpoints/latest` names the newest complete one.

A resume verifies a checkpoint against its manifest and falls back from a damaged newest one to the newest
intact one (`aac.run_dir.checkpoint_of`, with the layout of a run folder); the one before the newest is always
kept, so there is one.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

import numpy as np
import torch

from aac.run_dir import ADAPTER, DONE, LATEST, write_manifest

if TYPE_CHECKING:
    from aac.config import TrainConfig
    from aac.learner import LearnerLike

AHEAD = "rollout_ahead.pt"


def config_hash(cfg: TrainConfig) -> str:
    """What a resumed run compares with its checkpoint's (a differing config is warned about)."""
    from omegaconf import OmegaConf

    blob = json.dumps(OmegaConf.to_container(cfg, resolve=True), sort_keys=True, default=str)
    return hashlib.sha1(blob.encode()).hexdigest()[:12]


def rng_state() -> dict[str, Any]:
    return {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}


def set_rng_state(state: dict[str, Any]) -> None:
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def save(root: Path, step: int, *, trainer_state: dict[str, Any], keep: int = 3, learner: Optional[LearnerLike] = None,
         adapter: Optional[Path] = None, learner_state: Optional[Path] = None, ahead: object = None) -> Path:
    """Write checkpoint `step` under `root` (temp dir, then rename), then point `latest` at it. The
    adapter and the learner's state come from `learner`, or as files already written (`adapter`, a peft
    folder, and `learner_state`, `Learner.save_state`'s file): a run whose learner died still checkpoints.
    `ahead`: a rollout already collected for the next step (off-policy runs), which a resume trains on.
    `keep`: the newest checkpoints kept, at least 2 (a damaged newest one falls back to the one before)."""
    if (learner is None) == (adapter is None or learner_state is None):
        raise ValueError("checkpoint.save: give a learner, or an adapter folder and a learner-state file")
    root.mkdir(parents=True, exist_ok=True)
    final = root / f"step_{step:06d}"
    tmp = root / f".tmp-step_{step:06d}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    if learner is not None:
        learner.save_adapter(str(tmp / ADAPTER))
        learner.save_state(str(tmp / "learner.pt"))
    else:
        shutil.copytree(adapter, tmp / ADAPTER)
        shutil.copyfile(learner_state, tmp / "learner.pt")
    torch.save(rng_state(), tmp / "rng.pt")
    if ahead is not None:
        torch.save(ahead, tmp / AHEAD)
    (tmp / DONE).write_text(json.dumps(trainer_state, indent=1))
    write_manifest(tmp)
    for f in tmp.rglob("*"):
        if f.is_file():
            with open(f, "rb") as fh:
                os.fsync(fh.fileno())
    if final.exists():  # a checkpoint of the same step from an earlier, killed attempt
        shutil.rmtree(final)
    tmp.rename(final)
    _fsync_dir(root)
    pointer = root / ".latest.tmp"
    pointer.write_text(final.name)
    os.replace(pointer, root / LATEST)
    for old in sorted(root.glob("step_*"))[:-max(keep, 2)]:
        shutil.rmtree(old, ignore_errors=True)
    return final


def load(path: Path, *, learner: LearnerLike) -> dict[str, Any]:
    """Restore learner and RNG state from `path`, a checkpoint its caller found intact (`aac.run_dir.checkpoint_of`:
    a resume checks before any piece starts, so the files are hashed once); returns the
    trainer state (with `ahead`: the rollout collected for the next step, or None)."""
    learner.load_state(str(path / "learner.pt"))
    set_rng_state(torch.load(path / "rng.pt", weights_only=False))
    ahead = torch.load(path / AHEAD, weights_only=False) if (path / AHEAD).exists() else None
    return {**json.loads((path / DONE).read_text()), "ahead": ahead}
