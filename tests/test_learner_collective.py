"""Every reduction of the learner ranks goes through `aac.learner.collective.all_reduce`, on the group's
device: NCCL takes CUDA tensors only, so a gloo group made to behave like NCCL (its backend reads nccl, its
collective rejects a CPU tensor) covers the path on CPU."""

from __future__ import annotations

import pytest
import torch
import torch.distributed as dist
from torch._subclasses.fake_tensor import FakeTensorMode

from aac.learner import collective
from aac.learner.backends import free_port


@pytest.fixture
def gloo_group():
    if dist.is_initialized():  # an in-process DeepSpeed learner of an earlier test left its group: ours replaces it
        dist.destroy_process_group()
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{free_port()}", rank=0, world_size=1)
    try:
        yield
    finally:
        dist.destroy_process_group()


@pytest.fixture
def like_nccl(gloo_group, monkeypatch):
    """The gloo group reads as NCCL and refuses what NCCL refuses: a CPU tensor. The tensors it is handed
    on cuda:0 are fake (FakeTensorMode: no CUDA here), so it records their device and reduces nothing
    (one rank: a sum is the tensor itself)."""
    seen = []

    def all_reduce(tensor, op=dist.ReduceOp.SUM, group=None, async_op=False):
        if tensor.device.type == "cpu":
            raise RuntimeError("NCCL: no backend for a CPU tensor (NCCL reduces CUDA tensors only)")
        seen.append((tensor.device, tensor.dtype, op))

    monkeypatch.setattr(dist, "get_backend", lambda group=None: "nccl")
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(dist, "all_reduce", all_reduce)
    return seen


def test_a_cpu_tensor_goes_to_the_nccl_groups_device_and_comes_back(like_nccl):
    metrics = torch.tensor([1.5, 2.0], dtype=torch.float64)
    with pytest.raises(RuntimeError, match="NCCL"):  # what Learner._all_reduce did before: a CPU float64 tensor
        dist.all_reduce(metrics)
    with FakeTensorMode(allow_non_fake_inputs=True):
        out = collective.all_reduce(metrics, op=dist.ReduceOp.MAX)
    assert like_nccl == [(torch.device("cuda", 0), torch.float64, dist.ReduceOp.MAX)]
    assert out is metrics and metrics.device.type == "cpu" and metrics.tolist() == [1.5, 2.0]


def test_gloo_reduces_in_place_on_the_cpu(gloo_group):
    assert collective.group_device() == torch.device("cpu")
    t = torch.tensor([3.0, -1.0])
    assert collective.all_reduce(t) is t and t.tolist() == [3.0, -1.0]  # one rank: the sum is itself


def test_every_reduction_of_the_learner_goes_through_the_helper(tiny_model_path, gloo_group, monkeypatch):
    """`Learner._all_reduce` (gradients, loss metrics, the max weight) calls nothing but the helper."""
    from test_learner import config, samples

    from aac.learner import Learner
    from aac.learner import learner as learner_module

    learner = Learner(config(), tiny_model_path, seed=0)
    m = learner.compute_gradients(samples())
    calls = []
    monkeypatch.setattr(learner_module, "all_reduce", lambda t, op=dist.ReduceOp.SUM: calls.append((t.shape, op)) or t)
    monkeypatch.setattr(dist, "all_reduce", lambda *a, **k: pytest.fail("a reduction outside the helper"))
    out = learner._all_reduce(m)
    params = learner.backend.params
    assert [c[0] for c in calls[:len(params)]] == [p.shape for p in params]
    assert [c[1] for c in calls[len(params):]] == [dist.ReduceOp.SUM, dist.ReduceOp.MAX]
    assert out["loss"] == pytest.approx(m["loss"]) and out["tokens"] == m["tokens"]
