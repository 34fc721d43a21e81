"""A long run survives its pieces: a SIGKILLed rollout worker, engine host or learner is rebuilt, its
state restored and the step retried (no step lost or repeated, the same adapter as a run nobody
killed); adapter folders stay bounded; the sync check passes a correct low-precision engine at the
flagship's lr and still catches a stale one within a step."""

from __future__ import annotations

import functools
import os
import signal
import tempfile
import time
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from aac.config import compose
from aac.metrics import read
from aac.training import SyncError, Trainer

STEPS = 4
# a cheap deterministic run under Ray: the tiny model on the HF engine (seeded per turn), the torch learner
RAY_RUN = ("+recipe=tiny", "rollout.placement=ray", "rollout.num_workers=2", "rollout.group_size=2",
           "env.max_steps=3", f"max_steps={STEPS}", "save_every=100", "learner.lr=5e-2", "rollout.cpu_threads=1")


@pytest.fixture(scope="module")
def ray_session():
    import ray

    from aac.placement import start_ray

    os.environ["RAY_TMPDIR"] = tempfile.mkdtemp(prefix="ray", dir="/tmp")  # unix socket paths < 108 B
    ray.shutdown()
    start_ray(num_cpus=2, threads=1)
    yield
    ray.shutdown()


class KillingTrainer(Trainer):
    """Kills one piece's process with SIGKILL during step `at` (0-based): the worker as its rollout
    starts, the engine or the learner between rollout and update."""

    victim, at = "", 1

    def _kill(self, placed) -> None:
        if self.step == self.at and not getattr(self, "killed", False):
            self.killed = True
            os.kill(placed.pid(), signal.SIGKILL)

    def rollout(self, groups, **kwargs):
        if self.victim == "worker":
            self._kill(self.pieces.workers[1])
        return super().rollout(groups, **kwargs)

    def samples(self, batch, advantages):
        if self.victim == "engine":
            self._kill(self.pieces.engines.hosts()[0])
        if self.victim == "learner":
            self._kill(self.learner)
        return super().samples(batch, advantages)


def _train(cfg, out: Path, cls=Trainer) -> list[dict]:
    trainer = cls(cfg, out)
    try:
        trainer.run()
        pieces = [*trainer.pieces.engines.hosts(), *trainer.pieces.workers, trainer.learner]
        pids = [p.pid() for p in pieces] if cfg.rollout.placement == "ray" else []
    finally:
        trainer.close()
    _gone(pids)
    return read(out / "metrics.jsonl")


def _gone(pids: list[int], wait_s: float = 30.0) -> None:
    """Every process of the run's pieces has ended once the trainer is closed (engines are closed and
    awaited before their actors go, so nothing of theirs holds memory)."""
    import time

    import psutil

    def running(pid: int) -> bool:
        try:
            return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return False

    deadline = time.time() + wait_s
    left = pids
    while left and time.time() < deadline:
        left = [p for p in left if running(p)]
        time.sleep(0.2)
    assert not left, f"processes left after close: {left}"


def _adapter(out: Path) -> dict[str, torch.Tensor]:
    return load_file(str(out / "checkpoints" / f"step_{STEPS:06d}" / "adapter" / "adapter_model.safetensors"))


@functools.cache
def _reference(base: str, run: tuple[str, ...] = RAY_RUN) -> tuple[list[dict], dict[str, torch.Tensor]]:
    """The run nobody killed, once per session's temp dir `base` and settings."""
    out = Path(tempfile.mkdtemp(prefix="reference", dir=base))
    return _train(compose(*run), out), _adapter(out)


@pytest.mark.slow
@pytest.mark.parametrize("victim", ["worker", "engine", "learner"])
def test_a_killed_piece_is_rebuilt_and_the_run_matches_an_unkilled_one(victim, ray_session, tmp_path_factory):
    rows_ref, adapter_ref = _reference(str(tmp_path_factory.getbasetemp()))
    out = tmp_path_factory.mktemp(victim)
    rows = _train(compose(*RAY_RUN), out, type("K", (KillingTrainer,), {"victim": victim}))
    assert [r["step"] for r in rows] == list(range(1, STEPS + 1))  # no step lost or repeated
    assert [r["uids"] for r in rows] == [r["uids"] for r in rows_ref]  # the same data order
    # a rebuilt engine takes the two workers holding its proxy with it
    assert rows[-1]["faults/actor_restarts"] == (3 if victim == "engine" else 1)
    assert sum(r["faults/retried_phases"] for r in rows) == 1
    assert [r["reward/episode_total_mean"] for r in rows] == [r["reward/episode_total_mean"] for r in rows_ref]
    adapter = _adapter(out)
    assert adapter.keys() == adapter_ref.keys() and any(v.abs().sum() > 0 for v in adapter.values())
    for key, value in adapter.items():  # updated once per step, never twice
        torch.testing.assert_close(value, adapter_ref[key], rtol=0, atol=0)


