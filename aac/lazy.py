"""A package's public names loaded on first use (PEP 562), so importing one light submodule of it does not
import the heavy ones beside it (`aac.training.state` without the Trainer's torch, transformers and peft)."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def lazy_names(package: str, homes: dict[str, str]) -> Callable[[str], Any]:
    """The package's module `__getattr__`: `homes` maps each name to the module that defines it."""

    def __getattr__(name: str) -> Any:
        if name not in homes:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(homes[name]), name)

    return __getattr__
