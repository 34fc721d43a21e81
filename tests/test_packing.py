"""Prefix-shared micro-batches and chunked log-probs: the same loss and gradients as padded rows."""

from __future__ import annotations

import pytest
import torch

from aac.config import LearnerConfig
from aac.learner import Learner, Sample
from aac.learner.packing import pack_plan, segments


def config(**kw) -> LearnerConfig:
    return LearnerConfig(**{**dict(backend="torch", lora_r=4, lora_alpha=8, lr=1e-2, kl_coef=0.05), **kw})


def group_samples() -> list[Sample]:
    """Turns of two 'episodes' that share a system prefix, one identical first prompt, and one turn that
    extends another; sampling log-probs a little off the learner's."""
    g = torch.Generator().manual_seed(3)

    def ids(n):
        return torch.randint(3, 1000, (n,), generator=g).tolist()

    system, first, plan = ids(14), ids(6), ids(5)
    prompts = [system + first, system + first, system + first + plan, system + ids(9), system + ids(4)]
    out = []
    for i, prompt in enumerate(prompts):
        completion = plan if i == 0 else ids(3 + i)
        old = (-7.0 + 0.3 * torch.randn(len(completion), generator=g)).tolist()
        out.append(Sample(prompt, completion, old, [1.0, -0.5, 0.25, -1.5, 2.0][i]))
    return out


def test_pack_plan_computes_each_shared_prefix_once():
    seqs = [[1, 2, 3, 4], [1, 2, 5], [1, 2, 3, 4], [9, 8], [1, 2, 3, 4, 6]]
    (row,) = pack_plan(seqs, budget=100)
    # depth-first: 1 2 3 4 | 6 | 5 | 9 8 ; the duplicate costs nothing
    assert row.tokens == [1, 2, 3, 4, 6, 5, 9, 8] and row.positions == [0, 1, 2, 3, 4, 2, 0, 1]
    paths = dict(zip(row.samples, row.paths))
    assert paths[0] == paths[2] == [0, 1, 2, 3] and paths[4] == [0, 1, 2, 3, 4] and paths[1] == [0, 1, 5]
    assert paths[3] == [6, 7]
    segs = segments(row)  # one per sequence with new tokens, covering the row in order
    assert [(s.start, s.end, s.path.tolist()) for s in segs] == [(0, 4, [0, 1, 2, 3]), (4, 5, [0, 1, 2, 3, 4]),
                                                                 (5, 6, [0, 1, 5]), (6, 8, [6, 7])]
    assert segs[2].mask.tolist() == [[True, True, True]] and segs[3].mask.tolist() == [[True, False], [True, True]]
    assert segs[1].mask.tolist() == [[True] * 5]
    rows = pack_plan(seqs, budget=5)  # unique tokens per row <= budget; sharing only within a row
    assert [len(r.tokens) for r in rows] == [5, 5] and sorted(i for r in rows for i in r.samples) == [0, 1, 2, 3, 4]
    with pytest.raises(ValueError, match="micro_batch_tokens"):
        pack_plan(seqs, budget=0)


def _gradients(learner: Learner, samples, **kw) -> tuple[dict, torch.Tensor]:
    m = learner.compute_gradients(samples, **kw)
    grads = torch.cat([p.grad.flatten() for p in learner.trainable_parameters().values()]).clone()
    return m, grads


