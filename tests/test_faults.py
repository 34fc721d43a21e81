"""A long run survives its pieces: a SIGKILLed rollout worker, engine host or learner is rebuilt, its
state restored (a learner's: the state of the last checkpoint and the updates since, replayed) and the
step retried (no step lost or repeated, the same adapter as a run nobody killed, played in one process); a SIGSTOPped one is
found by the watchdog and handled alike; adapter folders stay bounded; the sync check passes a correct
low-precision engine at the flagship's lr and still catches a stale one within a step."""

from __future__ import annotations

import functools
import json
import logging
import os
import signal
import tempfile
import time
import types
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file
from test_train import LEARNABLE

from aac.config import compose
from aac.metrics import read
from aac.training import SyncError, Trainer

STEPS = 4
# a cheap deterministic run under Ray: the tiny model on the HF engine (seeded per turn), the torch learner
# (rewards a random model can earn: by length alone, so every update moves the adapter). Which episodes share an
# engine batch follows how fast their sandbox calls came back; each row samples from its own seed, so it does not
# matter
RAY_RUN = ("+recipe=tiny", "rollout.placement=ray", "rollout.num_workers=2", "rollout.group_size=2",
           "env.max_steps=3", f"max_steps={STEPS}", "save_every=100", "learner.lr=5e-2", "rollout.cpu_threads=1",
           *LEARNABLE)


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
    """SIGKILLs one piece's process in each step of `kills` (0-based step -> victim): a worker as the step's
    rollout starts, the engine or the learner between rollout and update (once: the retried step goes on)."""

    kills: dict[int, str] = {}
    loaded: dict[str, str] | None = None  # a test's own dict: the model folder each piece holds as the run ends

    def run(self):
        super().run()
        if self.loaded is not None:
            self.loaded.update(_loaded_folders(self))

    def _kill(self, victim: str, placed) -> None:
        done = self.__dict__.setdefault("killed", set())
        if self.kills.get(self.step) == victim and self.step not in done:
            done.add(self.step)
            os.kill(placed.pid(), signal.SIGKILL)

    def rollout(self, groups, **kwargs):
        self._kill("worker", self.pieces.workers[1])
        return super().rollout(groups, **kwargs)

    def samples(self, batch, advantages):
        self._kill("engine", self.pieces.engines.hosts()[0])
        self._kill("learner", self.learner)
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


def _loaded_folders(trainer: Trainer) -> dict[str, str]:
    """The model folder the engine host's tokenizer and the learner's adapter were loaded from, asked in their actors."""
    import ray

    engine = trainer.pieces.engines.hosts()[0].actor
    return {"engine": ray.get(engine.__ray_call__.remote(lambda host: host.engine.tokenizer.name_or_path)),
            "learner": ray.get(trainer.learner.actor.__ray_call__.remote(
                lambda learner: learner.policy.peft_config["default"].base_model_name_or_path))}


def _hub_snapshot(model_path: str, hub: Path, monkeypatch) -> tuple[str, Path]:
    """`model_path` as the hub id aac-test/tiny-qwen3 in an HF cache at `hub` (its layout: refs/main naming a
    snapshot), offline (a download would fail): the id and its snapshot folder."""
    import shutil

    from huggingface_hub import constants

    commit = "0123456789abcdef0123456789abcdef01234567"
    repo = hub / "models--aac-test--tiny-qwen3"
    shutil.copytree(model_path, repo / "snapshots" / commit)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(hub))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    return "aac-test/tiny-qwen3", repo / "snapshots" / commit


def _adapter(out: Path, step: int = STEPS) -> dict[str, torch.Tensor]:
    return load_file(str(out / "checkpoints" / f"step_{step:06d}" / "adapter" / "adapter_model.safetensors"))


