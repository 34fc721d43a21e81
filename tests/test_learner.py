"""GRPO loss and the LoRA learner on tiny_qwen3 (fast); DeepSpeed engines marked slow."""

from __future__ import annotations

import io
import math

import pytest
import torch

from aac.config import LearnerConfig
from aac.learner import Learner, Sample, grpo_loss
from aac.learner.batching import collate, plan_micro_batches

PROMPT = list(range(5, 25))
COMPLETION = [7, 8, 9, 10, 11]


def config(**kw) -> LearnerConfig:
    base = dict(backend="torch", lora_r=4, lora_alpha=8, lr=1e-2)
    return LearnerConfig(**{**base, **kw})


@pytest.fixture
def learner(tiny_model_path):
    return Learner(config(), tiny_model_path, seed=0)


def samples() -> list[Sample]:
    """Turns of different lengths and advantages, with sampling log-probs a little off-policy."""
    g = torch.Generator().manual_seed(1)
    out = []
    for n_prompt, n_completion, adv in [(12, 6, 1.0), (30, 3, -0.5), (7, 9, 0.25), (20, 12, -1.5), (9, 2, 2.0)]:
        prompt = torch.randint(3, 1000, (n_prompt,), generator=g).tolist()
        completion = torch.randint(3, 1000, (n_completion,), generator=g).tolist()
        old = (-7.0 + 0.3 * torch.randn(n_completion, generator=g)).tolist()
        out.append(Sample(prompt, completion, old, adv))
    return out


def flat(learner: Learner) -> torch.Tensor:
    return torch.cat([p.detach().flatten() for p in learner.trainable_parameters().values()]).clone()


# ------------------------------------------------------------------ the loss by hand


def test_loss_at_ratio_one_is_minus_mean_advantage():
    logp = torch.tensor([[-1.0, -2.0, -0.5, -3.0]], requires_grad=True)
    adv = torch.tensor([[9.0, 1.0, -2.0, 4.0]])
    mask = torch.tensor([[0, 1, 1, 1]])
    loss, m = grpo_loss(logp, logp.detach(), None, adv, mask, clip_eps=0.2, kl_coef=0.0)
    assert loss.item() == pytest.approx(-(1.0 - 2.0 + 4.0) / 3)
    assert m["clip_frac"].item() == 0.0 and m["kl"].item() == 0.0
    loss.backward()  # d loss / d logp = -adv / n on masked tokens
    assert logp.grad[0].tolist() == pytest.approx([0.0, -1 / 3, 2 / 3, -4 / 3])


def test_clipping_engages():
    old = torch.zeros(1, 4)
    ratio = torch.tensor([[1.5, 1.5, 0.5, 0.5]])
    logp = ratio.log().requires_grad_()
    adv = torch.tensor([[1.0, -1.0, 1.0, -1.0]])
    loss, m = grpo_loss(logp, old, None, adv, torch.ones(1, 4), clip_eps=0.2, kl_coef=0.0)
    # per token -min(r A, clip(r) A): -min(1.5, 1.2) | -min(-1.5, -1.2) | -min(0.5, 0.8) | -min(-0.5, -0.8)
    assert loss.item() == pytest.approx((-1.2 + 1.5 - 0.5 + 0.8) / 4)
    assert m["clip_frac"].item() == pytest.approx(2 / 4)
    loss.backward()  # clipped tokens carry no gradient; the others -A r / n
    assert logp.grad[0].tolist() == pytest.approx([0.0, 1.5 / 4, -0.5 / 4, 0.0])


def test_k3_kl_term():
    logp = torch.tensor([[-1.0, -2.0]])
    ref = torch.tensor([[-1.5, -2.0]])
    loss, m = grpo_loss(logp, logp, ref, torch.zeros(1, 2), torch.ones(1, 2), clip_eps=0.2, kl_coef=0.1)
    k3 = math.exp(-0.5) + 0.5 - 1  # exp(ref - logp) - (ref - logp) - 1 on token 0; 0 on token 1
    assert m["kl"].item() == pytest.approx(k3 / 2)
    assert loss.item() == pytest.approx(0.1 * k3 / 2)


