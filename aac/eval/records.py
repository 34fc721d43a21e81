"""The run directory: append-only JSONL files keyed by instance uid, so a killed run resumes.

    RUN_DIR/run.json          what was evaluated (model, checkpoint, mode, data, ...)
    RUN_DIR/episodes.jsonl    one line per finished episode
    RUN_DIR/scores.jsonl      one line per scored episode (judge rating, code match)
    RUN_DIR/timing.json       wall seconds of each stage, summed over resumes
    RUN_DIR/report.json|md, score_distribution.png
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from aac.errors import UserError

EPISODES = "episodes.jsonl"
SCORES = "scores.jsonl"
RUN = "run.json"
REPORT_JSON = "report.json"
REPORT_MD = "report.md"
PLOT = "score_distribution.png"
TIMING = "timing.json"


class RunDirError(UserError, ValueError):
    """A run directory that cannot be read or resumed."""

    what = "bad run dir"


def read_jsonl(path: Path, *, repair: bool = False) -> list[dict]:
    """All complete records. A run killed mid-write leaves a partial last line: it is dropped
    (and, with repair, cut from the file so appends start on a fresh line)."""
    if not path.exists():
        return []
    raw = path.read_bytes()
    records, good_end = [], 0
    for line in raw.splitlines(keepends=True):
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            if good_end + len(line) < len(raw):  # not the last line: real corruption, not a kill
                raise RunDirError(f"{path}: unreadable line after record {len(records)}") from None
            break
        good_end += len(line)
    if repair and good_end < len(raw):
        with open(path, "r+b") as f:
            f.truncate(good_end)
    elif repair and raw and not raw.endswith(b"\n"):
        with open(path, "ab") as f:
            f.write(b"\n")
    return records


def append_jsonl(path: Path, records: list[dict]) -> None:
    """Append and flush to disk: whatever was written survives a kill."""
    if not records:
        return
    with open(path, "a", encoding="utf-8") as f:
        for rec in records:
            f.write(json.dumps(rec, ensure_ascii=False) + "\n")
        f.flush()
        os.fsync(f.fileno())


def write_jsonl(path: Path, records: list[dict]) -> None:
    """Replace `path` with `records`, one JSON line each: readers see the old file or the new one, whole."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text("".join(json.dumps(rec, ensure_ascii=False) + "\n" for rec in records), encoding="utf-8")
    tmp.replace(path)


def by_uid(records: list[dict]) -> dict[str, dict]:
    return {r["uid"]: r for r in records}


def _no_nan(obj: object) -> object:
    """NaN (a mean over nothing) becomes null: strict JSON readers reject NaN."""
    if isinstance(obj, float) and obj != obj:
        return None
    if isinstance(obj, dict):
        return {k: _no_nan(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_no_nan(v) for v in obj]
    return obj


def write_json(path: Path, obj: object) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(_no_nan(obj), indent=2, ensure_ascii=False, allow_nan=False) + "\n", encoding="utf-8")
    tmp.replace(path)


def check_same_run(run_dir: Path, identity: dict) -> None:
    """Resuming into a folder that holds a different run would mix two evaluations: refuse."""
    path = run_dir / RUN
    if not path.exists():
        write_json(path, identity)
        return
    old = json.loads(path.read_text(encoding="utf-8"))
    changed = [k for k in identity if k in old and old[k] != identity[k]]
    if changed:
        diff = ", ".join(f"{k}: {old[k]!r} -> {identity[k]!r}" for k in changed)
        raise RunDirError(f"{run_dir} holds a different run ({diff}); pick another out_dir")


def load_run(run_dir: str | Path) -> tuple[dict, list[dict], dict[str, dict]]:
    """(run identity, episodes, scores by uid) of a finished or partial run."""
    run_dir = Path(run_dir)
    if not (run_dir / EPISODES).exists():
        raise RunDirError(f"{run_dir} is not an eval run directory (no {EPISODES})")
    identity = json.loads((run_dir / RUN).read_text(encoding="utf-8")) if (run_dir / RUN).exists() else {}
    return identity, read_jsonl(run_dir / EPISODES), by_uid(read_jsonl(run_dir / SCORES))
