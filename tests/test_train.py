"""The training loop on the tiny recipe: it learns, resumes exactly, and keeps the engine in sync."""

from __future__ import annotations

import functools
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from aac.config import compose
from aac.metrics import read
from aac.train import train
from aac.training import DataOrder, SyncError, Trainer

# A reward the random tiny model can learn: every turn is scored by its length alone
# (short turns win), nothing depends on the critic or on parsing.
LEARNABLE = (
    "rewards=no_informativeness", "rewards.lambda_h=0", "rewards.p_parse=0",
    "rewards.tau_reason=6", "rewards.tau_input=6", "rewards.tau_reflect=6",
)


def tiny_cfg(*overrides: str):
    return compose("+recipe=tiny", "rollout.placement=local", *overrides)


def _run(cfg, out: Path, trainer_cls=Trainer) -> list[dict]:
    trainer = trainer_cls(cfg, out)
    try:
        trainer.run()
    finally:
        trainer.close()
    return read(out / "metrics.jsonl")


def test_data_order_is_a_seeded_permutation_per_epoch():
    order = DataOrder(n=10, per_step=3, seed=7)
    assert order.steps_per_epoch == 3
    epoch0 = [i for s in range(3) for i in order.indices(s)]
    assert len(set(epoch0)) == 9  # without replacement within an epoch
    assert order.indices(4) == DataOrder(10, 3, 7).indices(4)  # a pure function of (seed, step)
    assert order.indices(0) != order.indices(3)  # a new permutation next epoch
    assert DataOrder(10, 3, 8).indices(0) != order.indices(0)


@functools.cache
def _bench_behaviour():
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_behaviour", Path(__file__).parents[1] / "benchmarks" / "bench_behaviour.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    return bench


PROBES = 12  # reflect turns probed: each costs a few forward passes


class ProbedTrainer(Trainer):
    """Measures P(Decision: YES) on the first batch's reflect turns that had reached K informative
    calls, under the weights before the first update (`before`) and after the run (`probe()`)."""

    matchers = None  # one MatcherCache for the process: decoding the vocabulary costs seconds

    def probe(self) -> list[float]:
        from aac.engines.constrained import MatcherCache

        if ProbedTrainer.matchers is None:
            ProbedTrainer.matchers = MatcherCache(self.engine.tokenizer, self.engine.eos_ids)
        policy = self.learner.actor.policy
        policy.eval()
        return [_bench_behaviour().yes_probability(policy, ProbedTrainer.matchers, *p) for p in self.probes]

    def samples(self, batch, advantages):
        if self.step == 0:  # before the first update
            self.probes = _bench_behaviour().reflect_probes(batch, k_reached=True)[:PROBES]
            self.before = self.probe()
        return super().samples(batch, advantages)


class ZeroAdvantageTrainer(ProbedTrainer):
    def advantages(self, batch):
        return [[0.0] * len(ep.turns) for ep in batch.episodes]


