"""Loading a run's instances from any spec, `builtin:NAME` included (built once by the data builder).

It sits above `aac.env` (the schema and its readers) and `aac.data` (the builder), which know
nothing of each other.

A single .jsonl/.parquet file has no split: reading it as `train` or `test` would hand evaluation the
training functions, so it is refused unless the split is `all` (every row, knowingly); `all` of a
folder, a builtin set or a hub dataset is its train rows, then its test rows."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from aac.env.instance import DatasetError, Instance
from aac.env.instance import load_instances as _load

if TYPE_CHECKING:
    from datasets import Dataset, DatasetDict

ALL = "all"  # the split that reads every row (a file's, or train then test of a set with splits)


def check_split(spec: str | os.PathLike[str] | Dataset | DatasetDict, split: str) -> None:
    """DatasetError (one line, naming the fix) when `spec` is a single file and `split` is not `all`."""
    if isinstance(spec, str | os.PathLike) and Path(spec).expanduser().is_file() and split != ALL:
        raise DatasetError(
            f"{os.fspath(spec)}: one file has no train/test split, so split {split!r} would read every row "
            "(evaluation on the training functions): give a folder with train.jsonl and test.jsonl "
            "(python -m aac.data.build out=DIR), or set the split to all (env.split=all, eval.split=all) "
            "to use every row knowingly")


def load_instances(spec: str | os.PathLike[str] | Dataset | DatasetDict, *, split: str = "train", limit: int | None = None,
                   on_bad_row: str = "warn", domain: str = "pau") -> list[Instance]:
    """`aac.env.instance.load_instances` for instances of `domain` (`env.domain`, checked by the
    domain), with `builtin:NAME` resolved to its built split (built first if missing), and a
    single file refused unless `split` is `all` (see the module doc)."""
    from aac.data.splits import SPLITS
    from aac.env.domains import get_domain

    if not isinstance(spec, str | os.PathLike | dict):  # a datasets.Dataset object: one table, read whole
        split = "train" if split == ALL else split
    elif isinstance(spec, str | os.PathLike) and Path(spec).expanduser().is_file():
        check_split(spec, split)
        split = "train"  # a file is read whole whatever the split
    elif split == ALL:
        rows = [inst for part in SPLITS for inst in load_instances(spec, split=part, limit=limit, on_bad_row=on_bad_row,
                                                                    domain=domain)]
        return rows[:limit]
    if isinstance(spec, str) and spec.startswith("builtin:"):
        from aac.data.builtin import builtin_path

        spec = builtin_path(spec.removeprefix("builtin:"), split)
    d = get_domain(domain)
    return _load(spec, split=split, limit=limit, on_bad_row=on_bad_row, check=d.check_instance, domain=d.name)
