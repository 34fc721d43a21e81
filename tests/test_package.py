"""What ships and what `import aac` costs: the license, the typing marker, and the notebook names loaded lazily."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("torch", "hydra", "omegaconf", "ray", "vllm", "transformers", "deepspeed", "peft", "aac.config")


def _modules_after(code: str) -> list[str]:
    """The heavy modules loaded in a fresh interpreter after running `code`."""
    probe = f"import sys, json\n{code}\nprint(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_import_aac_loads_nothing_heavy():
    assert _modules_after("import aac; assert aac.__version__") == []


def test_notebook_names_are_the_real_objects_loaded_on_first_use():
    import aac
    from aac.assembly import build_run
    from aac.config import TrainConfig, compose
    from aac.eval.harness import evaluate
    from aac.training.trainer import Trainer

    assert (aac.compose, aac.build_run, aac.Trainer, aac.evaluate, aac.TrainConfig) == (
        compose, build_run, Trainer, evaluate, TrainConfig)
    assert set(aac.__all__) <= set(dir(aac))
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        aac.nope  # noqa: B018
    # only the name asked for is loaded: compose does not bring the training stack with it
    assert "torch" not in _modules_after("import aac; aac.compose")


def test_license_and_typing_marker_ship():
    assert (ROOT / "LICENSE").read_text().lstrip().startswith("Apache License\n                           Version 2.0")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert project["project"]["license"] == "Apache-2.0"
    assert (ROOT / "aac" / "py.typed").exists() and "py.typed" in project["tool"]["setuptools"]["package-data"]["aac"]