def _gqa_llama():
    """SmolLM2's architecture (Llama, 3 query heads per key/value head) at test size, random weights."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    return LlamaForCausalLM(LlamaConfig(vocab_size=1000, hidden_size=48, intermediate_size=64, num_hidden_layers=2,
                                        num_attention_heads=6, num_key_value_heads=2, attn_implementation="sdpa"))


def _trained(path: str, gqa: bool = False, **kw) -> Learner:
    """A learner one step away from its reference, so that the ratio, the KL and the clip all matter."""
    learner = Learner(config(**kw), path, seed=0, base_model=_gqa_llama() if gqa else None)
    with torch.no_grad():
        for p in learner.trainable_parameters().values():
            p.add_(0.05 * torch.randn(p.shape, generator=torch.Generator().manual_seed(p.numel())))
    return learner


@pytest.mark.parametrize("gqa, checkpointing, expand", [(False, False, False), (True, True, False), (True, False, True)],
                         ids=["qwen3", "llama_gqa_ckpt", "llama_gqa_kv_expanded"])
def test_prefix_sharing_and_chunks_keep_loss_and_gradients(tiny_model_path, gqa, checkpointing, expand, monkeypatch):
    """`expand`: the KV heads expanded before sdpa, the path a GPU takes (a kernel there takes a mask or
    grouped heads, not both), forced on the CPU."""
    from aac.learner import tree_attention

    expanded = []
    if expand:
        heads = tree_attention._heads
        monkeypatch.setattr(tree_attention, "expand_kv", lambda t: True)
        monkeypatch.setattr(tree_attention, "_heads", lambda k, v, g: expanded.append(g) or heads(k, v, g))
    samples = group_samples()
    plain = _trained(tiny_model_path, gqa, prefix_sharing=False, logprob_chunk=0)
    shared = _trained(tiny_model_path, gqa, prefix_sharing=True, logprob_chunk=4,
                      gradient_checkpointing=checkpointing)
    assert shared.policy.config._attn_implementation == "prefix_tree+sdpa"
    old = plain.old_logprobs(samples)
    assert shared.old_logprobs(samples) == [pytest.approx(o, abs=1e-5) for o in old]
    old = [[x - 0.1 * (i % 3) for i, x in enumerate(row)] for row in old]  # ratio != 1: the clip engages
    m_plain, g_plain = _gradients(plain, samples, old_logprobs=old)
    m_shared, g_shared = _gradients(shared, samples, old_logprobs=old)
    for key in ("loss", "pg_loss", "kl", "clip_frac"):
        assert m_shared[key] == pytest.approx(m_plain[key], abs=1e-5)
    assert m_plain["clip_frac"] > 0 and m_plain["kl"] > 0
    assert torch.allclose(g_shared, g_plain, rtol=1e-4, atol=1e-6)
    assert m_shared["loss_tokens"] == m_plain["loss_tokens"]
    unique = len(pack_plan([s.prompt_ids + s.completion_ids for s in samples], 4096)[0].tokens)
    assert m_plain["tokens"] == sum(len(s) for s in samples) and m_shared["tokens"] == unique
    assert unique < 0.7 * m_plain["tokens"]
    assert expanded == [] if not expand else set(expanded) == {3}  # 6 query heads over 2 KV heads


def test_the_kernel_in_use_names_the_grouped_head_path():
    from transformers import Qwen3Config

    from aac.learner.tree_attention import kernel_in_use
    from aac.models import QWEN3_8B

    config = Qwen3Config(num_attention_heads=QWEN3_8B.num_attention_heads, head_dim=QWEN3_8B.head_dim,
                         num_key_value_heads=QWEN3_8B.num_key_value_heads, hidden_size=QWEN3_8B.hidden_size)
    assert kernel_in_use(config, torch.device("cpu"), torch.bfloat16) == \
        "sdpa flash_attention on cpu per segment, grouped heads (enable_gqa)"
    assert kernel_in_use(config, torch.device("cuda"), torch.bfloat16) == \
        "flex_attention on cuda, one call per row and layer, grouped heads (enable_gqa)"


def test_the_block_mask_is_the_prefix_tree():
    """Tile by tile, the BlockMask made from the tree's subtree ends is what torch makes by evaluating the
    mask everywhere (empty, partial and full tiles alike), and token by token it is the segments' masks."""
    from torch.nn.attention.flex_attention import create_block_mask

    from aac.learner.packing import subtree_ends
    from aac.learner.tree_attention import block_mask

    seqs = [s.prompt_ids + s.completion_ids for s in group_samples()]
    seqs += [seqs[0][:30] + [7] * 41, seqs[1][:12] + [9] * 3]  # a deep branch and a short one
    (row,) = pack_plan(seqs, budget=4096)
    n = len(row.tokens)
    assert n % 16 and n > 4 * 16  # a partial last tile, several tiles
    ends = torch.tensor(subtree_ends(row.positions))
    seen = torch.zeros(n, n, dtype=torch.bool)
    for seg in segments(row):
        seen[seg.start:seg.end, seg.path] = seg.mask
    i = torch.arange(n)
    assert torch.equal((i[None] <= i[:, None]) & (i[:, None] < ends[None]), seen)
    mine = block_mask(ends, 16)
    ref = create_block_mask(lambda b, h, q, kv: seen[q, kv], None, None, n, n, device="cpu", BLOCK_SIZE=16)
    assert torch.equal(mine.to_dense(), ref.to_dense())
    assert torch.equal(mine.full_kv_num_blocks, ref.full_kv_num_blocks) and mine.full_kv_num_blocks.sum() > 0
    assert mine.sparsity() == ref.sparsity() > 30


