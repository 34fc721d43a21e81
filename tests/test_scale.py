"""More GPUs, more nodes: a run joins a Ray cluster it did not start (and leaves it running), and says
which piece runs on which node and GPU."""

from __future__ import annotations

import logging
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
import pytest
from doubles import GenerateOnly

from aac.config import compose
from aac.metrics import read
from aac.training import Trainer

RAY_BIN = str(Path(sys.executable).with_name("ray"))
TINY_RAY = ("+recipe=tiny", "rollout.placement=ray", "rollout.group_size=2", "rollout.functions_per_step=1",
            "env.max_steps=3", "save_every=100", "rollout.cpu_threads=1")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _ray_processes(root: psutil.Process) -> list[psutil.Process]:
    """Ray's daemons among `root`'s descendants (a run that started its own Ray would own a gcs_server)."""
    return [p for p in root.children(recursive=True) if p.name() in ("gcs_server", "raylet")]


def _one_auth_mode(monkeypatch) -> None:
    """The auth mode the nodes started here get is the one this process already runs with: Ray keeps
    the mode of its first `ray.init` for the life of the process (an earlier test's private Ray sets
    RAY_AUTH_MODE=token), and a driver whose mode differs from its cluster's sees every actor cancelled.
    No Ray yet in this process: token auth off on both sides, which would otherwise pick their own."""
    monkeypatch.setenv("RAY_AUTH_MODE", os.environ.get("RAY_AUTH_MODE", "disabled"))