@pytest.mark.slow
def test_a_busy_piece_is_alive_and_a_killed_one_dead_at_once(ray_session):
    """Death is Ray's record, not a call left unanswered: a piece inside a ten-minute call is alive, and
    told so at once; SIGKILLed, its call fails and it is told dead at once."""
    import ray

    from aac.placement import Placed

    class Piece:  # defined here: Ray ships it by value
        def wait(self, seconds):
            time.sleep(seconds)

    piece = Placed(Piece, use_ray=True, name="busy")
    try:
        pid = piece.pid()
        call = piece.submit("wait", 600)
        assert not ray.wait([call], timeout=0.5)[0]  # inside its call
        t0 = time.monotonic()
        assert piece.alive() and time.monotonic() - t0 < 1.0
        os.kill(pid, signal.SIGKILL)
        with pytest.raises(ray.exceptions.RayActorError):
            ray.get(call, timeout=30)
        t0 = time.monotonic()
        assert not piece.alive() and time.monotonic() - t0 < 1.0
    finally:
        piece.kill()


OFF_POLICY = (*RAY_RUN, "rollout.max_off_policy_steps=1")
BUSY_S = 4.0  # the other pieces' calls around a kill: longer than a recovery takes on this machine


class BusyKillingTrainer(Trainer):
    """Under `max_off_policy_steps=1`, in step `at` (0-based): as step at+1's rollout is sent ahead,
    every piece but the victim gets a call that sleeps BUSY_S, queued before its work (the workers'
    rollout and the learner's update wait behind it), then the victim is SIGKILLed: it dies while the
    others are inside calls, and a learner's death is recovered from while they still are."""

    victim, at = "", 1

    def launch(self, groups, *, step=None, **kwargs):
        if step != self.at + 1 or getattr(self, "killed", False):
            return super().launch(groups, step=step, **kwargs)
        self.killed = True
        pieces = {"engine": self.pieces.engines.hosts()[0], "learner": self.learner, "worker": self.pieces.workers[1]}
        pids = {name: p.pid() for name, p in pieces.items()}  # asked before any is busy
        pieces["worker0"] = self.pieces.workers[0]
        for name, p in pieces.items():
            if name != self.victim:
                p.actor.__ray_call__.remote(lambda _, s: time.sleep(s), BUSY_S)
        launched = super().launch(groups, step=step, **kwargs)
        os.kill(pids[self.victim], signal.SIGKILL)
        return launched


@pytest.mark.slow
@pytest.mark.parametrize("victim", ["worker", "engine", "learner"])
def test_off_policy_a_piece_killed_while_the_others_are_busy(victim, ray_session, tmp_path_factory):
    """Only the killed piece is rebuilt (busy is not dead), every step runs once, and the batch collected
    ahead is trained on once: the same versions, lags, data and final adapter as a run nobody killed."""
    rows_ref, adapter_ref = _reference(str(tmp_path_factory.getbasetemp()), OFF_POLICY)
    out = tmp_path_factory.mktemp(f"off_{victim}")
    rows = _train(compose(*OFF_POLICY), out, type("K", (BusyKillingTrainer,), {"victim": victim}))
    assert [r["step"] for r in rows] == list(range(1, STEPS + 1))
    assert [r["adapter_version"] for r in rows] == list(range(1, STEPS + 1))
    assert [r["offpolicy/lag"] for r in rows] == [r["offpolicy/lag"] for r in rows_ref] == [0.0] + [1.0] * (STEPS - 1)
    assert [r["uids"] for r in rows] == [r["uids"] for r in rows_ref]
    # the victim alone (an engine takes the two workers holding its proxy), in one retried phase
    assert rows[-1]["faults/actor_restarts"] == (3 if victim == "engine" else 1)
    assert [r["faults/retried_phases"] for r in rows] == [0, 1, 0, 0]
    assert [r["reward/episode_total_mean"] for r in rows] == [r["reward/episode_total_mean"] for r in rows_ref]
    adapter = _adapter(out)
    assert adapter.keys() == adapter_ref.keys()
    for key, value in adapter.items():  # each batch applied once
        torch.testing.assert_close(value, adapter_ref[key], rtol=0, atol=0)


@pytest.mark.slow
def test_after_max_actor_restarts_the_run_stops_with_a_checkpoint(ray_session, tmp_path):
    cls = type("K", (KillingTrainer,), {"victim": "learner"})
    with pytest.raises(SystemExit, match=r"max_actor_restarts=0.*checkpoint of step 1"):
        _train(compose(*RAY_RUN, "max_actor_restarts=0"), tmp_path, cls)
    assert (tmp_path / "checkpoints" / "step_000001" / "adapter" / "adapter_config.json").exists()


def test_adapter_folders_stay_bounded(tmp_path):
    cfg = compose("+recipe=tiny", "rollout.placement=local", "max_steps=12", "save_every=100", "env.max_steps=3",
                  "rollout.group_size=2", "rollout.functions_per_step=1")
    rows = _train(cfg, tmp_path)
    assert len(rows) == 12
    assert sorted(p.name for p in (tmp_path / "adapters").iterdir()) == ["v000011", "v000012"]
    assert sorted(p.name for p in (tmp_path / "learner").iterdir()) == ["state_v000011.pt", "state_v000012.pt"]