def test_masked_junk_cannot_overflow():
    logp = torch.tensor([[-1.0, -500.0]])
    loss, _ = grpo_loss(logp, torch.zeros(1, 2), torch.zeros(1, 2), torch.ones(1, 2), torch.tensor([[1, 0]]),
                        clip_eps=0.2, kl_coef=0.1)
    assert math.isfinite(loss.item())


# ------------------------------------------------------------------ batching


def test_plan_respects_the_budget():
    lengths = [10, 50, 20, 20, 5, 70, 30]
    plan = plan_micro_batches(lengths, budget=60)
    assert sorted(i for b in plan for i in b) == list(range(len(lengths)))
    for b in plan:
        assert len(b) * max(lengths[i] for i in b) <= 60 or len(b) == 1  # a 70-token sample rides alone
    assert [5] in plan


def test_collate_aligns_completion_tokens():
    s = Sample([1, 2, 3], [4, 5], [-0.1, -0.2], 0.5)
    b = collate([s, Sample([9], [8], [], -1.0)], pad_id=0)
    assert b.input_ids.tolist() == [[1, 2, 3, 4, 5], [9, 8, 0, 0, 0]]
    assert b.loss_mask.tolist() == [[False, False, True, True], [True, False, False, False]]
    assert b.adv[0].tolist() == [0.0, 0.0, 0.5, 0.5] and b.adv[1, 0].item() == -1.0
    assert b.sampling_logp[0, 2:].tolist() == pytest.approx([-0.1, -0.2]) and math.isnan(b.sampling_logp[1, 0].item())
    assert torch.isnan(b.old_logp).all()  # no pi_old given: the pass uses its own
    assert b.first == 0


def test_bad_samples_are_clear_errors(learner):
    with pytest.raises(ValueError, match="non-empty prompt"):
        learner.update([Sample([], [1, 2], [], 1.0)])
    with pytest.raises(ValueError, match="2 sampling_logprobs for 3"):
        learner.update([Sample([1], [1, 2, 3], [-1.0, -1.0], 1.0)])
    with pytest.raises(ValueError, match="no samples"):
        learner.update([])


# ------------------------------------------------------------------ the learner


def test_token_logprobs_match_a_plain_forward(learner, tiny_model_path):
    from transformers import AutoModelForCausalLM

    base = AutoModelForCausalLM.from_pretrained(tiny_model_path, dtype=torch.float32)
    ids = torch.tensor([PROMPT + COMPLETION])
    with torch.no_grad():
        full = torch.log_softmax(base(ids).logits[0, :-1], -1).gather(-1, ids[0, 1:, None])[:, 0]
    expected = full[len(PROMPT) - 1:].tolist()
    assert learner.token_logprobs(PROMPT, COMPLETION) == pytest.approx(expected, abs=1e-5)  # B = 0: the base


def test_update_loss_at_ratio_one_and_kl_from_zero(learner):
    batch = [Sample(PROMPT, COMPLETION, [], 1.0), Sample(PROMPT[:8], [3, 4, 5], [], -0.5)]
    m = learner.update(batch)  # on-policy (no engine log-probs): ratio 1
    assert m["loss"] == pytest.approx(-(5 * 1.0 + 3 * -0.5) / 8, abs=1e-6)
    assert m["kl"] == 0.0  # the fresh adapter is the identity: policy == reference
    # tokens computed: the second turn's prompt is the first's first 8 tokens, computed once
    assert m["clip_frac"] == 0.0 and not m["skipped"] and m["loss_tokens"] == 8 and m["tokens"] == 36 - 8
    assert learner.update(batch)["kl"] > 0.0


