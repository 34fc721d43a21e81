"""A run that asks for GPUs this machine cannot give stops first, in one line (aac/hardware.py), and so
does a learner setting the memory model predicts not to fit (aac/learner/memory.py)."""

from __future__ import annotations

import pytest

from aac.config import compose
from aac.hardware import HardwareError, Machine, check_hardware, check_machine, gpus_asked

CUDA13 = dict(torch_version="2.13.0+cu130", torch_cuda="13.0")


@pytest.mark.parametrize("machine, error", [
    (Machine("2.13.0+cpu", None, None, False, 0), r"but torch 2\.13\.0\+cpu is a CPU build: `make install-gpu`"),
    (Machine(**CUDA13, driver_cuda=None, cuda_available=False, gpus=0), r"no NVIDIA driver is loaded"),
    (Machine(**CUDA13, driver_cuda=(12, 4), cuda_available=False, gpus=0),
     r"the NVIDIA driver supports CUDA 12\.4 and torch 2\.13\.0\+cu130 is built for CUDA 13\.0: update the driver "
     r"to R580 or newer$"),
    (Machine(**CUDA13, driver_cuda=(13, 0), cuda_available=False, gpus=0), r"torch cannot start CUDA"),
    (Machine(**CUDA13, driver_cuda=(13, 0), cuda_available=True, gpus=1), r"but this machine shows 1 "),
])
def test_each_missing_piece_is_named_in_one_line(machine, error):
    cfg = compose("+recipe=qwen3_8b")
    wanted, asks = gpus_asked(cfg)
    assert (wanted, asks) == (2, "engine replica 0 1, learner rank 0 1")
    with pytest.raises(HardwareError, match=r"^the run asks for 2 GPUs \(engine replica 0 1, learner rank 0 1\) " + ".*" + error) as e:
        check_machine(wanted, asks, machine)
    assert "\n" not in str(e.value)
    check_machine(2, asks, Machine(**CUDA13, driver_cuda=(13, 1), cuda_available=True, gpus=2))  # enough: no error


def test_a_cpu_recipe_or_a_joined_cluster_is_not_checked_here():
    cpu = Machine("2.13.0+cpu", None, None, False, 0)
    check_hardware(compose("+recipe=tiny"), cpu)  # asks for no GPU
    check_hardware(compose("+recipe=qwen3_8b", "ray.address=10.0.0.1:6379"), cpu)  # the cluster's GPUs, not ours
    with pytest.raises(HardwareError):
        check_hardware(compose("+recipe=qwen3_8b"), cpu)


def test_train_on_this_cpu_machine_refuses_the_gpu_recipe_first_in_one_line(run_module, tmp_path):
    """The recipe's own data is a Hub dataset this machine cannot fetch: the hardware line comes first."""
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    r = run_module("aac.train", "+recipe=qwen3_8b", f"out_dir={tmp_path / 'run'}", timeout=240)
    assert r.returncode != 0
    lines = r.stderr.strip().splitlines()
    assert lines[-1].startswith("aac: config error: the run asks for 2 GPUs (engine replica 0 1, learner rank 0 1) but torch ")
    assert "is a CPU build: `make install-gpu`" in lines[-1]
    assert "Traceback" not in r.stderr and "PAU-Benchmark" not in r.stderr + r.stdout  # nothing loaded, no Ray
    assert not (tmp_path / "run" / "metrics.jsonl").exists()


def test_a_micro_batch_predicted_not_to_fit_is_refused_before_anything_starts(run_module, tmp_path):
    # tiny_qwen3 at 2^22 tokens a micro-batch: the dense [T, T] causal mask alone is 16 TiB
    r = run_module("aac.train", "+recipe=tiny", "learner.micro_batch_tokens=4194304", f"out_dir={tmp_path / 'run'}",
                   timeout=240)
    assert r.returncode != 0
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("aac: config error: the learner is predicted to need ") and "learner.micro_batch_tokens=4194304" in last
    assert "lower learner.micro_batch_tokens" in last and "Traceback" not in r.stderr
