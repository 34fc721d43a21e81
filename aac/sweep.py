"""Hydra callback: after a multirun, one table of final metrics per setting.

`python -m aac.train -m +recipe=tiny rewards.lambda_h=1,2,4` writes each run to its own
subdir; this collects their `summary.json` into `sweep_summary.md` and `.csv` in the sweep dir.
"""

from __future__ import annotations

import csv
import json
import logging
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig

log = logging.getLogger("aac.sweep")
COLUMNS = ("steps", "reward/episode_total_mean", "episode/queries_mean", "episode/concluded_pct",
           "update/kl", "update/loss")


def summarize(sweep_dir: Path) -> list[dict[str, Any]]:
    rows = []
    for path in sorted(sweep_dir.glob("*/summary.json")):
        summary = json.loads(path.read_text())
        rows.append({"setting": path.parent.name, **{c: summary.get(c) for c in COLUMNS}})
    return rows


def write_tables(sweep_dir: Path, rows: list[dict[str, Any]]) -> Path:
    header = ["setting", *COLUMNS]
    with open(sweep_dir / "sweep_summary.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=header)
        w.writeheader()
        w.writerows(rows)

    def fmt(v: object) -> str:
        return f"{v:.4g}" if isinstance(v, float) else ("" if v is None else str(v))

    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(fmt(r[h]) for h in header) + " |" for r in rows]
    out = sweep_dir / "sweep_summary.md"
    out.write_text("\n".join(lines) + "\n")
    return out


class SweepSummary(Callback):
    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        sweep_dir = Path(config.hydra.sweep.dir)
        rows = summarize(sweep_dir)
        if rows:
            out = write_tables(sweep_dir, rows)
            log.info("sweep summary (%d runs): %s\n%s", len(rows), out, out.read_text())
