"""A run folder: what `aac.train` (and `aac.sft`, `aac.preflight`) keep in it, which file is the run's config,
and how a path inside it (a checkpoint, its adapter, a synced adapter) finds its run, its adapter and the
newest intact checkpoint. Every command that reads or writes a run asks this module: train and resume
(aac/training/state.py), eval (aac/eval/harness.py, run_protocol.py), describe, export, view and the Hydra
front door (aac/cli.py). Standard library only, so asking costs no torch, Hydra or omegaconf.

    RUN/config.yaml                the run's composed config, resolved (a `${now:}` out_dir stays the run's),
                                   written at every start, a resume's included: what a resume restores and
                                   what an eval of the run's checkpoints plays (`CONFIG`)
    RUN/metrics.jsonl, metrics.png, summary.json
    RUN/episodes/step_N.jsonl.gz   the kept episodes (aac/episode_files.py)
    RUN/adapters/vNNNNNN/          the newest adapter versions handed to the engine (peft folders)
    RUN/learner/state_vNNNNNN.pt   the learner's state of the current and the next version
    RUN/checkpoints/step_NNNNNN/   a checkpoint (aac/checkpoint.py writes it): adapter/ (peft), learner.pt,
                                   trainer.json, rng.pt, manifest.json (every other file's size and sha256,
                                   written last: `damage` checks a checkpoint against it)
    RUN/checkpoints/latest         the newest complete checkpoint's name
    RUN/eval/NAME/                 `aac.eval` runs of its checkpoints (aac.eval.side_by_side: base, tuned)

Hydra writes no copy of the config (conf/config.yaml: `hydra.output_subdir: null`). A run from before
config.yaml was written has only Hydra's, `.hydra/config.yaml` (unresolved): `config_file` reads it for them.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from pathlib import Path
from typing import Optional

from aac.errors import UserError

log = logging.getLogger(__name__)

CONFIG = "config.yaml"
OLD_CONFIG = Path(".hydra") / "config.yaml"  # Hydra's copy: a run from before CONFIG has only this one
METRICS = "metrics.jsonl"
SUMMARY = "summary.json"
ADAPTERS = "adapters"
CHECKPOINTS = "checkpoints"
LATEST = "latest"  # RUN/checkpoints/latest: the newest complete checkpoint's name
ADAPTER = "adapter"  # a checkpoint's peft folder
ADAPTER_CONFIG = "adapter_config.json"  # what makes a folder a peft adapter
DONE = "trainer.json"  # the trainer's state; a complete checkpoint from before manifests has it
MANIFEST = "manifest.json"  # written last: {file: {"bytes": n, "sha256": hex}} of every other file


class CheckpointError(UserError, ValueError):
    """A path that names no checkpoint or adapter (one line)."""

    what = "no checkpoint"


class CheckpointDamaged(CheckpointError):
    """No intact checkpoint where one was named (files truncated, changed or missing); nothing was deleted."""

    what = "damaged checkpoint"


# ---------------------------------------------------------------- the run's config


def config_file(run: Path) -> Optional[Path]:
    """The run's saved config: RUN/config.yaml, else Hydra's copy of a run from before it; None: no run there."""
    for name in (CONFIG, OLD_CONFIG):
        if (Path(run) / name).is_file():
            return Path(run) / name
    return None


def write_config(run: Path, text: str) -> Path:
    """Save `text` (the composed config as YAML, resolved) as the run's config, whole or not at all."""
    run = Path(run)
    run.mkdir(parents=True, exist_ok=True)
    tmp = run / f".{CONFIG}.tmp"
    tmp.write_text(text)
    os.replace(tmp, run / CONFIG)
    return run / CONFIG


# ---------------------------------------------------------------- from a path to its run


def run_of(path: Path | str) -> Path:
    """The run folder `path` names or lies in: RUN, RUN/checkpoints, a checkpoint RUN/checkpoints/step_N or its
    adapter/, RUN/adapters or a synced RUN/adapters/vN. Any other path is its own answer."""
    p = Path(path).expanduser()
    if p.name == ADAPTER and p.parent.name.startswith("step_"):
        p = p.parent
    if (p.parent.name == CHECKPOINTS and p.name.startswith("step_")) or (p.parent.name == ADAPTERS and p.name.startswith("v")):
        return p.parent.parent
    return p.parent if p.name in (CHECKPOINTS, ADAPTERS) else p


def saved_run(path: Path | str) -> Optional[Path]:
    """The run `path` lies in (`run_of`) when it has a saved config; None: a bare adapter folder, or no run."""
    run = run_of(path)
    return run if config_file(run) is not None else None


