"""The one progress bar of every command (rich): `with bar(total, "what") as advance: advance(n)`.

The bar shows on a terminal only. With `log=`, the same progress also goes to that logger as lines
that read in a log file or a pipe: units done of the total, any counts passed to `advance`
(turns, calls, tokens: summed; tokens also as a rate), the elapsed time and an ETA, at most every
`every_s` seconds and once at the end.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Optional

LINE_EVERY_S = 10.0


def _duration(seconds: float) -> str:
    m, s = divmod(int(round(seconds)), 60)
    return f"{m}m{s:02d}s" if m else f"{s}s"


class ProgressLines:
    """Counts and the line that reports them (see the module docstring)."""

    def __init__(self, total: int, what: str, unit: str, completed: int = 0, every_s: float = LINE_EVERY_S,
                 clock: Callable[[], float] = time.perf_counter):
        self.total, self.what, self.unit, self.every_s, self.clock = total, what, unit, every_s, clock
        self.done, self.start_done = completed, completed
        self.counts: dict[str, int] = {}
        self.started = self.last_line = clock()

    def add(self, n: int = 0, **counts: int) -> Optional[str]:
        """Add `n` units done and the counts; the line to log now, or None (too soon since the last)."""
        self.done += n
        for k, v in counts.items():
            self.counts[k] = self.counts.get(k, 0) + v
        now = self.clock()
        if now - self.last_line < self.every_s and self.done < self.total:
            return None
        self.last_line = now
        return self.line(now)

    def line(self, now: float) -> str:
        elapsed = now - self.started
        parts = [f"{self.what}: {self.done}/{self.total} {self.unit}"]
        parts += [f"{v} {k}" for k, v in self.counts.items()]
        if "tokens" in self.counts:
            parts.append(f"{self.counts['tokens'] / max(elapsed, 1e-9):.1f} tok/s")
        fresh = self.done - self.start_done
        eta = "done" if self.done >= self.total else (
            f"ETA {_duration(elapsed / fresh * (self.total - self.done))}" if fresh else "ETA ?")
        return ", ".join(parts) + f" ({_duration(elapsed)} elapsed, {eta})"


@contextmanager
def bar(total: int, what: str, *, enabled: bool = True, completed: int = 0, log: Optional[logging.Logger] = None,
        unit: str = "done", every_s: float = LINE_EVERY_S) -> Iterator[Callable[..., None]]:
    """A bar of `total` units titled `what`, starting at `completed`; yields `advance(n=1, **counts)`.
    `enabled`: the bar; `log`: the progress lines, in `unit`s (see the module docstring)."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    lines = ProgressLines(total, what, unit, completed, every_s) if log is not None else None
    # off a terminal a bar only prints its last state into the output: the lines say it better
    with Progress(TextColumn(f"[bold]{what}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  disable=not enabled or not Console().is_terminal) as progress:
        task = progress.add_task(what, total=total, completed=completed)

        def advance(n: int = 1, **counts: int) -> None:
            progress.advance(task, n)
            text = lines.add(n, **counts) if lines is not None else None
            if text is not None:
                log.info(text)

        yield advance
