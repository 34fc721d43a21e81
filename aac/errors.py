"""Expected errors: a mistake in what the user gave (a setting, a data file, a run dir, a checkpoint),
reported as one line and a non-zero exit; a traceback is kept for bugs.

The line is `aac: <what>: <file>[: row N]: <why, and the fix>` (rows numbered from 0: a jsonl file's row N
is its line N + 1): `what` is the error class's kind (`config error`, `bad data`, `cannot resume`, ...), the
rest is the error's message, which names the file and row where there is one. An error class is expected
by deriving from `UserError` (beside its own base: `class DatasetError(UserError, ValueError)`), so this
module needs to know none of them and imports nothing of aac.

Every entry point's main goes through `entry_point`: as a decorator on an argparse main, and, for a Hydra
app, around its task function (`aac.cli.run_hydra` does that, inside `@hydra.main`, which would print its
own traceback of anything the task raises but lets `SystemExit` through). `AAC_DEBUG=1` shows the full
traceback of everything instead, Hydra's included (`HYDRA_FULL_ERROR`).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


class UserError(Exception):
    """Base of the expected errors; `what` names the kind in the one-line report."""

    what = "error"


def debug() -> bool:
    """`AAC_DEBUG=1` (or any value but 0/empty): tracebacks for every error, expected ones too."""
    return os.environ.get("AAC_DEBUG", "") not in ("", "0")


def one_line(e: BaseException) -> str:
    """`aac: <what>: <message>` on one line (a message of several lines is joined with '; '). An error raised
    inside a Ray actor arrives wrapped, its text the remote traceback: the original (`cause`) is reported."""
    e = getattr(e, "cause", None) or e
    what = getattr(e, "what", None) or type(e).__name__
    text = "; ".join(ln.strip() for ln in str(e).splitlines() if ln.strip()) or type(e).__name__
    return f"aac: {what}: {text}"


def entry_point(main: F) -> F:
    """Wrap an entry point's main (or a Hydra task function): an expected error becomes its one line on
    stderr and exit status 1; anything else propagates (a bug: its traceback). `AAC_DEBUG=1`: everything
    propagates."""

    @functools.wraps(main)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        if debug():
            os.environ["HYDRA_FULL_ERROR"] = "1"  # Hydra re-raises, its traceback untrimmed
            return main(*args, **kwargs)
        try:
            return main(*args, **kwargs)
        except UserError as e:
            raise SystemExit(one_line(e)) from None

    return wrapped  # type: ignore[return-value]
