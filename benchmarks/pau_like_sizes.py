"""Sizes of `builtin:pau_like` assembled from per-source builds (the same rule as `build_split`).

    python benchmarks/pau_like_sizes.py DIR   # DIR holds <source>.jsonl from `python -m aac.data.build`

Rows are a function of (seed, task id), so per-source builds plus the split's fingerprint rule give
the rows `python -m aac.prepare datasets=pau_like` writes (up to functions whose calls run near the time
limits). Prints the split sizes, the duplicates dropped, and checks that no train function's
fingerprint is a test function's.
"""

from __future__ import annotations

import sys
from pathlib import Path

from aac.data.anonymize import fingerprint
from aac.data.builtin import BUILTINS
from aac.data.sources import RawTask, read_tasks, shared_sources
from aac.env.instance import load_instances


def main() -> None:
    folder = Path(sys.argv[1])
    recipe = BUILTINS["pau_like"]
    seen: set[str] = set()
    test_keys: set[str] = set()
    sizes = {}
    for split, specs in (("test", recipe.test), ("train", recipe.train)):
        kept = dropped = 0
        for spec in specs:
            spec = spec.format(sources=shared_sources())
            keys = {t.task_id: fingerprint(t.code, t.entry_point) for t in read_tasks(spec) if isinstance(t, RawTask)}
            rows = load_instances(folder / f"{spec.split(':')[0]}.jsonl")
            mine = [r for r in rows if keys.get(r.uid) not in seen or keys.get(r.uid) is None]
            dropped += len(rows) - len(mine)
            kept += len(mine)
            if split == "train":
                assert not {keys[r.uid] for r in mine} & test_keys
            seen |= set(keys.values())
        if split == "test":
            test_keys = set(seen)
        sizes[split] = (kept, dropped)
    for split, (kept, dropped) in sizes.items():
        print(f"{split}: {kept} rows ({dropped} built rows dropped as functions of an earlier source)")
    print("train and test fingerprints disjoint: yes")


if __name__ == "__main__":
    main()
