"""The learner's memory model (aac/learner/memory.py) against the peak an update holds, measured tensor by
tensor on the CPU (aac/learner/tensor_peak.py), at small shapes with random weights.

Tolerance: the prediction lies within [0.9, 1.45] x the measured peak (it is meant to err high: it sums
what autograd keeps at the highest point of backward, where the measured peak may fall a tensor short of
that). benchmarks/memory_model_check.py runs these rows and larger ones (a 2-layer slice at Qwen3-8B's
width); benchmarks/RESULTS.md, "Learner memory model"."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from memory_model_check import NARROW, TINY, measure  # noqa: E402

from aac.config import LearnerConfig, compose  # noqa: E402
from aac.learner.memory import Batch, Dims, GiB, MemoryFitError, check_fit, model_dims, predict  # noqa: E402
from aac.models import QWEN3_8B  # noqa: E402


@pytest.mark.parametrize("shape, dtype, overrides", [
    (TINY, "float32", {"gradient_checkpointing": True}),
    (NARROW, "bfloat16", {}),
])
def test_the_prediction_is_within_its_tolerance_of_the_measured_peak(shape, dtype, overrides):
    r = measure(shape, dtype, tokens=128, seq_len=64, **overrides)
    assert 0.9 <= r["ratio"] <= 1.45, r


def test_checkpointing_kernel_and_zero_move_the_prediction_as_the_update_holds_them():
    dims = model_dims("qwen3_8b")
    assert dims == Dims(QWEN3_8B.vocab_size, 4096, 12288, 36, 32, 8, 128)
    cfg = LearnerConfig(dtype="bfloat16", lora_r=16, gradient_checkpointing=True, micro_batch_tokens=32768, zero_stage=2)
    batch = Batch(32768, 4 * 32768, 32768 * 4096)
    on_gpu, on_cpu = predict(dims, cfg, batch=batch), predict(dims, cfg, device="cpu", batch=batch)
    assert on_gpu["weights"] == pytest.approx(16.4e9, rel=0.01)  # Qwen3-8B's 8.19B parameters in bf16
    assert on_gpu["lora_adam"] == 16 * dims.lora_params(16) and dims.lora_params(16) == pytest.approx(43.6e6, rel=0.01)
    # CUDA's flex kernel keeps the row's keys and values, the CPU's segments kernel those gathered along
    # each segment's path (4x here); flex's block mask replaces the segments' masks and the dense one
    assert on_cpu["backward_peak"] - on_gpu["backward_peak"] == 2 * 1024 * 2 * (batch.path_tokens - 32768)
    assert on_cpu["hidden_and_masks"] - on_gpu["hidden_and_masks"] == batch.mask_entries * 3 + 32768 ** 2
    assert on_gpu["zero_buffers"] == 4 * dims.lora_params(16)  # ZeRO 2: its float32 copy of the adapter
    off = predict(dims, LearnerConfig(**{**vars(cfg), "gradient_checkpointing": False}), batch=batch)
    layer = on_gpu["backward_peak"] - 32768 * (2 * 12288 * 4 + 2 * 4096 * 4)  # one layer's, less backward's gradients
    assert off["layers_kept"] == 36 * layer and off["checkpoints"] == 0
    assert off["total"] > 2.5 * on_gpu["total"]


def test_zero_buffers_are_what_deepspeed_adds_to_the_torch_learner():
    """The bytes a one-rank DeepSpeed learner holds at its highest point, from its construction through two
    updates, beyond the plain torch learner's, at ZeRO 2: the predicted `zero_buffers` (its gradient bucket
    sized to the adapter: DeepSpeed's default would add 1.9 GB). benchmarks/memory_model_check.py also
    measures stages 0 (nothing added) and 1."""
    # in a process of its own: DeepSpeed keeps the groups of the first process group it met in module state, and an
    # earlier test of this session may have replaced that group (tests/test_learner_collective.py)
    script = ("import sys; sys.path.insert(0, 'benchmarks'); from memory_model_check import TINY, zero_overhead; "
              "print(zero_overhead(TINY, stages=(2,))[2])")
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    added = int(done.stdout.split()[-1])
    predicted = predict(Dims.of_shape(TINY), LearnerConfig(backend="deepspeed", zero_stage=2, lora_r=16))["zero_buffers"]
    assert predicted == 4 * Dims.of_shape(TINY).lora_params(16)
    assert 0.95 * predicted <= added <= 1.05 * predicted, (added, predicted)


def test_the_flagship_fits_an_h100_and_four_times_its_micro_batch_does_not():
    cfg = compose("+recipe=qwen3_8b")
    h100 = ("cuda", int(79.6 * GiB))
    assert 30 * GiB < check_fit(cfg, h100)["total"] < 0.9 * h100[1]
    with pytest.raises(MemoryFitError, match=r"^the learner is predicted to need \d+\.\d GiB at "
                                             r"learner.micro_batch_tokens=131072 .* but its cuda has 79.6 GiB"):
        check_fit(compose("+recipe=qwen3_8b", "learner.micro_batch_tokens=131072"), h100)
