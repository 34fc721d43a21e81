"""Time GRPO updates of the LoRA learner on a Qwen3-8B-shaped model with random bf16 weights.

Reports update tokens/s, MFU against the GPU's dense bf16 peak, and peak memory for one update
batch (default 4096 tokens: 4 turns of 512 prompt + 512 completion tokens), LoRA r16 on all
linear layers, KL to the reference on (so each update runs the reference forward too).

    python benchmarks/gpu_learner.py                         # on a GPU: the 8B shape
    python benchmarks/gpu_learner.py --tiny                  # a few small layers, runs on CPU
    python benchmarks/gpu_learner.py --model smollm2_135m --dtype float32 --tokens 1024 --seq-len 256
    python benchmarks/gpu_learner.py --no-prefix-sharing     # the padded path, for the side-by-side

The turns of a batch share the first `--shared-frac` of their prompt (a GRPO group's system prompt,
header and context examples): with `--prefix-sharing` (the default) it is computed once.
tokens_per_s counts the tokens the model ran; sample_tokens_per_s every turn's full length.

MFU counts model FLOPs only (no recomputation from gradient checkpointing). Per token, with N the
parameters in matmuls (lm_head included) and A = 4 * layers * heads * head_dim * mean attended
length the attention-score FLOPs of one forward: policy forward 2N + A, backward 2N + 2A (frozen
base: activation gradients only; LoRA weight gradients are negligible), reference forward 2N + A.
"""

from __future__ import annotations

import argparse
import json
import resource
import time
from dataclasses import asdict
from typing import Any, Optional

import torch

from aac.config import LearnerConfig
from aac.learner import Learner, Sample
from aac.models import QWEN3_8B, Shape

# dense bf16 peaks (no sparsity), FLOP/s
PEAKS = {"H200": 989e12, "H100 PCIe": 756e12, "H100": 989e12, "A100": 312e12, "L40S": 362e12, "A40": 150e12,
         "L4": 121e12, "A10": 125e12}


TINY = Shape(vocab_size=1024, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=2,
             num_key_value_heads=1, head_dim=32)


def build_random(shape: Shape, dtype: torch.dtype, device: torch.device) -> Any:
    from transformers import AutoModelForCausalLM, Qwen3Config

    config = Qwen3Config(**asdict(shape), max_position_embeddings=40960, rope_theta=1e6, tie_word_embeddings=False)
    with torch.device(device):
        return AutoModelForCausalLM.from_config(config, dtype=dtype)


def load_named(name: str, dtype: torch.dtype) -> Any:
    from transformers import AutoModelForCausalLM

    from aac.models import resolve_model

    return AutoModelForCausalLM.from_pretrained(resolve_model(name), dtype=dtype)


def flops_per_token(model: Any, attended: float, kl: bool) -> float:
    """`attended`: the keys a query attends to, on average ((L + 1) / 2 in causal rows of L tokens)."""
    c = model.config
    matmul = sum(m.weight.numel() for m in model.modules() if isinstance(m, torch.nn.Linear))
    attention = 4 * c.num_hidden_layers * c.num_attention_heads * c.head_dim * attended
    forward = 2 * matmul + attention
    backward = 2 * matmul + 2 * attention
    return forward + backward + (forward if kl else 0.0)


def peak_flops(override_tflops: Optional[float]) -> Optional[float]:
    if override_tflops:
        return override_tflops * 1e12
    if not torch.cuda.is_available():
        return None
    name = torch.cuda.get_device_name()
    return next((peak for key, peak in PEAKS.items() if key in name), None)