def test_keep_adapters_changes_how_many_stay(tmp_path):
    cfg = compose("+recipe=tiny", "rollout.placement=local", "max_steps=3", "save_every=100", "env.max_steps=3",
                  "rollout.group_size=2", "rollout.functions_per_step=1", "keep_adapters=1")
    _train(cfg, tmp_path)
    assert [p.name for p in (tmp_path / "adapters").iterdir()] == ["v000003"]


@pytest.mark.slow
def test_sync_check_holds_a_bf16_engine_at_lr_1e_6_and_catches_a_stale_one(tmp_path):
    """A bf16 engine beside an fp32 learner at the flagship's lr: 50 steps, no false alarm (one update
    moves the probe far less than the kernels' gap, which the version part does not care about); with
    the sync skipped the first step already fails."""
    run = ("+recipe=tiny", "rollout.placement=local", "model.dtype=bfloat16", "learner.dtype=float32",
           "learner.lr=1e-6", "max_steps=50", "save_every=100", "env.max_steps=3", "rollout.group_size=2",
           "rollout.functions_per_step=1")
    rows = _train(compose(*run), tmp_path / "bf16")
    assert len(rows) == 50
    gaps = [r["sync/logprob_gap"] for r in rows]
    assert all(r["sync/probe_tokens"] >= 16 for r in rows)
    print(f"bf16 engine vs fp32 learner: gap {min(gaps):.4f}-{max(gaps):.4f}, "
          f"moved {max(r['sync/logprob_gap_previous'] - r['sync/logprob_gap'] for r in rows):.2e}")
    assert max(gaps) < 0.5  # the bound (null: 0.5 for a bf16 engine) holds with margin
    with pytest.raises(SyncError, match="stale adapter"):
        _train(compose(*run, "sync_adapter=false", "max_steps=2"), tmp_path / "stale")
    assert read(tmp_path / "stale" / "metrics.jsonl") == []  # caught at the first step


def test_sync_tolerance_bounds_the_weights_an_engine_may_serve(tmp_path, tiny_model_path, make_random_lora):
    """The weights part: an engine serving the right version number with other weights (here a random
    adapter in place of the learner's) fails the default fp32 bound; a looser sync_tolerance lets it by."""
    from types import SimpleNamespace

    from aac.config import LearnerConfig
    from aac.engines import GenRequest, Sampling, make_engine
    from aac.learner import Learner
    from aac.training.sync import ACTOR, FP32_TOLERANCE, AdapterSync

    learner = Learner(LearnerConfig(backend="torch", lora_r=4, lora_alpha=8), tiny_model_path, seed=0)
    engine = make_engine("hf", tiny_model_path, max_model_len=256, seed=0)
    run = SimpleNamespace(learner=learner, actor=engine)
    sync = AdapterSync(run, tmp_path, sync_adapter=True, check_sync=True, tolerance=FP32_TOLERANCE, keep=2)
    assert "time/sync_check_s" not in sync.sync(0)  # nothing to check: no time
    chat = [{"role": "user", "content": "Describe test_func."}]
    out = engine.generate([GenRequest(chat, Sampling(temperature=0.0, max_tokens=16), ACTOR)])[0]
    probe = [(out.prompt_ids, out.token_ids)]
    checked = sync.sync(1, probe, sync.probe_before(probe))
    assert checked["sync/logprob_gap"] < 1e-4  # the learner's own adapter
    # the check's cost, the probe before the update included, apart from the sync's
    assert 0 < checked["time/sync_check_s"] and "sync/logprob_gap_previous" in checked
    other = make_random_lora(tiny_model_path, seed=3, std=0.5)
    sync.sync_adapter = False  # the learner's v2 is saved, the engine gets other weights under that number
    engine.load_adapter(ACTOR, other, 2)
    with pytest.raises(SyncError, match="other weights"):
        sync.sync(2, probe)
    sync.tolerance = 100.0
    assert sync.sync(2, probe)["sync/logprob_gap"] > FP32_TOLERANCE


def test_sync_probe_tokens_sets_how_many_turns_the_check_scores():
    """`sync_probe_tokens`: turns are taken longest first until they hold that many generated tokens
    (smollm2_cpu's 32 takes its longest turn alone: a third of the check's time at 128)."""
    from types import SimpleNamespace

    from aac.training.sync import probe_of

    turn = lambda n: SimpleNamespace(prompt_ids=[1] * 300, token_ids=list(range(n)))  # noqa: E731
    batch = SimpleNamespace(episodes=[SimpleNamespace(turns=[turn(24), turn(48), turn(0)]),
                                      SimpleNamespace(turns=[turn(32), turn(48), turn(12)])])
    assert [len(c) for _, c in probe_of(batch, 32)] == [48]
    assert [len(c) for _, c in probe_of(batch, 128)] == [48, 48, 32]
    assert sum(len(c) for _, c in probe_of(batch, 1000)) == 164  # every turn that generated tokens
    from aac.config import compose

    assert compose("+recipe=smollm2_cpu").sync_probe_tokens == 32 and compose().sync_probe_tokens == 128
