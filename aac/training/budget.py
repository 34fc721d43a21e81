"""`time_budget_s`: a wall-clock budget for training (make demo's length follows the machine).

The budget counts from the Trainer's start (its pieces' start-up included) and is read between steps: once
`time_budget_min_steps` steps of this process ran, training ends before a step that the slowest step so far says
would end past it. Steps of one run vary (episodes end sooner or later), so the slowest is the estimate: a run
then ends inside its budget unless its minimum steps alone overrun it."""

from __future__ import annotations

import logging
import time
from typing import Optional

log = logging.getLogger("aac.train")


class TimeBudget:
    def __init__(self, seconds: Optional[float], min_steps: int):
        self.seconds, self.min_steps = seconds, min_steps
        self.started = self.step_started = time.perf_counter()
        self.steps, self.slowest = 0, 0.0

    def steps_start(self) -> None:
        """The first step starts now (its time excludes the pieces' start-up)."""
        self.step_started = time.perf_counter()

    def step_done(self) -> bool:
        """Count a finished step; whether the budget is spent (the run then ends after this step): the next step,
        as slow as the slowest so far, would end past it."""
        now = time.perf_counter()
        self.steps += 1
        self.slowest, self.step_started = max(self.slowest, now - self.step_started), now
        return (self.seconds is not None and self.steps >= self.min_steps
                and now - self.started + self.slowest > self.seconds)

    def log_end(self, step: int, total: int) -> None:
        log.info("time budget %gs: after step %d of %d (%.0fs since start), another step of up to %.0fs would end "
                 "past it: training ends here", self.seconds, step, total, time.perf_counter() - self.started,
                 self.slowest)
