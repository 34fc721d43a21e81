"""The one progress bar of every command (rich): `with bar(total, "what") as advance: advance(n)`."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager


@contextmanager
def bar(total: int, what: str, *, enabled: bool = True, completed: int = 0) -> Iterator[Callable[[int], None]]:
    """A bar of `total` units titled `what`, starting at `completed`; yields `advance(n)`."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn(f"[bold]{what}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  disable=not enabled) as progress:
        task = progress.add_task(what, total=total, completed=completed)
        yield lambda n=1: progress.advance(task, n)
