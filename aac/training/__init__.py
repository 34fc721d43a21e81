"""The training loop (`Trainer`) and the named pieces it calls; `aac.train` is its Hydra entry."""

from aac.training.data_order import DataOrder, seed_everything
from aac.training.sync import ACTOR, SyncError
from aac.training.trainer import Trainer

__all__ = ["ACTOR", "DataOrder", "SyncError", "Trainer", "seed_everything"]