@pytest.mark.filterwarnings("ignore:flex_attention called without torch.compile")
def test_the_flex_kernel_gives_the_segments_log_probs_and_gradients(tiny_model_path, monkeypatch):
    """CUDA's kernel (one FlexAttention call per row and layer over the tree's BlockMask, tiles of 16 so
    that rows span several) against the CPU's segments loop, fp32 on the CPU, grouped heads and gradient
    checkpointing on: FlexAttention has no CPU
    backward, so its unfused reference form runs here with torch's device check lifted (the same mask,
    scaling and grouped heads; CUDA compiles the same call to one kernel)."""
    import torch.nn.attention.flex_attention as flex

    from aac.learner import tree_attention

    samples = group_samples()
    loop = _trained(tiny_model_path, gqa=True, logprob_chunk=4, gradient_checkpointing=True)
    fused = _trained(tiny_model_path, gqa=True, logprob_chunk=4, gradient_checkpointing=True)
    loop_old = loop.old_logprobs(samples)
    old = [[x - 0.1 * (i % 3) for i, x in enumerate(row)] for row in loop_old]  # ratio != 1: the clip engages
    m_loop, g_loop = _gradients(loop, samples, old_logprobs=old)
    calls = []
    monkeypatch.setattr(tree_attention, "tree_kernel", lambda device: "flex")
    monkeypatch.setattr(tree_attention, "BLOCK", 16)
    monkeypatch.setattr(tree_attention, "_flex", lambda: lambda *a, **kw: calls.append(kw) or flex.flex_attention(*a, **kw))
    monkeypatch.setattr(flex, "_validate_device", lambda *a: None)
    assert fused.old_logprobs(samples) == [pytest.approx(o, abs=1e-5) for o in loop_old]
    m_fused, g_fused = _gradients(fused, samples, old_logprobs=old)
    for key in ("loss", "pg_loss", "kl", "clip_frac"):
        assert m_fused[key] == pytest.approx(m_loop[key], abs=1e-6)
    assert m_loop["clip_frac"] > 0 and m_loop["kl"] > 0
    assert torch.allclose(g_fused, g_loop, rtol=1e-4, atol=1e-6)
    layers = fused.policy.config.num_hidden_layers
    # one call per layer: old log-probs, then the reference, the policy and its recompute (checkpointing)
    assert len(calls) == layers * 4 and {kw["enable_gqa"] for kw in calls} == {True}


def test_logprob_chunk_bounds_the_logits_not_the_loss(tiny_model_path):
    samples = group_samples()
    learner = _trained(tiny_model_path)
    seen = []
    learner.head.register_forward_hook(lambda mod, args, out: seen.append(out.shape[0]))
    widest, losses = {}, {}
    for chunk in (0, 3):  # the learner reads its config at each update
        learner.cfg.logprob_chunk = chunk
        seen.clear()
        losses[chunk] = learner.compute_gradients(samples)["loss"]
        widest[chunk] = max(seen)
    assert widest[3] == 3 and widest[0] == sum(len(s.completion_ids) for s in samples)
    assert losses[3] == pytest.approx(losses[0], abs=1e-6)
    learner.cfg.logprob_chunk = -1
    with pytest.raises(ValueError, match="logprob_chunk"):
        learner.compute_gradients(samples)


def test_unsupported_attention_is_a_clear_error(tiny_model_path):
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(tiny_model_path, attn_implementation="eager")
    with pytest.raises(ValueError, match="prefix_sharing=false"):
        Learner(config(), tiny_model_path, base_model=model)
