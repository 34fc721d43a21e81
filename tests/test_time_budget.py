"""`time_budget_s`: training ends before a step that, as slow as the slowest so far, would end past the budget
(after the step that crosses it at the latest), never before `time_budget_min_steps` steps; the run's summary says
how far it got and on what machine."""

from __future__ import annotations

import json

import pytest

from aac.config import ConfigError, compose
from aac.cpu_speed import GIVEN, per_core_gflops
from aac.errors import UserError
from aac.metrics import read
from aac.train import train
from aac.training import Trainer


def tiny_cfg(out, *overrides: str):
    return compose("+recipe=tiny", "rollout.placement=local", "max_steps=4", "save_every=0", f"out_dir={out}",
                   *overrides)


def test_a_spent_budget_still_runs_the_minimum_steps_and_checkpoints_the_last(tmp_path):
    # spent before the first step ends: the minimum (2) runs, nothing more; the last step is checkpointed
    summary = train(tiny_cfg(tmp_path, "time_budget_s=1e-9", "time_budget_min_steps=2"))
    assert [r["step"] for r in read(tmp_path / "metrics.jsonl")] == [1, 2]
    assert sorted(p.name for p in (tmp_path / "checkpoints").glob("step_*")) == ["step_000002"]
    saved = json.loads((tmp_path / "summary.json").read_text())
    assert saved["steps"] == summary["steps"] == 2 and saved["machine_gflops_per_core"] > 0


def steps_run(trainer: Trainer, out) -> list[int]:
    """Run `trainer` to its end; the steps its metrics recorded."""
    try:
        trainer.run()
    finally:
        trainer.close()
    return [r["step"] for r in read(out / "metrics.jsonl")]


class CrossedInStep2(Trainer):
    """The budget runs out while step 2 runs: its clock is moved an hour back during that step."""

    def train_step(self):
        m = super().train_step()
        if self.step == 1:  # the step being trained is self.step + 1
            self.budget.started -= 3600
        return m


def test_the_step_that_crosses_the_budget_finishes_and_is_the_last(tmp_path):
    trainer = CrossedInStep2(tiny_cfg(tmp_path, "time_budget_s=1800", "time_budget_min_steps=1"), tmp_path)
    assert steps_run(trainer, tmp_path) == [1, 2]
    assert (tmp_path / "checkpoints" / "step_000002").is_dir()


class SlowStep1(Trainer):
    """Step 1 takes 600 s by the budget's clocks (both moved back), and ends 600 s into a 1000 s budget."""

    def train_step(self):
        m = super().train_step()
        if self.step == 0:
            self.budget.started -= 600
            self.budget.step_started -= 600
        return m


def test_a_step_predicted_to_end_past_the_budget_is_not_started(tmp_path):
    # 600 s spent of 1000: the budget is not crossed, but another 600 s step would cross it
    trainer = SlowStep1(tiny_cfg(tmp_path, "time_budget_s=1000", "time_budget_min_steps=1"), tmp_path)
    assert steps_run(trainer, tmp_path) == [1]
    assert trainer.budget.slowest >= 600 and (tmp_path / "checkpoints" / "step_000001").is_dir()
    # the same run with room for another 600 s step runs to max_steps (4): the later steps are fast
    out = tmp_path / "roomy"
    assert steps_run(SlowStep1(tiny_cfg(out, "time_budget_s=1300", "time_budget_min_steps=1"), out), out) == [1, 2, 3, 4]


@pytest.mark.parametrize("override", ["time_budget_s=0", "time_budget_s=-5", "time_budget_min_steps=0"])
def test_budget_settings_out_of_range_are_one_line_errors(override):
    with pytest.raises(ConfigError, match=override.split("=")[0]):
        compose("+recipe=tiny", override)


def test_machine_speed_is_measured_unless_given(monkeypatch):
    """Measured in a process of its own; the test session measures once and gives it to every run ($AAC_CPU_GFLOPS:
    conftest), which then starts no measuring process; a given speed that is no number is a one-line error."""
    import subprocess

    monkeypatch.delenv(GIVEN, raising=False)
    assert 0.1 < per_core_gflops(repeats=2) < 10_000
    monkeypatch.setenv(GIVEN, "123.4")
    monkeypatch.setattr(subprocess, "run", None)  # no process started
    assert per_core_gflops() == 123.4
    monkeypatch.setenv(GIVEN, "fast")
    with pytest.raises(UserError, match="AAC_CPU_GFLOPS='fast' is not a number"):
        per_core_gflops()
