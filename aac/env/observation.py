"""One observed call, as the actor sees it: the input literal, the output's repr, the error text."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Observation:
    input: str
    output_repr: str
    error: str | None = None
