"""A run folder's one owner (aac/run_dir.py): from any path inside a run to the run, its one config, a
checkpoint's adapter and the newest intact checkpoint, and every command asking it. Real tiny runs of these
paths are in test_resume (resume, damaged checkpoints), test_byo (describe, export) and test_view."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from aac import run_dir
from aac.run_dir import (
    CheckpointDamaged,
    CheckpointError,
    adapter_of,
    checkpoint_of,
    config_file,
    run_of,
    saved_run,
    write_config,
    write_manifest,
)

PKG = Path(__file__).resolve().parents[1] / "aac"


def _checkpoint(run: Path, step: int) -> Path:
    ckpt = run / "checkpoints" / f"step_{step:06d}"
    (ckpt / "adapter").mkdir(parents=True)
    (ckpt / "adapter" / "adapter_config.json").write_text(json.dumps({"r": 8}))
    (ckpt / "adapter" / "adapter_model.safetensors").write_bytes(bytes(range(200)))
    (ckpt / "trainer.json").write_text(json.dumps({"step": step}))
    write_manifest(ckpt)
    return ckpt


@pytest.fixture
def run(tmp_path) -> Path:
    run = tmp_path / "run"
    write_config(run, "seed: 0\n")
    for step in (1, 2, 3):
        _checkpoint(run, step)
    (run / "adapters" / "v000003").mkdir(parents=True)
    (run / "adapters" / "v000003" / "adapter_config.json").write_text("{}")
    return run


def test_every_path_inside_a_run_finds_the_run(run, tmp_path):
    ckpt = run / "checkpoints" / "step_000002"
    for inside in (run, run / "checkpoints", ckpt, ckpt / "adapter", run / "adapters", run / "adapters" / "v000003"):
        assert run_of(inside) == run and saved_run(inside) == run, inside
    assert run_of(tmp_path / "elsewhere") == tmp_path / "elsewhere"
    assert saved_run(tmp_path / "bare" / "adapter") is None  # an adapter folder outside any run
    assert run_of("~/runs/x/checkpoints/step_000001") == Path.home() / "runs" / "x"


def test_the_one_config_and_an_older_runs_hydra_copy(run, tmp_path):
    assert config_file(run) == run / "config.yaml" and (run / "config.yaml").read_text() == "seed: 0\n"
    assert not list(run.glob(".*.tmp"))  # written whole, then renamed
    old = tmp_path / "old"
    (old / ".hydra").mkdir(parents=True)
    (old / ".hydra" / "config.yaml").write_text("seed: 1\n")
    assert config_file(old) == old / ".hydra" / "config.yaml" and saved_run(old / "checkpoints") == old
    write_config(old, "seed: 2\n")  # once the run saves its own, that is the one read
    assert config_file(old) == old / "config.yaml"
    assert config_file(tmp_path / "nothing") is None


def test_newest_intact_checkpoint_and_its_adapter(run, caplog):
    newest = run / "checkpoints" / "step_000003"
    assert checkpoint_of(run) == (newest, []) == checkpoint_of(run / "checkpoints")
    assert adapter_of(run) == newest / "adapter" == adapter_of(newest) == adapter_of(newest / "adapter")
    assert adapter_of(run / "adapters" / "v000003") == run / "adapters" / "v000003"  # a synced adapter: as it is
    weights = newest / "adapter" / "adapter_model.safetensors"
    weights.write_bytes(weights.read_bytes()[:50])
    why = "step_000003: adapter/adapter_model.safetensors: 50 bytes, the manifest says 200"
    assert checkpoint_of(run) == (run / "checkpoints" / "step_000002", [why])
    with caplog.at_level("WARNING", logger="aac.run_dir"):
        assert adapter_of(str(run)) == run / "checkpoints" / "step_000002" / "adapter"
    assert [r.getMessage() for r in caplog.records] == [f"{run}: skipped damaged checkpoint(s): {why}; using step_000002"]
    with pytest.raises(CheckpointDamaged, match=r"step_000003: adapter/adapter_model.safetensors: 50 bytes.*nothing"):
        adapter_of(newest)  # named outright: that one or an error, never another
    for step in (1, 2):
        (run / "checkpoints" / f"step_{step:06d}" / "trainer.json").write_text("{")
    with pytest.raises(CheckpointDamaged, match="no intact checkpoint .*step_000003.*step_000002.*step_000001"):
        checkpoint_of(run)


def test_no_checkpoint_there(tmp_path):
    assert checkpoint_of(tmp_path) == (None, [])  # a run killed before its first checkpoint
    with pytest.raises(CheckpointError, match="no peft adapter"):
        adapter_of(tmp_path)
    incomplete = tmp_path / "checkpoints" / "step_000001"
    incomplete.mkdir(parents=True)
    with pytest.raises(CheckpointDamaged, match=r"incomplete \(no manifest.json\)"):
        checkpoint_of(incomplete)
    handmade = tmp_path / "kept" / "step_000004"  # a folder holding an adapter, no run's checkpoint: the adapter
    (handmade / "adapter").mkdir(parents=True)
    (handmade / "adapter" / "adapter_config.json").write_text("{}")
    assert adapter_of(handmade) == handmade / "adapter"


def _names_used(path: Path) -> set[str]:
    """The names of aac.run_dir a module uses (`from aac.run_dir import X`, `run_dir.X`)."""
    tree = ast.parse(path.read_text())
    used = {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module == "aac.run_dir" for a in n.names}
    used |= {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)
             and isinstance(n.value, ast.Name) and n.value.id == "run_dir" and hasattr(run_dir, n.attr)}
    return used


def test_every_command_resolves_runs_through_it():
    """Train and resume, eval (its checkpoint and the run whose protocol it plays), describe (through the eval
    harness), export, view and the Hydra front door each ask aac.run_dir, and nothing else knows the layout."""
    asks = {"training/state.py": {"checkpoint_of", "config_file", "run_of", "write_config"},
            "eval/harness.py": {"adapter_of"}, "eval/run_protocol.py": {"saved_run", "config_file"},
            "export.py": {"adapter_of", "saved_run", "config_file"}, "view/load.py": {"run_of"},
            "cli.py": {"run_of"}, "sft.py": {"write_config"}, "checkpoint.py": {"write_manifest"}}
    for module, names in asks.items():
        assert names <= _names_used(PKG / module), module
    assert "from aac.eval.harness import evaluate" in (PKG / "describe.py").read_text()
    # the layout's file names are spelled in aac/run_dir.py only
    for path in PKG.rglob("*.py"):
        text = path.read_text()
        if path.name != "run_dir.py":
            assert '".hydra"' not in text and '"manifest.json"' not in text and '"config.yaml"' not in text, path
