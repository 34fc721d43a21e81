"""Supervision of a run's pieces: when one dies, rebuild it, restore its state and retry the phase.

The driver owns every actor handle (`aac.assembly.Run`). A phase of a step (the rollout, the update,
the adapter sync, a held-out evaluation) is retried when it failed because a piece died: every dead
piece is rebuilt from its arguments, then the trainer restores what it held (an engine reloads the
current adapter version; a learner loads the state committed after the last update, so no update is
lost or applied twice; rollout workers hold no state across steps, and replay the step's episodes
with the step's seeds). Each phase is a function of state the driver holds, so a retry computes what
the first try would have. After `max_actor_restarts` rebuilds the run stops (`RestartLimit`), its
pieces restored where that still works (`RestartLimit.held`), so that it checkpoints its last step.
A piece that hangs alive is made dead by the watchdog (aac/training/watchdog.py), then handled alike.

What is not retried: a failure no dead piece explains (it is raised as it is), a run in one process
(`rollout.placement=local`), the driver's own death (resume from the last checkpoint), and a node lost
with its disk (the adapters and learner states of the run dir must be readable where pieces restart).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Optional, TypeVar

from aac.training.watchdog import Watchdog

if TYPE_CHECKING:
    from aac.assembly import Run
    from aac.config import WatchdogConfig

log = logging.getLogger("aac.train")
T = TypeVar("T")


class RestartLimit(RuntimeError):
    """More pieces died than `max_actor_restarts` allows; `held`: every rebuilt piece was restored (a learner
    holds the state of the last complete update)."""

    def __init__(self, message: str, held: bool):
        super().__init__(message)
        self.held = held


class Supervisor:
    """`supervisor(phase, fn)`: run `fn` (under the watchdog when `watchdog` is given); on a death, rebuild,
    `restore(rebuilt names)`, retry."""

    def __init__(self, run: Run, max_restarts: int, restore: Callable[[list[str]], None],
                 watchdog: Optional[WatchdogConfig] = None):
        self.run, self.max_restarts, self.restore = run, max_restarts, restore
        self.watch = Watchdog(run, watchdog) if watchdog is not None else lambda phase, fn: fn()
        self.restarts = 0  # pieces rebuilt in this process's run
        self.retries = 0  # phases retried

    def __call__(self, phase: str, fn: Callable[[], T]) -> T:
        while True:
            try:
                return self.watch(phase, fn)
            except Exception as e:
                if not self.run.use_ray:
                    raise
                self._recover(phase, e)

    def _recover(self, phase: str, error: Exception) -> None:
        """Rebuild and restore what died (again, if a piece dies while being restored); re-raise
        `error` when nothing did. Dead is Ray's record (`Placed.alive`): pieces inside long calls (the
        workers playing the rollout sent ahead while the learner died mid-update) are left to finish."""
        rebuilt: list[str] = []
        while True:
            dead = self.run.rebuild_dead()
            if not dead:
                break
            rebuilt += dead
            self.restarts += len(dead)
            log.warning("the %s failed (%s): rebuilt %s (%d of max_actor_restarts=%d pieces)", phase,
                        type(error).__name__, ", ".join(dead), self.restarts, self.max_restarts)
            held = True
            try:
                self.restore(dead)
            except Exception as again:  # a piece died while being restored: look again
                error, held = again, False
            if self.restarts > self.max_restarts:
                raise RestartLimit(f"{self.restarts} pieces died (max_actor_restarts={self.max_restarts}), the "
                                   f"last ({', '.join(dead)}) during the {phase}", held) from None
        if not rebuilt:
            raise error
        self.retries += 1
        log.warning("retrying the %s", phase)
