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


@pytest.fixture
def ray_head(monkeypatch):
    """A local Ray head of this test's own (`ray start --head --block` in a process group of its own,
    private temp dir, free port); stopped by killing that group, never with `ray stop`. Token auth off
    on both sides: the head and this driver would otherwise each pick their own default."""
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
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


@pytest.mark.slow
def test_a_run_joins_an_existing_cluster_and_leaves_it_running(ray_head, tmp_path, caplog):
    import ray

    address, head = ray_head
    ray.shutdown()
    daemons = _ray_processes(psutil.Process(head.pid))
    trainer = None
    try:
        with caplog.at_level(logging.INFO, logger="aac"):
            trainer = Trainer(compose(*TINY_RAY, "max_steps=1", f"ray.address={address}"), tmp_path)
            # no Ray of the run's own: this process's Ray daemons are the head's
            assert set(_ray_processes(psutil.Process())) == set(daemons)
            trainer.run()
        nodes = {n["NodeID"] for n in ray.nodes() if n["Alive"]}
        assert len(nodes) == 1
        where = {p.name: p.where() for p in trainer.pieces.pieces()}
    finally:
        if trainer is not None:
            trainer.close()
        ray.shutdown()
    assert len(read(tmp_path / "metrics.jsonl")) == 1
    # every piece runs on the head's node, and the placement table says so at start
    assert {w["node"] for w in where.values()} == nodes
    assert set(where) == {"engine:tiny_qwen3", "learner", "rollout0"}
    table = next(r.getMessage() for r in caplog.records if r.getMessage().startswith("placement:"))
    for name, w in where.items():
        assert f"{name:<24} node {w['ip']} ({w['node'][:8]}) GPUs - pid {w['pid']}" in table
    assert any("joined the cluster at " + address in r.getMessage() for r in caplog.records)
    # the cluster outlives the run that joined it
    assert head.poll() is None and all(p.is_running() for p in daemons)


@pytest.mark.parametrize("overrides, error", [
    (("rollout.placement=local", "ray.address=127.0.0.1:6379"), "ray.address joins a Ray cluster: it needs rollout.placement=ray"),
    (("rollout.placement=local", "rollout.num_engines=2"), "rollout.num_engines=2 places pieces in Ray actors"),
    (("rollout.placement=ray", "rollout.tensor_parallel_size=2"), "rollout.tensor_parallel_size=2 needs rollout.engine=vllm"),
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

    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
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
    # 6 engine replicas + the learner: one GPU each, none shared
    asks = gpu_asks(compose("+recipe=qwen3_8b", "rollout.num_engines=6"))
    check_gpus(asks, cluster_gpus())
    placed, where = _place(asks)
    assert sorted(where) == ["engine replica 0", "engine replica 1", "engine replica 2", "engine replica 3",
                             "engine replica 4", "engine replica 5", "learner"]
    assert all(len(w["gpus"]) == 1 for w in where.values())
    assert len({(w["node"], w["gpus"][0]) for w in where.values()}) == 7  # seven distinct GPUs
    assert ray.available_resources().get("GPU", 0) == 1
    for p in placed:
        p.kill()
    # tensor parallel 2: each replica's two GPUs reserved together on one node
    asks = gpu_asks(compose("+recipe=qwen3_8b", "rollout.num_engines=3", "rollout.tensor_parallel_size=2"))
    check_gpus(asks, cluster_gpus())
    placed, where = _place(asks)
    for i in range(3):
        assert where[f"engine replica {i}"]["gpus"] == ["2 reserved"]
        assert len(where[f"engine replica {i}"]["group_nodes"]) == 1
    assert ray.available_resources().get("GPU", 0) == 1
    for p in placed:
        p.kill()
    deadline = time.time() + 30  # groups released with their pieces (Ray frees them asynchronously)
    while ray.available_resources().get("GPU", 0) < 8 and time.time() < deadline:
        time.sleep(0.2)
    assert ray.available_resources().get("GPU", 0) == 8
    # more than the cluster has: one line naming the keys, before anything is placed
    with pytest.raises(ConfigError, match=r"^the run asks for 9 GPUs .*rollout.num_engines.* has 8$"):
        check_gpus(gpu_asks(compose("+recipe=qwen3_8b", "rollout.num_engines=8")), cluster_gpus())
    with pytest.raises(ConfigError, match=r"^rollout.tensor_parallel_size=6 reserves 6 GPUs on one node but the "
                                          r"largest node of the Ray cluster has 4$"):
        check_gpus(gpu_asks(compose("+recipe=qwen3_8b", "rollout.tensor_parallel_size=6")), cluster_gpus())
