"""The files a training run keeps its episodes in, read and written here (aac/training/episode_log.py
writes them, aac/view draws them), and an episode as plain text (wandb tables, report.md samples).

    OUT/episodes/step_NNNNNN.jsonl.gz   one JSON line per kept episode of step N (1-based, as metrics.jsonl)

A step's file is written whole, then renamed into place, so a kill leaves no partial file. The
schema is in docs/viewer.md.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

DIR = "episodes"
SCHEMA = 1  # bumped when a field changes meaning


def step_path(root: Path, step: int) -> Path:
    return root / f"step_{step:06d}.jsonl.gz"


def step_of(path: Path) -> int:
    return int(path.name.split(".")[0].removeprefix("step_"))


def write_step(root: Path, step: int, records: list[dict]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    path = step_path(root, step)
    tmp = path.with_suffix(".tmp")
    with gzip.open(tmp, "wt", encoding="utf-8") as f:
        f.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    tmp.replace(path)
    return path


def drop_after(root: Path, step: int) -> None:
    """Remove the files of steps after `step` (a resumed run plays them again)."""
    for path in root.glob("step_*.jsonl.gz"):
        if step_of(path) > step:
            path.unlink()


def read_steps(root: Path) -> list[dict]:
    """Every kept episode under `root` (OUT/episodes), in step order."""
    out = []
    for path in sorted(root.glob("step_*.jsonl.gz"), key=step_of):
        with gzip.open(path, "rt", encoding="utf-8") as f:
            out += [json.loads(line) for line in f if line.strip()]
    return out


def transcript(record: dict, width: int = 0) -> str:
    """An episode's turns as plain text: phase, reply, the call's result; a kept training episode's
    turns also their critic score, reward and advantage. `width` > 0 cuts each text to that many
    characters."""
    def cut(text: str) -> str:
        text = text.strip()
        return text if not width or len(text) <= width else text[:width] + "…"

    lines = []
    for n, t in enumerate(record["steps" if "steps" in record else "turns"]):
        head = f"[{t.get('index', n)}] {t['phase']}{'' if t.get('parse_ok', True) else ' (format error)'}"
        if "reward" in t:
            score, adv = t.get("score"), t.get("advantage")
            head += (f" | score {'-' if score is None else f'{score:.2f}'} | reward {t['reward']:+.2f}"
                     f" | advantage {'-' if adv is None else f'{adv:+.2f}'}")
        lines.append(head)
        reply = cut((t.get("prefill") or "") + (t.get("response") or "")) or "(empty reply)"
        lines.append("    " + reply.replace("\n", "\n    "))
        call = t.get("call")
        if call:
            lines.append(f"    -> {cut(call['error'] if call.get('error') else str(call.get('output_repr')))}")
    return "\n".join(lines)