def test_pi_old_is_the_learners_so_one_minibatch_has_ratio_one(learner):
    # the engine's log-probs are ~-7 +- 0.3 (far from the learner's): today's ratio would clip
    m = learner.update(samples())
    assert m["clip_frac"] == 0.0 and m["minibatches"] == 1 and m["steps"] == 1
    gap = m["sampling/logprob_gap"]
    assert 0.0 < gap and math.isfinite(m["sampling/is_weight_mean"]) and m["sampling/is_weight_max"] > 0


def test_truncated_importance_weight_by_hand(tiny_model_path):
    # the engine's log-prob of each token is the learner's minus delta: weight min(exp(delta), cap)
    deltas = [math.log(3.0), math.log(0.5), 0.0, math.log(1.5), math.log(4.0)]
    runs = {}
    for cap in (2.0, None):
        learner = Learner(config(tis_cap=cap, kl_coef=0.0), tiny_model_path, seed=0)
        own = learner.token_logprobs(PROMPT, COMPLETION)
        engine = [lp - d for lp, d in zip(own, deltas)]
        runs[cap] = learner.update([Sample(PROMPT, COMPLETION, engine, 1.0)])
    capped, raw = [min(math.exp(d), 2.0) for d in deltas], [math.exp(d) for d in deltas]
    assert runs[2.0]["loss"] == pytest.approx(-sum(capped) / 5, rel=1e-5)  # ratio 1: -A * w per token
    assert runs[None]["loss"] == pytest.approx(-sum(raw) / 5, rel=1e-5)
    for m in runs.values():  # the statistics are of the untruncated weight
        assert m["sampling/logprob_gap"] == pytest.approx(sum(abs(d) for d in deltas) / 5, rel=1e-4)
        assert m["sampling/is_weight_mean"] == pytest.approx(sum(raw) / 5, rel=1e-4)
        assert m["sampling/is_weight_max"] == pytest.approx(4.0, rel=1e-4)
    assert runs[2.0]["sampling/is_truncated_frac"] == pytest.approx(2 / 5) and runs[None]["sampling/is_truncated_frac"] == 0
    nan = Learner(config(), tiny_model_path).update([Sample(PROMPT, COMPLETION, [], 1.0)])
    assert all(math.isnan(nan[k]) for k in ("sampling/logprob_gap", "sampling/is_weight_mean"))


def test_several_minibatches_make_the_clip_a_trust_region(tiny_model_path):
    learner = Learner(config(ppo_minibatches=3, lr=0.3), tiny_model_path, seed=0)
    m = learner.update(samples() + samples())
    clip = [part["clip_frac"] for part in m["per_minibatch"]]
    assert m["minibatches"] == 3 and m["steps"] == 3 and learner.steps == 3
    assert clip[0] == 0.0  # pi_old recomputed before any step: the first mini-batch is at ratio 1
    assert max(clip[1:]) > 0.0  # the later ones moved away from pi_old and are clipped
    assert m["clip_frac"] == pytest.approx(sum(c * p["loss_tokens"] for c, p in zip(clip, m["per_minibatch"]))
                                           / m["loss_tokens"])
    one = Learner(config(lr=0.3), tiny_model_path, seed=0)
    one.update(samples() + samples())
    assert one.steps == 1 and not torch.equal(flat(one), flat(learner))


def test_all_zero_advantages_skip_the_step(learner):
    before = flat(learner)
    m = learner.update([Sample(PROMPT, COMPLETION, [], 0.0), Sample(PROMPT, [1, 2], [], 0.0)])
    assert m["skipped"] and m["steps"] == 0 and math.isnan(m["loss"])
    assert torch.equal(flat(learner), before)
    assert not learner.backend.optimizer.state  # Adam never stepped
    # it reports the tokens an update of the batch runs (aac.preflight's count): the shared prompt once
    batch = [Sample(PROMPT, COMPLETION, [], 0.0), Sample(PROMPT[:8], [3, 4, 5], [], 0.0)]
    assert learner.update(batch)["tokens"] == 36 - 8
    batch[0].advantage = 1.0
    assert learner.update(batch)["tokens"] == 36 - 8