@pytest.fixture
def ray_head(monkeypatch):
    """A local Ray head of this test's own (`ray start --head --block` in a process group of its own,
    private temp dir, free port); stopped by killing that group, never with `ray stop`. The head and
    this driver share one auth mode (`_one_auth_mode`)."""
    _one_auth_mode(monkeypatch)
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    port = _free_port()
    tmp = tempfile.mkdtemp(prefix="rayh", dir="/tmp")  # unix socket paths < 108 B
    head = subprocess.Popen([RAY_BIN, "start", "--head", "--block", f"--port={port}", f"--temp-dir={tmp}",
                             "--num-cpus=2", "--include-dashboard=false", "--disable-usage-stats"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.time() + 60
        while {p.name() for p in _ray_processes(psutil.Process(head.pid))} != {"gcs_server", "raylet"}:
            assert head.poll() is None and time.time() < deadline, "ray start --head did not come up"
            time.sleep(0.2)
        yield f"127.0.0.1:{port}", head
    finally:
        os.killpg(head.pid, signal.SIGKILL)
        head.wait(timeout=30)


class KillingTrainer(Trainer):
    """SIGKILLs learner rank 1 before step 1's update (rank 0 then waits for it in the group's all-reduce)
    and engine replica 1 before step 2's."""

    def samples(self, batch, advantages):
        victims = {0: self.learner.members()[1], 1: self.pieces.engines.hosts()[1]}
        if self.step in victims and self.step not in getattr(self, "killed", set()):
            self.killed = {*getattr(self, "killed", set()), self.step}
            os.kill(victims[self.step].pid(), signal.SIGKILL)
        return super().samples(batch, advantages)


@pytest.mark.slow
def test_a_run_joins_a_cluster_and_spreads_episodes_over_engine_replicas(ray_head, tmp_path, caplog):
    """The tiny recipe with two engine replicas and two learner ranks, off-policy by one step, on a cluster
    of the test's own: the run starts no Ray, says where each piece runs, spreads episodes over both replicas, loads each version
    into both, and survives one being killed; the cluster is still up afterwards."""
    import ray

    address, head = ray_head
    ray.shutdown()
    gcs = [p for p in _ray_processes(psutil.Process(head.pid)) if p.name() == "gcs_server"]
    trainer = None
    try:
        with caplog.at_level(logging.INFO, logger="aac"):
            trainer = KillingTrainer(compose(*TINY_RAY, "max_steps=2", "rollout.num_engines=2", "learner.num_workers=2",
                                             "rollout.max_off_policy_steps=1", f"ray.address={address}"), tmp_path)
            # no Ray of the run's own: the one gcs_server under this process is the head's
            assert [p for p in _ray_processes(psutil.Process()) if p.name() == "gcs_server"] == gcs
            trainer.run()
        nodes = {n["NodeID"] for n in ray.nodes() if n["Alive"]}
        hosts = trainer.pieces.engines.hosts()
        served = [ray.get(h.actor.adapter_version.remote("actor")) for h in hosts]
        where = {p.name: p.where() for p in trainer.pieces.pieces()}
    finally:
        if trainer is not None:
            trainer.close()
        ray.shutdown()
    rows = read(tmp_path / "metrics.jsonl")
    assert len(rows) == 2 and served == [2, 2]  # every replica serves the last version
    assert [r["offpolicy/lag"] for r in rows] == [0.0, 1.0]  # step 2 was played while step 1 updated
    for row in rows:  # the step's 2 episodes, one per replica (least load), turns checked per version
        assert row["rollout/episodes_engine0"] == row["rollout/episodes_engine1"] == 1
    # the learner group (rebuilt whole, its state restored), then the killed replica and the worker holding
    # its proxy; one phase retried in each step
    assert [r["faults/actor_restarts"] for r in rows] == [1, 3] and [r["faults/retried_phases"] for r in rows] == [1, 1]
    # every piece runs on the head's node, and the placement table says so at start
    assert {w["node"] for w in where.values()} == nodes
    assert set(where) == {"engine:tiny_qwen3#0", "engine:tiny_qwen3#1", "learner#0", "learner#1", "rollout0"}
    table = next(r.getMessage() for r in caplog.records if r.getMessage().startswith("placement:"))
    for name in ("engine:tiny_qwen3#0",):  # (the others were rebuilt since)
        w = where[name]
        assert f"{name:<24} node {w['ip']} ({w['node'][:8]}) GPUs - pid {w['pid']}" in table
    assert any("joined the cluster at " + address in r.getMessage() for r in caplog.records)
    # the cluster outlives the run that joined it
    assert head.poll() is None and gcs[0].is_running()


@pytest.mark.parametrize("overrides, error", [
    (("rollout.placement=local", "ray.address=127.0.0.1:6379"), "ray.address joins a Ray cluster: it needs rollout.placement=ray"),
    (("rollout.placement=local", "rollout.num_engines=2"), "rollout.num_engines=2 places pieces in Ray actors"),
    (("rollout.placement=ray", "rollout.tensor_parallel_size=2"), "rollout.tensor_parallel_size=2 needs rollout.engine=vllm"),
    (("rollout.placement=ray", "learner.num_workers=2", "learner.backend=deepspeed"),
     "learner.num_workers=2 needs learner.backend=torch"),
])
def test_scale_settings_that_cannot_work_fail_in_one_line(overrides, error):
    from aac.config import ConfigError

    with pytest.raises(ConfigError, match=error):
        compose("+recipe=tiny", *overrides)


@pytest.fixture
def fake_gpu_cluster(monkeypatch):
    """Two Ray nodes of 4 declared GPUs each (no real GPU), of this test's own."""
    import ray
    from ray.cluster_utils import Cluster

    _one_auth_mode(monkeypatch)
    monkeypatch.setenv("RAY_TMPDIR", tempfile.mkdtemp(prefix="rayc", dir="/tmp"))  # unix socket paths < 108 B
    ray.shutdown()
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "num_gpus": 4})
    cluster.add_node(num_cpus=1, num_gpus=4)
    try:
        ray.init(address=cluster.address)
        cluster.wait_for_nodes()
        yield cluster
    finally:
        ray.shutdown()
        cluster.shutdown()


def _place(asks):
    """Light actors asking exactly what each piece of the plan asks (the engines and learner themselves
    would start vLLM / DeepSpeed), and where Ray put them."""
    from aac.placement import Placed

    class Piece:  # defined here: Ray ships it by value
        pass

    placed = [Placed(Piece, use_ray=True, name=a.name, num_gpus=a.gpus, tensor_parallel=a.shards)
              for a in asks if a.total]
    return placed, {p.name: p.where() for p in placed}


