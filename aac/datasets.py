"""Loading a run's instances from any spec, `builtin:NAME` included (built once by the data builder).

It sits above `aac.env` (the schema and its readers) and `aac.data` (the builder), which know
nothing of each other."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from aac.env.instance import Instance
from aac.env.instance import load_instances as _load

if TYPE_CHECKING:
    from datasets import Dataset, DatasetDict


def load_instances(spec: str | os.PathLike[str] | Dataset | DatasetDict, *, split: str = "train", limit: int | None = None,
                   on_bad_row: str = "warn", domain: str = "pau") -> list[Instance]:
    """`aac.env.instance.load_instances` for instances of `domain` (`env.domain`, checked by the
    domain), with `builtin:NAME` resolved to its built split (built first if missing)."""
    from aac.env.domains import get_domain

    if isinstance(spec, str) and spec.startswith("builtin:"):
        from aac.data.builtin import builtin_path

        spec = builtin_path(spec.removeprefix("builtin:"), split)
    d = get_domain(domain)
    return _load(spec, split=split, limit=limit, on_bad_row=on_bad_row, check=d.check_instance, domain=d.name)