def test_positive_advantage_raises_logprob(learner):
    before = sum(learner.token_logprobs(PROMPT, COMPLETION))
    for _ in range(3):
        learner.update([Sample(PROMPT, COMPLETION, [], 1.0)])
    assert sum(learner.token_logprobs(PROMPT, COMPLETION)) > before + 0.5


def test_micro_batches_give_the_same_gradient(tiny_model_path):
    grads = []
    for budget in (4096, 40):
        learner = Learner(config(micro_batch_tokens=budget), tiny_model_path, seed=0)
        learner.update(samples())  # move off the identity adapter so the KL term has a gradient
        m = learner.compute_gradients(samples())
        assert m["micro_batches"] == (1 if budget == 4096 else 4)  # [33], [32], [18, 16], [11] tokens
        grads.append((m, torch.cat([p.grad.flatten() for p in learner.trainable_parameters().values()])))
    (m_one, g_one), (m_many, g_many) = grads
    assert g_one.abs().max() > 0
    torch.testing.assert_close(g_many, g_one, rtol=1e-4, atol=1e-7)
    for key in ("loss", "kl", "clip_frac"):
        assert m_many[key] == pytest.approx(m_one[key], rel=1e-4, abs=1e-7)


def test_saved_adapter_loads_with_peft(learner, tiny_model_path, tmp_path):
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    for _ in range(2):
        learner.update(samples())
    learner.save_adapter(tmp_path / "adapter")
    assert (tmp_path / "adapter" / "adapter_model.safetensors").is_file()
    base = AutoModelForCausalLM.from_pretrained(tiny_model_path, dtype=torch.float32)
    loaded = PeftModel.from_pretrained(base, str(tmp_path / "adapter")).eval()
    ids = torch.tensor([PROMPT + COMPLETION])
    with torch.no_grad():
        logp = torch.log_softmax(loaded(ids).logits[0, :-1], -1).gather(-1, ids[0, 1:, None])[:, 0]
    ours = learner.token_logprobs(PROMPT, COMPLETION)
    assert logp[len(PROMPT) - 1:].tolist() == pytest.approx(ours, abs=1e-5)
    assert ours != pytest.approx(Learner(config(), tiny_model_path).token_logprobs(PROMPT, COMPLETION), abs=1e-3)


def state_roundtrip(cfg: LearnerConfig, model_path: str) -> None:
    """Resume from state_dict(): the next update matches the uninterrupted learner's exactly."""
    a = Learner(cfg, model_path, seed=0)
    for _ in range(2):
        a.update(samples())
    buffer = io.BytesIO()
    torch.save(a.state_dict(), buffer)  # as checkpoints do
    buffer.seek(0)
    state = torch.load(buffer, weights_only=False)
    assert set(state) >= {"adapter", "optimizer", "scheduler", "steps"}
    b = Learner(cfg, model_path, seed=1)
    b.load_state_dict(state)
    assert b.steps == 2 and torch.equal(flat(b), flat(a))
    a.update(samples())
    b.update(samples())
    torch.testing.assert_close(flat(b), flat(a), rtol=0, atol=0)


def test_state_dict_roundtrip_torch(tiny_model_path):
    state_roundtrip(config(), tiny_model_path)


# ------------------------------------------------------------------ DeepSpeed (gloo on CPU)


@pytest.mark.slow
@pytest.mark.parametrize("stage", [0, 2])
def test_deepspeed_matches_torch_and_raises_logprob(tiny_model_path, stage):
    runs = {}
    for engine in ("torch", "deepspeed"):
        learner = Learner(config(backend=engine, zero_stage=stage), tiny_model_path, seed=0)
        before = sum(learner.token_logprobs(PROMPT, COMPLETION))
        metrics = [learner.update([Sample(PROMPT, COMPLETION, [], 1.0), *samples()]) for _ in range(3)]
        after = sum(learner.token_logprobs(PROMPT, COMPLETION))
        assert after > before + 0.5
        assert all(math.isfinite(m["grad_norm"]) for m in metrics)
        runs[engine] = (flat(learner), [m["loss"] for m in metrics])
    torch.testing.assert_close(runs["deepspeed"][0], runs["torch"][0], rtol=1e-4, atol=1e-6)
    assert runs["deepspeed"][1] == pytest.approx(runs["torch"][1], rel=1e-4)