@pytest.mark.slow
def test_the_default_credits_stopping_after_k_informative_calls_and_the_old_table_does_not(tmp_path):
    """Behaviour, not reward, measured without sampling noise: the controlled experiment of
    benchmarks/bench_behaviour.py (scripted critic, K = 1, constrained formats, T_max 18) for one
    update of 16 episodes, then the learner's own P(YES) at the reflect turns of that batch whose
    episode had made its K-th informative call (stopping is right there). The same seed gives every
    run the same batch; only the objective differs. The default (`aac_potential`) raises P(YES);
    the paper's table summed into `turn` (the old default) credits the NO turns after the K-th
    informative call (+0.46 each, 113 of them in 3 such groups) about as much in total as the stops
    (+2.15 each, 24), so P(YES) barely moves; zero advantages skip the update and move nothing.
    Deterministic (same seed, no sampling in the measure): default +0.04..+0.08 per probe (mean
    +0.068), old table -0.011..+0.017 (mean +0.009), from P(YES) 0.27; ~50 s of one core. The random
    tiny model does not yet tell n >= K from n < K in one update (P(YES) at n < K moves alike)."""
    import torch

    torch.set_num_threads(1)
    from aac.data.branches import write_branch_rows

    data = write_branch_rows(tmp_path / "branches.jsonl")
    setting = _bench_behaviour().experiment_overrides(data, k=1, lr=0.03, group_size=16, functions=1, turns=18, steps=1)
    deltas, before = {}, {}
    for name, schedule, cls in (("default", "rewards=aac_potential", ProbedTrainer),
                                ("old", "rewards=aac", ProbedTrainer), ("zero", "rewards=aac_potential", ZeroAdvantageTrainer)):
        trainer = cls(tiny_cfg(*setting, schedule), tmp_path / name)
        try:
            trainer.run()
            deltas[name] = np.array(trainer.probe()) - np.array(trainer.before)
            before[name] = trainer.before
        finally:
            trainer.close()
        rows = read(tmp_path / name / "metrics.jsonl")
        assert rows[0]["update/skipped"] == (name == "zero")
        assert all(rows[0][f"parse_fail/{p}_rate"] == 0 for p in ("reasoning", "input", "reflect"))
    print({k: np.round(v, 3).tolist() for k, v in deltas.items()})
    assert before["default"] == before["old"] == before["zero"] and len(before["default"]) == PROBES  # one batch
    assert np.abs(deltas["zero"]).max() < 1e-6
    assert deltas["default"].mean() > 0.03 and (deltas["default"] > 0.02).all(), deltas["default"]
    assert deltas["default"].mean() > deltas["old"].mean() + 0.03, deltas
    assert (deltas["default"] > deltas["old"] + 0.01).all(), deltas


@pytest.mark.slow
def test_sync_check_passes_and_fires_when_sync_is_off(tmp_path):
    from aac.training.sync import FP32_TOLERANCE

    cfg = tiny_cfg(*LEARNABLE, "max_steps=1", "learner.lr=5e-2", "save_every=100")
    rows = _run(cfg, tmp_path / "on")
    assert rows[0]["sync/logprob_gap"] < FP32_TOLERANCE  # null: the float32 bound
    phases = ("rollout", "advantages", "update", "rollout_ahead_wait", "sync", "sync_check", "metrics")
    assert all(rows[0][f"time/{p}_s"] >= 0 for p in phases), sorted(rows[0])  # every phase of a step is timed
    assert rows[0]["adapter_version"] == 1
    stale = tiny_cfg(*LEARNABLE, "max_steps=1", "learner.lr=5e-2", "save_every=100", "sync_adapter=false")
    with pytest.raises(SyncError, match="stale adapter"):
        _run(stale, tmp_path / "off")
    # staleness is told by versions, whatever the numeric bound: a bound no gap reaches still catches it
    with pytest.raises(SyncError, match="stale adapter"):
        _run(tiny_cfg(*LEARNABLE, "max_steps=1", "save_every=100", "sync_adapter=false", "sync_tolerance=100"),
             tmp_path / "off-loose")


def test_the_steps_tail_runs_at_its_cadence(tmp_path):
    """The weights check after the syncs of v1 and every `sync_check_every`-th version (the versions every step);
    the learner's state written at the checkpoint cadence (`save_every`), not each step."""

    class Listing(Trainer):
        def train_step(self):
            self.listed = [*getattr(self, "listed", []), sorted(p.name for p in self.states.root.iterdir())]
            return super().train_step()

    trainer = Listing(tiny_cfg(*LEARNABLE, "max_steps=4", "save_every=2", "sync_check_every=2", "learner.lr=5e-2"),
                      tmp_path)
    try:
        trainer.run()
    finally:
        trainer.close()
    rows = read(tmp_path / "metrics.jsonl")
    assert [r.get("sync/checked_version") for r in rows] == [1, 2, None, 4]
    assert [("time/sync_check_s" in r) for r in rows] == [True, True, False, True]  # unchecked: no probe either
    assert all(r["sync/logprob_gap"] < 1e-3 for r in rows if "sync/logprob_gap" in r)
    assert trainer.listed == [["state_v000000.pt"]] * 2 + [["state_v000002.pt"]] * 2  # the start's, then step 2's
    assert sorted(p.name for p in (tmp_path / "learner").iterdir()) == ["state_v000004.pt"]