@functools.cache
def _reference(base: str, run: tuple[str, ...] = RAY_RUN) -> Path:
    """The folder of the run nobody killed, once per session's temp dir `base` and settings: in this process, torch
    on one thread as in each Ray piece (`rollout.cpu_threads=1`), which gives the Ray run's data, rewards and
    adapter bit for bit without starting four actors (4 s, not 16-30)."""
    out = Path(tempfile.mkdtemp(prefix="reference", dir=base))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        _train(compose(*run, "rollout.placement=local"), out)
        return out
    finally:
        torch.set_num_threads(threads)


def _unkilled(base: str, run: tuple[str, ...] = RAY_RUN) -> tuple[list[dict], dict[str, torch.Tensor]]:
    """The reference run's rows and final adapter."""
    out = _reference(base, run)
    return read(out / "metrics.jsonl"), _adapter(out)


@pytest.mark.slow
def test_killed_pieces_are_rebuilt_and_the_run_matches_an_unkilled_one(ray_session, tmp_path_factory, tiny_model_path,
                                                                       monkeypatch):
    """One run, a piece killed in each of steps 2-4: a rollout worker, the engine host, the learner. Its state was
    written at the start only (save_every=100), so the rebuilt learner replays the three updates since and the
    retried fourth is applied once. Its model is a hub id found in the HF cache, offline: the driver resolves it
    once, and every piece, the rebuilt ones too, loads that snapshot folder (not the id, which each would resolve,
    or download, on its own)."""
    rows_ref, adapter_ref = _unkilled(str(tmp_path_factory.getbasetemp()))
    hub_id, snapshot = _hub_snapshot(tiny_model_path, tmp_path_factory.mktemp("hub"), monkeypatch)
    out, loaded = tmp_path_factory.mktemp("killed"), {}
    kills = {1: "worker", 2: "engine", 3: "learner"}
    rows = _train(compose(*RAY_RUN, f"model.name={hub_id}"), out,
                  type("K", (KillingTrainer,), {"kills": kills, "loaded": loaded}))
    assert loaded == {"engine": str(snapshot), "learner": str(snapshot)}
    assert [r["step"] for r in rows] == list(range(1, STEPS + 1))  # no step lost or repeated
    assert [r["uids"] for r in rows] == [r["uids"] for r in rows_ref]  # the same data order
    # one retried phase per kill; a rebuilt engine takes the two workers holding its proxy with it
    assert [r["faults/retried_phases"] for r in rows] == [0, 1, 1, 1]
    assert [r["faults/actor_restarts"] for r in rows] == [0, 1, 4, 5]
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


def test_an_actor_without_a_record_in_rays_table_is_taken_as_alive(ray_session, caplog):
    """A loaded GCS can answer a read of the actor table with no record: asked again, then taken as alive (a
    call to a dead actor fails anyway), never a KeyError out of the fault path."""
    import ray

    from aac.placement import _dead

    unknown = types.SimpleNamespace(_actor_id=ray.ActorID.from_random())  # a handle the GCS never registered
    t0 = time.monotonic()
    with caplog.at_level(logging.WARNING, logger="aac"):
        assert not _dead(unknown)
    assert 2.0 < time.monotonic() - t0 < 30.0  # asked again before giving up
    assert "no record of actor" in caplog.text


OFF_POLICY = (*RAY_RUN, "rollout.max_off_policy_steps=1")
BUSY_S = 4.0  # the other pieces' calls around a kill: longer than a recovery takes on this machine


class BusyKillingTrainer(Trainer):
    """Under `max_off_policy_steps=1`, in each step of `kills` (0-based step -> victim): as the next step's
    rollout is sent ahead, every piece but the victim gets a call that sleeps BUSY_S, queued before its work
    (the workers' rollout and the learner's update wait behind it), then the victim is SIGKILLed: it dies while
    the others are inside calls, and a learner's death is recovered from while they still are."""

    kills: dict[int, str] = {}

    def launch(self, groups, *, step=None, **kwargs):
        done = self.__dict__.setdefault("killed", set())
        victim = self.kills.get(step - 1) if step is not None else None
        if victim is None or step in done:
            return super().launch(groups, step=step, **kwargs)
        done.add(step)
        pieces = {"engine": self.pieces.engines.hosts()[0], "learner": self.learner, "worker": self.pieces.workers[1]}
        pids = {name: p.pid() for name, p in pieces.items()}  # asked before any is busy
        pieces["worker0"] = self.pieces.workers[0]
        for name, p in pieces.items():
            if name != victim:
                p.actor.__ray_call__.remote(lambda _, s: time.sleep(s), BUSY_S)
        launched = super().launch(groups, step=step, **kwargs)
        os.kill(pids[victim], signal.SIGKILL)
        return launched


