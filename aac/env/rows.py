"""Writing instances as PAU rows (jsonl or parquet), with our own prompts filling empty prompt columns."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path

from aac.env.instance import (
    EXTRA_COLUMNS,
    OPTIONAL_COLUMNS,
    PAU_COLUMNS,
    DatasetError,
    Instance,
    mutants_json,
)
from aac.env.prompts import in_context_prompt
from aac.env.protocol import Episode


def to_row(instance: Instance) -> dict[str, str]:
    """The PAU row (JSON-encoded list columns) plus task_id, source and domain, and the mutants where the
    instance has them (privileged: read by the critic and the eval's scorers, never by a prompt).

    Empty prompt columns are filled with our own prompts, so a written set is complete.
    Values JSON cannot hold are written as their repr (as the published rows did).
    """
    def dump(rows: list) -> str:
        return json.dumps([list(r) for r in rows], default=repr, ensure_ascii=False)

    direct = instance.direct_prompt or in_context_prompt(instance)[-1]["content"]
    starting = instance.interactive_starting_prompt or _starting_prompt(instance)
    row = {
        "test_func_validated": instance.code,
        "description": instance.description,
        "train_examples": dump(instance.train_examples),
        "test_examples": dump(instance.test_examples),
        "all_examples": dump([(i, o, "None" if e is None else e) for i, o, e in instance.all_examples]),
        "direct_prompt": direct,
        "interactive_starting_prompt": starting,
        "header": instance.header,
        "task_id": instance.uid,
        "source": instance.source,
        "domain": instance.domain,
    }
    if instance.mutants is not None:
        row["mutants"] = mutants_json(instance.mutants)
    return row


def _starting_prompt(instance: Instance) -> str:
    return Episode(instance, caller=_no_call).prompt()[-1]["content"]


def _no_call(source: str, input_str: str, timeout_s: float):
    raise RuntimeError("rendering a prompt makes no call")


def write_instances(path: str | os.PathLike, instances: Iterable[Instance]) -> Path:
    """Write instances in the PAU schema (+ task_id, source) as .jsonl or .parquet; returns the path."""
    path = Path(path)
    rows = [to_row(inst) for inst in instances]
    suffix = path.suffix.lower()
    if suffix not in (".jsonl", ".parquet"):
        raise DatasetError(f"{path}: unsupported file type {suffix!r} (use .jsonl or .parquet)")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    if suffix == ".jsonl":
        with tmp.open("w", encoding="utf-8") as f:
            for row in rows:
                f.write(json.dumps(row, ensure_ascii=False) + "\n")
    else:
        import pyarrow as pa
        import pyarrow.parquet as pq

        names = [*PAU_COLUMNS, *EXTRA_COLUMNS, *(c for c in OPTIONAL_COLUMNS if any(c in r for r in rows))]
        table = pa.table({c: pa.array([r.get(c) for r in rows], type=pa.string()) for c in names})
        pq.write_table(table, tmp)
    tmp.replace(path)  # readers never see a half-written file
    return path