@pytest.mark.slow
def test_deepspeed_zero2_state_roundtrip_and_skip(tiny_model_path):
    cfg = config(backend="deepspeed", zero_stage=2)
    state_roundtrip(cfg, tiny_model_path)
    learner = Learner(cfg, tiny_model_path, seed=0)
    before = flat(learner)
    assert learner.update([Sample(PROMPT, COMPLETION, [], 0.0)])["skipped"]
    assert torch.equal(flat(learner), before)


# ------------------------------------------------------------------ a bf16 engine, a float32 learner


@pytest.mark.slow
def test_bf16_engine_fp32_learner_ratio_and_sync_check(tiny_model_path, tmp_path):
    """The GPU situation in miniature: the engine's bf16 log-probs only enter the importance weight,
    the ratio stays exactly 1, and the synced engine passes the run's log-prob gap bound."""
    from aac.engines import GenRequest, Sampling, make_engine
    from aac.training.sync import FP32_TOLERANCE, default_tolerance

    learner = Learner(config(), tiny_model_path, seed=0)
    learner.save_adapter(tmp_path / "v0")
    engine = make_engine("hf", tiny_model_path, dtype="bfloat16", seed=0)
    engine.load_adapter("actor", str(tmp_path / "v0"), 0)
    res = engine.generate([GenRequest([{"role": "user", "content": f"Say {w}."}],
                                      Sampling(max_tokens=16, seed=1, logprobs=True), "actor")
                           for w in ("yes", "no", "maybe", "why")])
    batch = [Sample(r.prompt_ids, r.token_ids, r.logprobs, a) for r, a in zip(res, (1.0, -1.0, 1.0, -1.0))]
    m = learner.update(batch)
    assert m["clip_frac"] == 0.0
    assert 0.0 < m["sampling/logprob_gap"] < 0.05  # bf16 kernels: a small, non-zero gap
    assert m["sampling/is_weight_max"] > 1.0 and m["sampling/is_weight_mean"] == pytest.approx(1.0, abs=0.05)
    learner.save_adapter(tmp_path / "v1")
    probes = [(s.prompt_ids, s.completion_ids) for s in batch]  # every sample's tokens: the gap of one is noisy
    ours = [learner.token_logprobs(*probe) for probe in probes]
    gaps = []
    for version in (1, 0):
        engine.load_adapter("actor", str(tmp_path / f"v{version}"), version)
        diffs = [abs(a - b) for probe, mine in zip(probes, ours) for a, b in zip(mine, engine.score(*probe, "actor"))]
        gaps.append(sum(diffs) / len(diffs))
    synced, stale = gaps
    # at this lr the gap still sees one update; the run's bound for a bf16 engine (null sync_tolerance)
    # passes the synced engine, and staleness itself is told by adapter versions (tests/test_faults.py)
    assert synced < FP32_TOLERANCE < stale
    assert synced < default_tolerance("bfloat16", "float32")


@pytest.mark.slow
def test_a_one_process_group_listens_on_a_fresh_port_whatever_port_it_inherits():
    """A Ray worker inherits its driver's environment, MASTER_PORT included, while the driver's own
    (in-process) learner group still listens on that port: the learner's group must not reuse it."""
    import os
    import socket
    import subprocess
    import sys

    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        code = ("import os, torch.distributed as dist\n"
                "from aac.learner.backends import _init_process_group\n"
                "_init_process_group('gloo')\n"
                "print(dist.get_world_size(), os.environ['MASTER_PORT'])\n")
        env = {**os.environ, "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), "WORLD_SIZE": "1", "RANK": "0"}
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    world, used = out.stdout.split()[-2:]
    assert world == "1" and int(used) != port