def _short_tmp() -> str:
    """Ray's unix sockets live under RAY_TMPDIR, and their paths must stay under 108 bytes."""
    import tempfile

    return tempfile.mkdtemp(prefix="ray", dir="/tmp")


STEPS = 4


def _resumable(out: Path, *extra: str) -> tuple[str, ...]:
    """Overrides (after tiny_cfg's) of a run that checkpoints every step."""
    return f"out_dir={out}", f"max_steps={STEPS}", "save_every=1", *LEARNABLE, *extra


def _train_cmd(out: Path, *extra: str) -> list[str]:
    # in-process pieces: resuming is about checkpoints, and Ray start-ups would cost a minute
    return [sys.executable, "-m", "aac.train", "+recipe=tiny", "rollout.placement=local", *_resumable(out, *extra)]


@pytest.mark.slow
def test_sigkill_then_resume_matches_an_uninterrupted_run(tmp_path):
    env = dict(os.environ, RAY_TMPDIR=_short_tmp(), PYTHONUNBUFFERED="1")
    full, killed = tmp_path / "full", tmp_path / "killed"
    # only the killed run needs a process of its own: the reference and the resume run in-process (a start-up each saved)
    train(tiny_cfg(*_resumable(full)))

    proc = subprocess.Popen(_train_cmd(killed), env=env, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 300
    while len(read(killed / "metrics.jsonl")) < 2 and time.time() < deadline:
        time.sleep(0.2)
    time.sleep(0.5)  # into the next step
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert len(read(killed / "metrics.jsonl")) < STEPS, "the run finished before it was killed"
    latest = (killed / "checkpoints" / (killed / "checkpoints" / "latest").read_text().strip())
    assert (latest / "trainer.json").exists() and (latest / "adapter" / "adapter_config.json").exists()

    train(tiny_cfg(*_resumable(killed, "resume=true")))
    a, b = read(full / "metrics.jsonl"), read(killed / "metrics.jsonl")
    assert [r["step"] for r in b] == list(range(1, STEPS + 1))
    assert [r["uids"] for r in a] == [r["uids"] for r in b]  # same data order
    assert json.loads((killed / "summary.json").read_text())["steps"] == STEPS
    # kept episodes: one file a step, the steps after the checkpoint written once more, not twice
    from aac.episode_files import read_steps

    kept = read_steps(killed / "episodes")
    assert [r["step"] for r in kept] == [s for s in range(1, STEPS + 1) for _ in range(4)]
    uids = {r["step"]: r["uids"] for r in b}
    assert all(r["uid"] in uids[r["step"]] for r in kept)
    from peft import PeftConfig

    final = killed / "checkpoints" / f"step_{STEPS:06d}" / "adapter"
    assert PeftConfig.from_pretrained(str(final)).r == 4


@pytest.mark.slow
def test_multirun_sweep_writes_one_dir_per_setting_and_a_summary(tmp_path):
    env = dict(os.environ, RAY_TMPDIR=_short_tmp())
    sweep = tmp_path / "sweep"
    out = subprocess.run(
        [sys.executable, "-m", "aac.train", "-m", "+recipe=tiny", "rollout.placement=local", "max_steps=1",
         "rewards.lambda_h=1,4", f"hydra.sweep.dir={sweep}"],
        env=env, capture_output=True, text=True, timeout=600,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    runs = sorted(p.name for p in sweep.iterdir() if p.is_dir() and (p / "summary.json").exists())
    assert len(runs) == 2 and "rewards.lambda_h=1" in runs[0] and "rewards.lambda_h=4" in runs[1]
    table = (sweep / "sweep_summary.md").read_text()
    assert all(run in table for run in runs)


def test_save_every_zero_keeps_only_the_last_checkpoint(tmp_path):
    _run(tiny_cfg("max_steps=2", "save_every=0", "env.max_steps=3", "rollout.group_size=2"), tmp_path)
    assert sorted(p.name for p in (tmp_path / "checkpoints").glob("step_*")) == ["step_000002"]
    with pytest.raises(ValueError, match=r"save_every=-1 must be >= 0 \(0: never\)"):
        tiny_cfg("save_every=-1")
