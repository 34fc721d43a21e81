"""The training loop (`Trainer`) and the named pieces it calls; `aac.train` is its Hydra entry. Its names load on
first use (aac/lazy.py): a bad override of `python -m aac.train` is answered before torch and peft load."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aac.lazy import lazy_names

if TYPE_CHECKING:
    from aac.training.data_order import DataOrder, seed_everything
    from aac.training.sync import ACTOR, SyncError
    from aac.training.trainer import Trainer

__all__ = ["ACTOR", "DataOrder", "SyncError", "Trainer", "seed_everything"]
__getattr__ = lazy_names(__name__, {"ACTOR": "aac.training.sync", "SyncError": "aac.training.sync",
                                    "Trainer": "aac.training.trainer", "DataOrder": "aac.training.data_order",
                                    "seed_everything": "aac.training.data_order"})
