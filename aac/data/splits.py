"""The train/test split of a built set: seeded by row id, so it does not depend on build order."""

from __future__ import annotations

import math
import random

SPLITS = ("train", "test")
TEST_FRACTION = 0.2


def split_instances(instances: list, seed: int = 0, test_fraction: float = TEST_FRACTION) -> dict[str, list]:
    """A seeded split by task id (independent of build order)."""
    ids = sorted(inst.uid for inst in instances)
    random.Random(f"split:{seed}").shuffle(ids)
    test_ids = set(ids[: math.ceil(test_fraction * len(ids))])
    return {"train": [i for i in instances if i.uid not in test_ids],
            "test": [i for i in instances if i.uid in test_ids]}