@pytest.mark.slow
def test_qwen3_8b_on_8_fake_gpus_gets_the_placement_it_asks_for(fake_gpu_cluster):
    import ray

    from aac.config import ConfigError
    from aac.placement import check_gpus, cluster_gpus, gpu_asks

    assert cluster_gpus() == [4.0, 4.0]
    # 6 engine replicas + 2 learner ranks: one GPU each, none shared
    asks = gpu_asks(compose("+recipe=qwen3_8b", "rollout.num_engines=6", "learner.num_workers=2",
                            "learner.backend=torch"))
    check_gpus(asks, cluster_gpus())
    placed, where = _place(asks)
    assert sorted(where) == [*(f"engine replica {i}" for i in range(6)), "learner rank 0", "learner rank 1"]
    assert all(len(w["gpus"]) == 1 for w in where.values())
    assert len({(w["node"], w["gpus"][0]) for w in where.values()}) == 8  # eight distinct GPUs
    assert ray.available_resources().get("GPU", 0) == 0
    for p in placed:
        p.kill()
    # tensor parallel 2: each replica's host holds its two GPUs, on one node, and sees exactly them
    # (vLLM's shard processes, started by the host, inherit its CUDA_VISIBLE_DEVICES)
    asks = gpu_asks(compose("+recipe=qwen3_8b", "rollout.num_engines=3", "rollout.tensor_parallel_size=2"))
    check_gpus(asks, cluster_gpus())
    placed, where = _place(asks)
    for i, host in enumerate(placed[:3]):
        gpus = where[f"engine replica {i}"]["gpus"]
        assert len(set(gpus)) == 2
        assert ray.get(host.actor.__ray_call__.remote(lambda _: os.environ["CUDA_VISIBLE_DEVICES"])) == ",".join(gpus)
    assert len({(w["node"], g) for w in where.values() for g in w["gpus"]}) == 7  # none shared
    assert ray.available_resources().get("GPU", 0) == 1
    for p in placed:
        p.kill()
    deadline = time.time() + 30  # GPUs released with their pieces (Ray frees them asynchronously)
    while ray.available_resources().get("GPU", 0) < 8 and time.time() < deadline:
        time.sleep(0.2)
    assert ray.available_resources().get("GPU", 0) == 8
    # more than the cluster has: one line naming the keys, before anything is placed
    with pytest.raises(ConfigError, match=r"^the run asks for 9 GPUs .*rollout.num_engines.* has 8$"):
        check_gpus(gpu_asks(compose("+recipe=qwen3_8b", "rollout.num_engines=7", "learner.num_workers=2",
                                    "learner.backend=torch")), cluster_gpus())
    with pytest.raises(ConfigError, match=r"^rollout.tensor_parallel_size=6 reserves 6 GPUs on one node but the "
                                          r"largest node of the Ray cluster has 4$"):
        check_gpus(gpu_asks(compose("+recipe=qwen3_8b", "rollout.tensor_parallel_size=6")), cluster_gpus())


def test_a_tensor_parallel_engine_runs_its_shards_as_its_own_processes(monkeypatch):
    """Its shards are processes of the engine (vLLM's mp executor), on the GPUs the host sees, not Ray
    actors asking Ray for GPUs the host already holds."""
    from aac.engines import factory

    monkeypatch.setattr(factory, "make_engine", lambda kind, model, **kwargs: kwargs)
    cfg = compose("+recipe=qwen3_8b", "rollout.tensor_parallel_size=2")
    kwargs = factory.engine_from_config(cfg.model, cfg.rollout, tensor_parallel_size=2)
    assert kwargs["distributed_executor_backend"] == "mp" and kwargs["tensor_parallel_size"] == 2


class Echo(GenerateOnly):
    """Answers each chat with its text, and keeps what it was asked."""

    def __init__(self):
        super().__init__()
        self.seen = []

    def generate(self, requests):
        from aac.engines import GenResult

        self.seen += [r.messages[0]["content"] for r in requests]
        return [GenResult(r.messages[0]["content"], [], [], None, "stop", None, None) for r in requests]