# ---------------------------------------------------------------- checkpoints: intact or not


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def write_manifest(ckpt: Path) -> None:
    """Record every file of `ckpt` (its size and sha256) in its manifest, the checkpoint's last file."""
    files = sorted(f for f in ckpt.rglob("*") if f.is_file() and f.name != MANIFEST)
    entries = {f.relative_to(ckpt).as_posix(): {"bytes": f.stat().st_size, "sha256": _sha256(f)} for f in files}
    (ckpt / MANIFEST).write_text(json.dumps(entries, indent=1))


def damage(ckpt: Path) -> Optional[str]:
    """What is wrong with checkpoint `ckpt` ("learner.pt: 512 bytes, the manifest says 9133"), or None when
    every file its manifest lists is there with its size and hash. A checkpoint written before manifests
    counts as intact when its trainer.json reads."""
    manifest = ckpt / MANIFEST
    if not manifest.exists():
        if not (ckpt / DONE).exists():
            return f"incomplete (no {MANIFEST})"
        try:
            json.loads((ckpt / DONE).read_text())
            return None
        except (ValueError, OSError) as e:
            return f"{DONE}: unreadable ({type(e).__name__})"
    try:
        entries = json.loads(manifest.read_text())
    except (ValueError, OSError) as e:
        return f"{MANIFEST}: unreadable ({type(e).__name__})"
    for name, want in entries.items():
        f = ckpt / name
        if not f.is_file():
            return f"{name}: missing"
        size = f.stat().st_size
        if size != want["bytes"]:
            return f"{name}: {size} bytes, the manifest says {want['bytes']}"
        if _sha256(f) != want["sha256"]:
            return f"{name}: its sha256 differs from the manifest's"
    return None


def newest_intact(root: Path) -> tuple[Optional[Path], list[str]]:
    """The newest intact checkpoint under `root` (None: none there, or none intact) and what is wrong
    with each newer one ("step_000003: learner.pt: ...")."""
    damaged = []
    for ckpt in sorted(root.glob("step_*"), reverse=True):
        why = damage(ckpt)
        if why is None:
            return ckpt, damaged
        damaged.append(f"{ckpt.name}: {why}")
    return None, damaged


def is_checkpoint(path: Path) -> bool:
    """`path` is one checkpoint's folder, complete or not (a run's `checkpoints/step_N`, or a folder with a
    checkpoint's manifest or trainer state), not a run or a bare adapter folder."""
    return ((path.name.startswith("step_") and path.parent.name == CHECKPOINTS and path.is_dir())
            or (path / MANIFEST).exists() or (path / DONE).exists())


def checkpoint_of(path: Path | str) -> tuple[Optional[Path], list[str]]:
    """The checkpoint `path` names, and what is wrong with each newer damaged one it passed over: a checkpoint
    folder itself (`CheckpointDamaged` when it is damaged), else the newest intact one of the run `path` names
    (`run_of`): None when it has none, `CheckpointDamaged` when it has some and none is intact."""
    p = Path(path).expanduser()
    if is_checkpoint(p):
        why = damage(p)
        if why is not None:
            raise CheckpointDamaged(f"{p}: {why}; name an intact checkpoint, or its run dir for the newest intact one "
                                    "(nothing was deleted)")
        return p, []
    root = run_of(p) / CHECKPOINTS
    ckpt, damaged = newest_intact(root)
    if ckpt is None and damaged:
        raise CheckpointDamaged(f"{root}: no intact checkpoint ({'; '.join(damaged)}); nothing was deleted: start a "
                                "new run (another out_dir), or restore the files")
    return ckpt, damaged


def adapter_of(path: Path | str) -> Path:
    """The peft adapter folder `path` names: the folder itself (a checkpoint's adapter/, a synced adapters/vN, an
    exported adapter), a checkpoint's adapter/ (the checkpoint intact), or that of the newest intact checkpoint of
    a run (newer damaged ones are passed over with a warning). `CheckpointError` when there is none."""
    p = Path(path).expanduser()
    if not is_checkpoint(p):
        for cand in (p, p / ADAPTER):
            if (cand / ADAPTER_CONFIG).is_file():
                return cand
    ckpt, damaged = checkpoint_of(p)
    if ckpt is not None and (ckpt / ADAPTER / ADAPTER_CONFIG).is_file():
        if damaged:
            log.warning("%s: skipped damaged checkpoint(s): %s; using %s", path, "; ".join(damaged), ckpt.name)
        return ckpt / ADAPTER
    raise CheckpointError(f"{path}: no peft adapter ({ADAPTER_CONFIG}) there, in {ADAPTER}/, or in a training "
                          "checkpoint under it")
