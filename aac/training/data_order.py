"""The instances a run trains on, which of them each step takes, and the run's seeding."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import torch

if TYPE_CHECKING:
    from aac.config import TrainConfig
    from aac.env.instance import Instance


@dataclass
class DataOrder:
    """Which instances each step trains on: a seeded permutation per epoch, no replacement.

    A pure function of (seed, step), so a resumed (or retried) step sees exactly the same instances."""

    n: int
    per_step: int
    seed: int

    @property
    def steps_per_epoch(self) -> int:
        return max(1, self.n // self.per_step)

    def indices(self, step: int) -> list[int]:
        epoch, k = divmod(step, self.steps_per_epoch)
        perm = np.random.default_rng([self.seed, epoch]).permutation(self.n)
        if self.n < self.per_step:  # fewer instances than a step needs: cycle through them
            return [int(perm[i % self.n]) for i in range(self.per_step)]
        return [int(i) for i in perm[k * self.per_step : (k + 1) * self.per_step]]


def training_instances(cfg: TrainConfig) -> list[Instance]:
    """`env.data`'s instances (`env.split`, `env.limit`); one line, before any engine starts, when none is usable
    (a `DatasetError`) or the critic needs what they lack (critic.kind=mutants: the mutants column)."""
    from aac.critic.mutants import require_mutants
    from aac.datasets import load_instances
    from aac.env.instance import DatasetError

    e = cfg.env
    instances = load_instances(e.data, split=e.split, limit=e.limit, on_bad_row=e.on_bad_row, domain=e.domain)
    if not instances:
        raise DatasetError(f"{e.data}: no usable instances (split {e.split})")
    if cfg.critic.kind == "mutants":
        require_mutants(instances, e.data)
    return instances


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
