"""A CPU rehearsal of the flagship (`+recipe=qwen3_8b`): everything it does but CUDA. A tiny Qwen3 with
grouped-query heads (4 query / 2 KV, as Qwen3-8B's 32 / 8), the bf16 learner under DeepSpeed ZeRO-2 with
gradient checkpointing, lr 1e-6, Ray with two (fake) GPUs placing the engine and the learner apart, the
vLLM engine with its engine core in a process of its own, adapters synced and checked each step."""

from __future__ import annotations

import os
import tempfile

import pytest

from aac.config import compose
from aac.metrics import read
from aac.preflight.pieces import engine_report, inside
from aac.training import Trainer

FLAGSHIP_ON_CPU = ("+recipe=qwen3_8b", "model=tiny_qwen3_gqa", "env.data=builtin:humaneval", "env.limit=4",
                   "rollout.functions_per_step=1", "rollout.group_size=2", "rollout.max_tokens_per_turn=8",
                   "model.dtype=bfloat16", "env.max_steps=3", "max_steps=2", "rollout.vllm_in_process=false", "rollout.kv_cache_gb=1",
                   "critic.max_tokens=4", "rollout.cpu_threads=1", "logging.wandb_mode=disabled", "sync_check_every=1",
                   # a random model's replies all fail to parse alike: word budgets of 1 make their length
                   # terms differ, so advantages are not all zero and the update runs (forward and backward)
                   "rewards.tau_reason=1", "rewards.tau_reflect=1")


@pytest.mark.slow
def test_the_flagship_recipe_runs_on_cpu_with_its_shape_precision_and_placement(tmp_path):
    import psutil
    import ray
    import torch

    from aac.placement import start_ray

    if os.environ.get("ONEDNN_MAX_CPU_ISA", "").upper() == "AVX2" and torch.cpu._is_amx_tile_supported():
        # benchmarks/slow_machine.sh on a CPU with AMX: vLLM picks its bf16 kernels by the hardware's AMX, which
        # oneDNN, capped at AVX2, then refuses (the engine core dies); a real AVX2 machine has no AMX to pick
        pytest.skip("oneDNN capped at AVX2 on a CPU with AMX (the slow-machine emulation): vLLM's bf16 path cannot run")

    cfg = compose(*FLAGSHIP_ON_CPU)
    r, learner = cfg.rollout, cfg.learner
    assert (learner.dtype, learner.zero_stage, learner.gradient_checkpointing, learner.lr) == ("bfloat16", 0, True, 1e-6)
    assert (r.engine, r.placement, r.num_gpus, learner.num_gpus, cfg.model.dtype) == ("vllm", "ray", 1, 1, "bfloat16")
    assert (r.max_off_policy_steps, r.critic_overlap) == (1, True)  # the flagship's pipeline
    os.environ["RAY_TMPDIR"] = tempfile.mkdtemp(prefix="ray", dir="/tmp")  # unix socket paths < 108 B
    ray.shutdown()
    start_ray(num_cpus=2, num_gpus=2, threads=1)
    try:
        trainer = Trainer(cfg, tmp_path)
        try:
            trainer.run()
            (host,) = trainer.pieces.engines.hosts()  # one engine serves the actor and the critic
            titles = [" ".join(p.cmdline()) for p in psutil.Process(host.pid()).children(recursive=True)]
            assert any("EngineCore" in t for t in titles), titles  # vLLM's engine core in its own process

            def visible(actor):
                return ray.get(actor.__ray_call__.remote(lambda self: os.environ.get("CUDA_VISIBLE_DEVICES")))

            assert visible(host.actor) != visible(trainer.learner.actor)  # a GPU each
            kv = inside(host.actor, engine_report)["kv_cache"]  # what aac.preflight reports of the engine
            assert kv["tokens"] >= cfg.model.max_model_len and kv["gb"] > 0

            def learner_shape(lr):
                import torch

                c = lr.policy.config
                frozen = {p.dtype for p in lr.policy.parameters() if not p.requires_grad}
                return (c.num_attention_heads, c.num_key_value_heads, frozen, lr.backend.ds.zero_optimization_stage(),
                        lr.policy.is_gradient_checkpointing, torch.bfloat16)

            heads, kv, frozen, stage, ckpt, bf16 = ray.get(trainer.learner.actor.__ray_call__.remote(learner_shape))
            assert (heads, kv, frozen, stage, ckpt) == (4, 2, {bf16}, 0, True)
        finally:
            trainer.close()
    finally:
        ray.shutdown()
    rows = read(tmp_path / "metrics.jsonl")
    assert [row["step"] for row in rows] == [1, 2] and rows[-1]["adapter_version"] == 2
    assert [row["offpolicy/lag"] for row in rows] == [0, 1]  # step 2 was generated during step 1's update
    # the served adapter checked against the bf16 learner: v1 while step 2's rollout played (the pipeline defers
    # it), v2 at once (no rollout follows the last step); both in step 2's row, the last one's metrics shown
    assert "sync/checked_version" not in rows[0] and rows[1]["sync/checked_version"] == 2
    assert rows[1]["sync/probe_tokens"] > 0 and rows[1]["sync/logprob_gap"] < 0.5
    for row in rows:
        assert row["rollout/generated_tokens"] > 0 and row["update/tokens"] >= row["update/loss_tokens"] > 0
        assert not row["update/skipped"] and row["update/grad_norm"] > 0  # ZeRO-2 stepped on real gradients
    assert (tmp_path / "checkpoints" / "step_000002" / "adapter" / "adapter_config.json").exists()
