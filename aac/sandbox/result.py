"""What a sandbox call gives back: a value, or an error of one line and the kind of failure it was.

The kind is set where the error is made (the worker, the child's supervisor in the parent, the
pool), so no caller reads it back out of the error's text.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any

MAX_ERROR_CHARS = 1000


class CallKind(str, Enum):
    """What became of a call. Its error text (`CallResult.error`) starts as in parentheses."""

    OK = "ok"  # a value (no error)
    RAISED = "raised"  # the function or its source raised ("ValueError: ...", "SyntaxError: ...")
    BAD_INPUT = "bad_input"  # the input is no literal arguments within the limits ("InputParseError: ...")
    BAD_OUTPUT = "bad_output"  # the value could not be shown ("OutputError: ...": a hostile __repr__)
    TIMEOUT = "timeout"  # it ran past its wall time and was killed ("TimeoutError: call exceeded ...")
    CRASHED = "crashed"  # the worker died during it (a signal, os._exit, the CPU or memory limit) or
    # replied nonsense ("SandboxError: ...")
    UNAVAILABLE = "unavailable"  # no worker could be started for it ("SandboxError: could not start ...")

    @property
    def sandbox_failed(self) -> bool:
        """The worker died, replied nonsense or never started: a "SandboxError", worth one more try."""
        return self in (CallKind.CRASHED, CallKind.UNAVAILABLE)

    @property
    def cut_short(self) -> bool:
        """The call did not run to an end of its own (timed out, or the sandbox failed): what it did,
        if anything, is unknown."""
        return self is CallKind.TIMEOUT or self.sandbox_failed


# what a worker may report of a call it ran; the others are the parent's to say
WORKER_KINDS = frozenset({CallKind.RAISED, CallKind.BAD_INPUT, CallKind.BAD_OUTPUT})


@dataclass(frozen=True)
class CallResult:
    """One call's result. `output` is the value when it is small and made of literal types
    (tuples stay tuples), else None; `output_repr` is the bounded text a model sees ("None" on
    an error); `normalized` is `values.normalize(output)` (None on an error; a digest dict for very
    large outputs) and is what comparisons use; `duration_s` is the function's own run time, or
    the wall time until a timed-out or crashed call was stopped; `kind` says what became of the
    call (OK exactly when `error` is None)."""

    output: Any
    error: str | None
    duration_s: float
    output_repr: str
    normalized: Any
    kind: CallKind = CallKind.OK

    def __post_init__(self) -> None:
        if type(self.kind) is not CallKind:  # from its value ("timeout"), as records hold it
            object.__setattr__(self, "kind", CallKind(self.kind))
        if (self.error is None) != (self.kind is CallKind.OK):
            raise ValueError(f"CallResult: kind {self.kind!r} does not fit error {self.error!r}")

    @property
    def ok(self) -> bool:
        return self.error is None


def error_result(kind: CallKind, error: str, duration_s: float) -> CallResult:
    """A call that gave no value: `error` (one line, clipped), nothing to show or compare."""
    return CallResult(output=None, error=error[:MAX_ERROR_CHARS], duration_s=duration_s, output_repr="None",
                      normalized=None, kind=kind)


class SandboxUnavailable(RuntimeError):
    """No worker can be started with the requested isolation on this machine."""