@pytest.mark.slow
def test_off_policy_pieces_killed_while_the_others_are_busy(ray_session, tmp_path_factory):
    """One run, a piece killed as each of steps 2-4 is sent ahead: a worker, the engine host, the learner. Only
    the killed piece is rebuilt (busy is not dead), every step runs once, and the batch collected ahead is trained
    on once: the same versions, lags, data and final adapter as a run nobody killed."""
    rows_ref, adapter_ref = _unkilled(str(tmp_path_factory.getbasetemp()), OFF_POLICY)
    out = tmp_path_factory.mktemp("off_policy")
    kills = {0: "worker", 1: "engine", 2: "learner"}
    rows = _train(compose(*OFF_POLICY), out, type("K", (BusyKillingTrainer,), {"kills": kills}))
    assert [r["step"] for r in rows] == list(range(1, STEPS + 1))
    assert [r["adapter_version"] for r in rows] == list(range(1, STEPS + 1))
    assert [r["offpolicy/lag"] for r in rows] == [r["offpolicy/lag"] for r in rows_ref] == [0.0] + [1.0] * (STEPS - 1)
    assert [r["uids"] for r in rows] == [r["uids"] for r in rows_ref]
    # the victim alone (an engine takes the two workers holding its proxy), in one retried phase each
    assert [r["faults/retried_phases"] for r in rows] == [1, 1, 1, 0]
    assert [r["faults/actor_restarts"] for r in rows] == [1, 4, 5, 5]
    assert [r["reward/episode_total_mean"] for r in rows] == [r["reward/episode_total_mean"] for r in rows_ref]
    adapter = _adapter(out)
    assert adapter.keys() == adapter_ref.keys()
    for key, value in adapter.items():  # each batch applied once
        torch.testing.assert_close(value, adapter_ref[key], rtol=0, atol=0)


@pytest.mark.slow
def test_after_max_actor_restarts_the_run_stops_with_a_checkpoint(ray_session, tmp_path, tmp_path_factory):
    """The learner killed in step 4 of a run checkpointed every 2 steps: the rebuilt learner is restored (the
    state of step 2, the update of step 3 replayed) before the run stops, so step 3 is checkpointed, and holds
    the learner's state of a run nobody killed at step 3, bit for bit: the adapter, the optimizer's moments, the
    scheduler (what a resume starts from; test_resume shows that a resume from a checkpoint continues exactly)."""
    cls = type("K", (KillingTrainer,), {"kills": {3: "learner"}})
    with pytest.raises(SystemExit, match=r"max_actor_restarts=0.*checkpoint of step 3"):
        _train(compose(*RAY_RUN, "max_actor_restarts=0", "save_every=2"), tmp_path, cls)
    ref = _reference(str(tmp_path_factory.getbasetemp()), (*RAY_RUN, "max_steps=3"))
    ckpt, ckpt_ref = (out / "checkpoints" / "step_000003" for out in (tmp_path, ref))
    torch.testing.assert_close(torch.load(ckpt / "learner.pt"), torch.load(ckpt_ref / "learner.pt"), rtol=0, atol=0)
    torch.testing.assert_close(_adapter(tmp_path, 3), _adapter(ref, 3), rtol=0, atol=0)
    assert json.loads((ckpt / "trainer.json").read_text())["step"] == 3


