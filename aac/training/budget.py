"""`time_budget_s`: a wall-clock budget for training (make demo's length follows the machine).

The budget counts from the Trainer's start (its pieces' start-up included) and is read between steps: the
step that ends past it is the last, once `time_budget_min_steps` steps of this process ran."""

from __future__ import annotations

import logging
import time
from typing import Optional

log = logging.getLogger("aac.train")


class TimeBudget:
    def __init__(self, seconds: Optional[float], min_steps: int):
        self.seconds, self.min_steps = seconds, min_steps
        self.started, self.steps = time.perf_counter(), 0

    def step_done(self) -> bool:
        """Count a finished step; whether the budget is spent (the run then ends after this step)."""
        self.steps += 1
        return (self.seconds is not None and self.steps >= self.min_steps
                and time.perf_counter() - self.started >= self.seconds)

    def log_end(self, step: int, total: int) -> None:
        log.info("time budget %gs spent at step %d of %d (%.0fs since start): training ends here",
                 self.seconds, step, total, time.perf_counter() - self.started)
