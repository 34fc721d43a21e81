"""Resume from the run dir alone (its own config comes back, a changed key is refused) and from damaged
checkpoints (the newest intact one, or one line and nothing deleted), on real tiny runs."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest
from test_train import LEARNABLE, tiny_cfg

from aac import checkpoint
from aac.config import compose
from aac.errors import entry_point
from aac.metrics import read
from aac.run_dir import CheckpointDamaged, adapter_of, damage
from aac.train import main, train

STEPS = 3


# what a resumed run must reproduce exactly (test_pipeline's exact resume: 4 episodes a step, one engine call)
KEYS = ("step", "uids", "reward/episode_total_mean", "update/loss", "rollout/generated_tokens")


def _same(rows: list[dict]) -> list[dict]:
    return [{k: r[k] for k in KEYS} for r in rows]


RUN = ("save_every=1", "env.max_steps=6", "rollout.group_size=2", "learner.lr=5e-2", *LEARNABLE)


def _cfg(out: Path, *extra: str):
    return tiny_cfg(f"out_dir={out}", *RUN, *extra)


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> Path:
    """An uninterrupted run of STEPS steps, checkpointed at each."""
    out = tmp_path_factory.mktemp("reference")
    train(_cfg(out, f"max_steps={STEPS}"))
    return out


def _hydra_main(monkeypatch, *argv: str) -> None:
    """`python -m aac.train ARGV`, in this process (a start-up saved)."""
    monkeypatch.setattr(sys, "argv", ["aac.train", *argv])
    main()


def _files(run: Path) -> dict[str, int]:
    return {str(f.relative_to(run)): f.stat().st_size for f in sorted(run.rglob("*")) if f.is_file()}


@pytest.mark.slow
def test_resume_true_restores_the_runs_own_recipe_and_continues_exactly(tmp_path, reference, monkeypatch):
    run = tmp_path / "run"
    _hydra_main(monkeypatch, "+recipe=tiny", "rollout.placement=local", f"out_dir={run}", *RUN, f"max_steps={STEPS - 1}")
    # the README's command, without +recipe=tiny: the run's config comes back from RUN/config.yaml
    _hydra_main(monkeypatch, f"out_dir={run}", "resume=true", f"max_steps={STEPS}")
    assert _same(read(run / "metrics.jsonl")) == _same(read(reference / "metrics.jsonl"))
    saved = compose("+recipe=tiny")  # what the recipe alone composes
    restored = (run / "config.yaml").read_text()
    assert "recipe_name: tiny" in restored and f"max_steps: {STEPS}" in restored
    assert f"name: {saved.model.name}" in restored  # the tiny model, not the default recipe's
    assert not (run / ".hydra").exists()  # the one saved config: what an eval of the run reads too (aac/run_dir.py)

    # a key a resumed run keeps, set differently: one line, nothing written
    before = _files(run)
    with pytest.raises(SystemExit) as e:
        _hydra_main(monkeypatch, f"out_dir={run}", "resume=true", "rollout.group_size=3")
    assert str(e.value.code).startswith(f"aac: cannot resume: {run / 'config.yaml'}: rollout.group_size=3 differs "
                                        "from the run's 2;")
    assert "\n" not in str(e.value.code)
    after = _files(run)  # nothing changed but the log it appends to
    assert {f: n for f, n in after.items() if not f.endswith(".log")} == \
        {f: n for f, n in before.items() if not f.endswith(".log")}
    # in code (no command line) every key counts as set
    with pytest.raises(SystemExit, match="rollout.group_size=3 differs"):
        entry_point(train)(_cfg(run, "resume=true", "rollout.group_size=3", f"max_steps={STEPS}"))

    # resume=A_CHECKPOINT alone: that checkpoint, in its run dir (out_dir), the steps after it replayed exactly
    _hydra_main(monkeypatch, f"resume={run / 'checkpoints' / f'step_{STEPS - 1:06d}'}")
    assert _same(read(run / "metrics.jsonl")) == _same(read(reference / "metrics.jsonl"))


def test_resume_with_no_run_there_is_one_line(tmp_path, monkeypatch):
    with pytest.raises(SystemExit) as e:
        _hydra_main(monkeypatch, f"resume={tmp_path / 'nope'}")
    assert e.value.code == (f"aac: config error: resume={tmp_path / 'nope'}: no such run dir or checkpoint "
                            "(resume=true goes on in out_dir)")
    assert not (tmp_path / "nope").exists()  # Hydra made no run dir for it
    (tmp_path / "empty").mkdir()
    with pytest.raises(SystemExit, match=r"^aac: cannot resume: .*empty: no run to resume there"):
        entry_point(train)(_cfg(tmp_path / "empty", "resume=true"))


@pytest.mark.slow
def test_a_damaged_newest_checkpoint_falls_back_and_none_intact_is_one_line(tmp_path, reference, caplog):
    run = tmp_path / "run"
    shutil.copytree(reference, run)
    root = run / "checkpoints"
    newest = root / f"step_{STEPS:06d}"
    learner = newest / "learner.pt"
    whole = learner.stat().st_size
    learner.write_bytes(learner.read_bytes()[: whole // 2])  # truncated
    (newest / "trainer.json").write_text('{"step": ')
    with caplog.at_level("WARNING", logger="aac.train"):
        train(_cfg(run, f"max_steps={STEPS}", "resume=true"))
    warned = [r.getMessage() for r in caplog.records if "damaged" in r.getMessage()]
    assert warned == [f"resume: checkpoint damaged (step_{STEPS:06d}: learner.pt: {whole // 2} bytes, the manifest "
                      f"says {whole}); resuming from step_{STEPS - 1:06d}"]
    assert _same(read(run / "metrics.jsonl")) == _same(read(reference / "metrics.jsonl"))  # step 3 again, exactly
    assert damage(newest) is None  # rewritten whole

    # every checkpoint damaged: one line, exit non-zero, every file still there
    for ckpt in root.glob("step_*"):
        (ckpt / "trainer.json").write_text("{")
    before = _files(run)
    with pytest.raises(SystemExit) as e:
        entry_point(train)(_cfg(run, f"max_steps={STEPS + 1}", "resume=true"))
    line = str(e.value.code)
    assert line.startswith(f"aac: damaged checkpoint: {root}: no intact checkpoint (step_{STEPS:06d}: trainer.json: ")
    assert "nothing was deleted" in line and "\n" not in line
    after = _files(run)
    assert set(before) <= set(after) and all(after[f] == n for f, n in before.items() if f != "config.yaml")


def test_retention_keeps_the_one_before_the_newest(tmp_path):
    src = tmp_path / "src"
    (src / "adapter").mkdir(parents=True)
    (src / "adapter" / "adapter_model.bin").write_bytes(b"a" * 10)
    (src / "learner.pt").write_bytes(b"b" * 10)
    for step in (1, 2, 3):
        checkpoint.save(tmp_path / "ck", step, trainer_state={"step": step}, keep=1, adapter=src / "adapter",
                        learner_state=src / "learner.pt")
    assert sorted(p.name for p in (tmp_path / "ck").glob("step_*")) == ["step_000002", "step_000003"]


def test_eval_takes_the_newest_intact_checkpoint_and_refuses_a_damaged_one_named(tmp_path, reference, caplog):
    """`checkpoint=` of aac.eval, aac.describe and aac.export (`aac.run_dir.adapter_of`)."""
    run = tmp_path / "run"
    shutil.copytree(reference, run)
    root = run / "checkpoints"
    newest = root / f"step_{STEPS:06d}"
    weights = next((newest / "adapter").glob("adapter_model.*"))
    weights.write_bytes(weights.read_bytes()[:100])  # truncated
    with caplog.at_level("WARNING", logger="aac.run_dir"):
        assert adapter_of(str(run)) == root / f"step_{STEPS - 1:06d}" / "adapter"
    assert [r.getMessage() for r in caplog.records if "skipped damaged" in r.getMessage()] == [
        f"{run}: skipped damaged checkpoint(s): step_{STEPS:06d}: adapter/{weights.name}: 100 bytes, "
        f"the manifest says {(root / f'step_{STEPS - 1:06d}' / 'adapter' / weights.name).stat().st_size}; "
        f"using step_{STEPS - 1:06d}"]
    with pytest.raises(CheckpointDamaged, match=f"^{newest}: adapter/{weights.name}: 100 bytes"):
        adapter_of(str(newest))
    for ckpt in root.glob("step_*"):
        (ckpt / "trainer.json").write_text("{")
    with pytest.raises(CheckpointDamaged, match=f"^{root}: no intact checkpoint"):
        adapter_of(str(run))