def test_adapter_folders_stay_bounded(tmp_path):
    cfg = compose("+recipe=tiny", "rollout.placement=local", "max_steps=12", "save_every=100", "env.max_steps=3",
                  "rollout.group_size=2", "rollout.functions_per_step=1")
    rows = _train(cfg, tmp_path)
    assert len(rows) == 12
    assert [r["step"] for r in rows if "sync/checked_version" in r] == [1, 10]  # sync_check_every (10)
    assert sorted(p.name for p in (tmp_path / "adapters").iterdir()) == ["v000011", "v000012"]
    # the learner's state is written at the checkpoint cadence (here the last step's only), not each step
    assert sorted(p.name for p in (tmp_path / "learner").iterdir()) == ["state_v000012.pt"]


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
           "rollout.functions_per_step=1", "sync_check_every=1")
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


# the watchdog at test scale: a phase past 3 x its slowest (and 4 s) is a stall, at twice that its piece is dead
WATCHED = ("watchdog.stall_factor=3", "watchdog.min_stall_s=4")


class StoppingTrainer(Trainer):
    """SIGSTOPs one piece's process in step `at` (0-based): the engine host as the step's rollout starts
    (lockstep), or rollout worker 1 as the next step's rollout is sent ahead (the off-policy pipeline). The
    process stays alive, Ray records it alive: only the watchdog can tell it hangs."""

    victim, at = "", 2

    def _stop(self, placed) -> None:
        if self.step == self.at and not getattr(self, "stopped", None):
            self.stopped = placed.pid(), placed.name
            os.kill(self.stopped[0], signal.SIGSTOP)

    def rollout(self, groups, **kwargs):
        if self.victim == "engine":
            self._stop(self.pieces.engines.hosts()[0])
        return super().rollout(groups, **kwargs)

    def launch(self, groups, *, step=None, **kwargs):
        launched = super().launch(groups, step=step, **kwargs)
        if self.victim == "worker" and step == self.at + 1:
            self._stop(self.pieces.workers[1])
        return launched


def _stopped_run(cfg, out: Path, victim: str, caplog) -> tuple[list[dict], int, str, float]:
    """The run's rows, the stopped process and piece, and the run's seconds. The stopped process must be gone
    once the run ends (Ray kills it at the watchdog's word); it is SIGCONTed if not, so that no test leaves a
    stopped process behind."""
    trainer = type("S", (StoppingTrainer,), {"victim": victim})(cfg, out)
    t0 = time.monotonic()
    try:
        with caplog.at_level("WARNING", logger="aac.train"):
            trainer.run()
    finally:
        trainer.close()
        pid, name = getattr(trainer, "stopped", (None, ""))
        try:
            _gone([pid] if pid else [])
        finally:
            if pid and os.path.exists(f"/proc/{pid}"):
                os.kill(pid, signal.SIGCONT)
    assert pid is not None
    return read(out / "metrics.jsonl"), pid, name, time.monotonic() - t0


@pytest.mark.slow
@pytest.mark.parametrize("victim, run", [("engine", RAY_RUN), ("worker", OFF_POLICY)], ids=["lockstep", "off_policy"])
def test_a_stopped_piece_is_found_rebuilt_and_the_run_matches_an_unstopped_one(victim, run, ray_session, caplog,
                                                                               tmp_path_factory):
    """A SIGSTOPped piece (the engine in lockstep, a rollout worker whose rollout was sent ahead under the
    pipeline, as issue 48 stopped one) is named in the log, killed at twice the stall limit and rebuilt; the
    run ends all its steps with the data, rewards and adapter of a run nobody stopped."""
    rows_ref, adapter_ref = _unkilled(str(tmp_path_factory.getbasetemp()), run)
    out = tmp_path_factory.mktemp(f"stopped_{victim}")
    rows, pid, name, seconds = _stopped_run(compose(*run, *WATCHED), out, victim, caplog)
    print(f"{victim} stopped: run of {STEPS} steps in {seconds:.0f}s")
    warned = [r.getMessage() for r in caplog.records if r.getMessage().startswith("watchdog:")]
    assert any(f"{name} (pid {pid}) does not answer" in w for w in warned), warned
    assert any(f"treating {name} (pid {pid}) as dead" in w for w in warned), warned
    assert [r["step"] for r in rows] == list(range(1, STEPS + 1))
    assert [r["uids"] for r in rows] == [r["uids"] for r in rows_ref]
    assert [r["reward/episode_total_mean"] for r in rows] == [r["reward/episode_total_mean"] for r in rows_ref]
    # the engine takes the two workers holding its proxy with it (more only if the loaded machine stalls a phase)
    assert rows[-1]["faults/actor_restarts"] >= (3 if victim == "engine" else 1)
    for key, value in _adapter(out).items():
        torch.testing.assert_close(value, adapter_ref[key], rtol=0, atol=0)


