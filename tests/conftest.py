"""Shared fixtures. Embedded models come from $AAC_HOME (built by `make prepare`)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED_SOURCES = ROOT.parent / "shared" / "data" / "sources"

os.environ.setdefault("WANDB_MODE", "disabled")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


@pytest.fixture(scope="session")
def tiny_model_path() -> str:
    from aac.models import resolve_model

    return resolve_model("tiny_qwen3")


@pytest.fixture(scope="session")
def smollm2_path() -> str:
    from aac.models import resolve_model

    return resolve_model("smollm2_135m")


@pytest.fixture(scope="session")
def run_module():
    """Run `python -m module args` in a subprocess; returns the CompletedProcess (text)."""
    import subprocess

    def run(module: str, *args: str, cwd: Path = ROOT, timeout: float = 300, env=None):
        return subprocess.run([sys.executable, "-m", module, *args], cwd=cwd, capture_output=True,
                              text=True, timeout=timeout, env=env)

    return run