def make_batch(tokens: int, seq_len: int, prompt_frac: float, vocab: int, seed: int,
               shared_frac: float = 0.0) -> list[Sample]:
    g = torch.Generator().manual_seed(seed)
    n_prompt = int(seq_len * prompt_frac)
    shared = torch.randint(3, vocab, (int(n_prompt * shared_frac),), generator=g).tolist()
    out = []
    for i in range(max(1, tokens // seq_len)):
        ids = shared + torch.randint(3, vocab, (seq_len - len(shared),), generator=g).tolist()
        out.append(Sample(ids[:n_prompt], ids[n_prompt:], [], 1.0 if i % 2 == 0 else -1.0))
    return out


def flagship_batch(vocab: int, groups: int = 2, group: int = 8, turns: int = 12, prompt: int = 350,
                   reply: tuple[int, int] = (55, 150), window: int = 3, seed: int = 0) -> list[Sample]:
    """Turns shaped like the flagship's rollouts (qwen3_8b: paper-style prompts, GRPO groups of 8): per group
    one shared prompt of `prompt` tokens; per episode `turns` turns, each a header of 10-30 tokens and a reply
    of `reply` tokens, answered by an observation of 10-40; a turn's prompt is the shared one, the last
    `window` turns with their observations, and its header. At the defaults the learner's prefix tree
    (`aac.learner.packing`) runs 4.2 unique tokens per generated one (RESULTS' analysis of Qwen3-8B-shaped
    batches: 3.8-4.7). Advantages alternate +1/-1 within each group."""
    import random

    r = random.Random(seed)

    def tokens(n: int) -> list[int]:
        return [r.randrange(3, vocab) for _ in range(n)]

    out = []
    for _ in range(groups):
        shared = tokens(prompt)
        for episode in range(group):
            history: list[list[int]] = []
            for t in range(turns):
                header, completion = tokens(r.randint(10, 30)), tokens(r.randint(*reply))
                ids = shared + [x for turn in history[max(0, t - window):] for x in turn] + header
                out.append(Sample(ids, completion, [], 1.0 if episode % 2 == 0 else -1.0))
                history.append(header + completion + tokens(r.randint(10, 40)))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tiny", action="store_true", help="2 layers of width 64: a CPU smoke run")
    ap.add_argument("--model", help="a registry name or folder instead of the random 8B shape")
    ap.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float32", "float16"])
    ap.add_argument("--engine", default="torch", choices=["torch", "deepspeed"])
    ap.add_argument("--zero-stage", type=int, default=0)
    ap.add_argument("--tokens", type=int, default=4096, help="tokens per update batch")
    ap.add_argument("--seq-len", type=int, default=1024, help="tokens per turn (prompt + completion)")
    ap.add_argument("--prompt-frac", type=float, default=0.5)
    ap.add_argument("--shared-frac", type=float, default=0.5, help="fraction of each prompt all turns share")
    ap.add_argument("--prefix-sharing", action=argparse.BooleanOptionalAction, default=True)
    ap.add_argument("--logprob-chunk", type=int, default=256)
    ap.add_argument("--micro-batch-tokens", type=int, default=4096)
    ap.add_argument("--gradient-checkpointing", action="store_true")
    ap.add_argument("--lora-r", type=int, default=16)
    ap.add_argument("--kl-coef", type=float, default=0.001)
    ap.add_argument("--steps", type=int, default=5, help="timed updates (after one warm-up)")
    ap.add_argument("--peak-tflops", type=float, help="override the bf16 peak used for MFU")
    ap.add_argument("--json", help="also write the result here")
    args = ap.parse_args()

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dtype = getattr(torch, args.dtype)
    t0 = time.perf_counter()
    if args.model:
        model = load_named(args.model, dtype)
    else:
        model = build_random(TINY if args.tiny else QWEN3_8B, dtype, device)
    build_s = time.perf_counter() - t0
    cfg = LearnerConfig(backend=args.engine, zero_stage=args.zero_stage, lora_r=args.lora_r, lora_alpha=args.lora_r,
                        dtype=args.dtype, kl_coef=args.kl_coef, micro_batch_tokens=args.micro_batch_tokens,
                        gradient_checkpointing=args.gradient_checkpointing, lr=1e-6,
                        prefix_sharing=args.prefix_sharing, logprob_chunk=args.logprob_chunk)
    learner = Learner(cfg, "", seed=0, base_model=model)
    batch = make_batch(args.tokens, args.seq_len, args.prompt_frac, model.config.vocab_size, seed=0,
                       shared_frac=args.shared_frac)

    learner.update(batch)  # warm-up: allocator, kernels, DeepSpeed buffers
    if device.type == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    times = []
    for _ in range(args.steps):
        start = time.perf_counter()
        metrics = learner.update(batch)
        if device.type == "cuda":
            torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    step_s = sorted(times)[len(times) // 2]
    tokens = metrics["tokens"]
    tok_s = tokens / step_s
    per_token = flops_per_token(model, (args.seq_len + 1) / 2, kl=args.kl_coef != 0.0)
    peak = peak_flops(args.peak_tflops)
    result = {
        "device": torch.cuda.get_device_name() if device.type == "cuda" else "cpu",
        "model": args.model or ("tiny-random" if args.tiny else "qwen3-8b-shape-random"),
        "params_b": sum(p.numel() for p in model.parameters()) / 1e9,
        "trainable_m": sum(p.numel() for p in learner.trainable_parameters().values()) / 1e6,
        "dtype": args.dtype, "engine": args.engine, "gradient_checkpointing": args.gradient_checkpointing,
        "prefix_sharing": args.prefix_sharing, "logprob_chunk": args.logprob_chunk,
        "batch_tokens": tokens, "micro_batches": metrics["micro_batches"], "build_s": round(build_s, 1),
        "step_s_median": round(step_s, 3), "tokens_per_s": round(tok_s, 1),
        "sample_tokens_per_s": round(sum(len(s) for s in batch) / step_s, 1),
        "loss_tokens_per_s": round(metrics["loss_tokens"] / step_s, 1),
        "tflops_per_s": round(per_token * tok_s / 1e12, 2),
        "mfu": round(per_token * tok_s / peak, 4) if peak else None,
        "peak_memory_gb": round(torch.cuda.max_memory_allocated() / 2**30, 2) if device.type == "cuda"
        else round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2),  # CPU: peak RSS
    }
    print(json.dumps(result, indent=1))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
