"""`watchdog.*`: a piece that hangs but stays alive (a stopped process, a wedged engine, a stuck
collective) is found, treated as dead and rebuilt, instead of stalling the run until Ray's keepalive
gives up on it (minutes, then the run ended in a traceback).

Each phase of a step (the rollout, the update, the adapter sync, ...) runs in a thread while the driver
watches the clock. Its limit is `stall_factor` x the slowest run of that phase so far, and at least
`min_stall_s`. Past it the stall is logged: the pieces that do not answer a ping (served by a thread of
their own, so a busy piece answers and a stopped or wedged one does not), each with its process id, and
the calls the phase waits on with their age. At twice the limit those pieces are treated as dead: killed,
so that every call waiting on them fails, and the supervisor rebuilds them, restores their state and
retries the phase as after any death (aac/training/supervisor.py): nothing is lost. When every piece
answers, the pieces holding the phase's calls are the suspects (a call stuck inside a live process).
Only under Ray (`rollout.placement=ray`): in one process there is nothing to rebuild.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from aac.assembly import Run
    from aac.config import WatchdogConfig
    from aac.placement import Placed

log = logging.getLogger("aac.train")
T = TypeVar("T")
PING_S = 5.0  # a piece that does not answer a ping within this (or the phase's limit, if shorter) is stopped or wedged
DEAD_S = 30.0  # a killed piece is recorded dead (Ray's record, what the supervisor reads) within this


class Watchdog:
    """`watchdog(phase, fn)`: `fn()`, its wait bounded as the module docstring says."""

    def __init__(self, run: Run, cfg: WatchdogConfig):
        self.run, self.factor, self.min_s = run, float(cfg.stall_factor), float(cfg.min_stall_s)
        self.slowest: dict[str, float] = {}  # seconds, per phase, of its runs that returned
        self.killed = 0  # pieces treated as dead

    def limit(self, phase: str) -> float:
        return max(self.factor * self.slowest.get(phase, 0.0), self.min_s)

    def __call__(self, phase: str, fn: Callable[[], T]) -> T:
        if not self.run.use_ray:
            return fn()
        out: dict[str, Any] = {}
        done = threading.Event()

        def work() -> None:
            try:
                out["value"] = fn()
            except BaseException as e:  # raised again below, in the caller's thread
                out["error"] = e
            finally:
                done.set()

        started, limit, kill = time.monotonic(), self.limit(phase), False
        threading.Thread(target=work, name=f"aac {phase}", daemon=True).start()
        # one limit on, the stall is logged; another on, its suspects are killed (and so on, should that not end it)
        deadline = started + limit
        while not done.wait(max(deadline - time.monotonic(), 0.0)):
            self._stalled(phase, time.monotonic() - started, limit, kill=kill)
            kill, deadline = not kill, time.monotonic() + limit
        if "error" in out:
            raise out["error"]
        self.slowest[phase] = max(self.slowest.get(phase, 0.0), time.monotonic() - started)
        return out["value"]

    def _stalled(self, phase: str, waited: float, limit: float, *, kill: bool) -> None:
        pieces = self.run.pieces()
        calls = {p: p.in_flight() for p in pieces}
        waits = ", ".join(f"{p.name}.{m} ({age:.0f}s)" for p, c in calls.items() for m, age in c) or "none of its own"
        silent = _silent(pieces, min(PING_S, limit))
        suspects = silent or [p for p, c in calls.items() if c]
        named = ", ".join(f"{p.name} (pid {p.known_pid() or '?'})" for p in suspects) or "no piece"
        why = "does not answer" if silent else "holds a call that has not returned"
        if not kill:
            log.warning("watchdog: the %s has waited %.0fs, past %g x its slowest so far (%.1fs) and min_stall_s "
                        "(%gs): %s %s; calls in flight: %s", phase, waited, self.factor,
                        self.slowest.get(phase, 0.0), self.min_s, named, why, waits)
            return
        if not suspects:
            log.warning("watchdog: the %s has waited %.0fs; every piece answers and none holds a call: waiting on",
                        phase, waited)
            return
        log.warning("watchdog: the %s has waited %.0fs, twice its limit (%.0fs): treating %s as dead (%s); "
                    "it is rebuilt and the %s retried", phase, waited, limit, named, why, phase)
        for piece in suspects:
            piece.kill()  # its calls, and the calls waiting on them, fail
        self.killed += len(suspects)
        deadline = time.monotonic() + DEAD_S
        while any(p.alive() for p in suspects) and time.monotonic() < deadline:
            time.sleep(0.1)


def _silent(pieces: list[Placed[Any]], timeout_s: float) -> list[Placed[Any]]:
    """The live pieces that do not answer a ping within `timeout_s`."""
    import ray

    pings = {p: p.ping() for p in pieces if p.alive()}
    answered = set(ray.wait(list(pings.values()), num_returns=len(pings), timeout=timeout_s)[0]) if pings else set()
    return [p for p, f in pings.items() if f not in answered]