@pytest.mark.slow
def test_watchdog_settings_set_when_a_silent_piece_is_logged_and_when_it_is_killed(ray_session, caplog):
    """One real piece, a phase calling it: its past runs and the two settings bound the wait. A piece stopped
    3 s is left to finish under min_stall_s=30; one stopped 5.5 s is logged, not killed, under stall_factor=1.5
    after a 1.6 s run (limit 2.4 s, above min_stall_s=2: logged once its ping went unanswered for 2.4 s, killed
    only a limit later, at ~7 s); killed at once past its limits under min_stall_s=1, its call failing as at a
    death (for the supervisor to rebuild it)."""
    import re
    import threading
    from types import SimpleNamespace

    import ray

    from aac.config import WatchdogConfig
    from aac.placement import Placed
    from aac.training.watchdog import Watchdog

    class Piece:  # defined here: Ray ships it by value
        def wait(self, seconds):
            time.sleep(seconds)
            return seconds

    def resume(pid: int) -> None:
        if os.path.exists(f"/proc/{pid}"):
            os.kill(pid, signal.SIGCONT)

    def stopped_for(piece, seconds: float) -> None:
        pid = piece.pid()
        os.kill(pid, signal.SIGSTOP)
        threading.Timer(seconds, resume, (pid,)).start()

    def watch(piece, **settings) -> Watchdog:
        return Watchdog(SimpleNamespace(use_ray=True, pieces=lambda: [piece]), WatchdogConfig(**settings))

    pieces = [Placed(Piece, use_ray=True, name=f"piece{i}") for i in range(3)]
    try:
        with caplog.at_level("WARNING", logger="aac.train"):
            patient = watch(pieces[0], stall_factor=5, min_stall_s=30)
            stopped_for(pieces[0], 3.0)
            assert patient("wait", lambda: pieces[0].wait(0.1)) == 0.1 and not caplog.records

            factor = watch(pieces[1], stall_factor=1.5, min_stall_s=2)
            factor("wait", lambda: pieces[1].wait(1.6))
            stopped_for(pieces[1], 5.5)
            assert factor("wait", lambda: pieces[1].wait(0.1)) == 0.1 and factor.killed == 0
            assert len(caplog.records) == 1 and re.match(
                r"watchdog: the wait has waited \d+s, past 1.5 x its slowest so far \([\d.]+s\) and min_stall_s \(2s\): "
                r"piece1 \(pid \d+\) does not answer; calls in flight: piece1.wait", caplog.records[0].getMessage())
            caplog.clear()

            quick = watch(pieces[2], stall_factor=5, min_stall_s=1)
            stopped_for(pieces[2], 60.0)
            t0 = time.monotonic()
            with pytest.raises(ray.exceptions.RayActorError):
                quick("wait", lambda: pieces[2].wait(0.1))
            assert quick.killed == 1 and time.monotonic() - t0 < 15 and not pieces[2].alive()
            assert "treating piece2 (pid" in caplog.records[-1].getMessage()
    finally:
        for p in pieces:
            p.kill()