def test_replicas_route_new_episodes_by_load_and_keep_an_episodes_turns_on_one_replica():
    import pickle

    from aac.engines import GenRequest, Sampling
    from aac.engines.replicas import EngineReplicas

    def ask(text, episode, tokens=10):
        return GenRequest([{"role": "user", "content": text}], Sampling(max_tokens=tokens), episode=episode)

    def collect_all(tickets):  # collect returns what is done first; the driver calls it again
        out = {}
        while len(out) < len(tickets):
            out.update(engine.collect([t for t in tickets if t not in out]))
        return out

    a, b = Echo(), Echo()
    engine = EngineReplicas([a, b])
    # new episodes to the least loaded replica (what each may still generate): a, b, then a again
    tickets = engine.submit([ask("A1", "A"), ask("B1", "B"), ask("C1", "C")])
    done = collect_all(tickets)
    assert [done[t].text for t in tickets] == ["A1", "B1", "C1"] and [done[t].replica for t in tickets] == [0, 1, 0]
    # a long request loads replica 1; a new episode goes to 0, an old one's turn stays where it began
    tickets = engine.submit([ask("D1", "D", tokens=1000), ask("E1", "E"), ask("B2", "B")])
    assert {r.text: r.replica for r in collect_all(tickets).values()} == {"D1": 0, "E1": 1, "B2": 1}
    assert a.seen == ["A1", "C1", "D1"] and b.seen == ["B1", "E1", "B2"]
    # generate (the critic's calls) spreads too, results in request order
    assert [r.text for r in engine.generate([ask(str(i), None) for i in range(4)])] == ["0", "1", "2", "3"]
    assert len(a.seen) == len(b.seen) == 5
    copy = pickle.loads(pickle.dumps(engine))  # as Ray ships it to a rollout worker: its own routing state
    assert copy.replicas()[0].seen == a.seen and copy.collect([]) == []


@pytest.mark.slow
def test_two_learner_ranks_give_one_ranks_loss_and_adapter(tiny_model_path, monkeypatch):
    """Two torch learners in Ray actors, one gloo group, each on its token share of every mini-batch:
    the same loss and adapter as one learner on the whole batch (2 PPO mini-batches, so pi_old too)."""
    import ray
    import torch
    from test_learner import config, samples

    from aac.learner import Learner
    from aac.learner.learner import token_shards
    from aac.placement import LearnerRanks, start_ray

    assert token_shards([18, 33, 16, 32, 11], 2) == [[1, 2, 4], [0, 3]]  # 60 and 50 tokens
    cfg = config(lr=5e-2, ppo_minibatches=2, num_workers=2)
    batch = samples() * 2
    one = Learner(config(lr=5e-2, ppo_minibatches=2), tiny_model_path, seed=0)
    expected = [one.update(batch) for _ in range(2)]
    monkeypatch.setenv("RAY_TMPDIR", tempfile.mkdtemp(prefix="ray", dir="/tmp"))  # unix socket paths < 108 B
    ray.shutdown()
    start_ray(num_cpus=2, threads=1)
    try:
        ranks = LearnerRanks(Learner, cfg, tiny_model_path, 0, num_workers=2, name="learner")
        got = [ranks.update(batch) for _ in range(2)]
        adapters = [r.state_dict()["adapter"] for r in ranks.members()]
        ranks.kill()
    finally:
        ray.shutdown()
    for e, g in zip(expected, got):
        for key in ("loss", "pg_loss", "clip_frac", "tokens", "loss_tokens", "grad_norm", "sampling/logprob_gap"):
            assert g[key] == pytest.approx(e[key], rel=1e-4, abs=1e-6), key
    assert expected[1]["clip_frac"] > 0  # the second mini-batch's ratio moved: pi_old mattered
    ours = {k: v.detach().cpu() for k, v in __import__("peft").get_peft_model_state_dict(one.policy).items()}
    for key, value in ours.items():
        torch.testing.assert_close(adapters[0][key], value, rtol=1e-3, atol=1e-5)  # float32 sums in another order
        torch.testing.assert_close(adapters[1][key], adapters[0][key], rtol=0, atol=0)  # the ranks agree
