"""The protocol's turn kinds (docs/method.md §4): the one phase type of the protocol, rewards, metrics
and config. A `str` enum, so a phase read back from JSON or a config key compares equal to its member."""

from __future__ import annotations

from enum import Enum


class Phase(str, Enum):
    REASONING = "reasoning"
    INPUT = "input"
    REFLECT = "reflect"

    @classmethod
    def _missing_(cls, value: object) -> Phase:
        raise ValueError(f"unknown phase {value!r}: expected {', '.join(p.value for p in cls)}")


PHASE_NAMES = tuple(p.value for p in Phase)  # config keys and metric names spell phases so
