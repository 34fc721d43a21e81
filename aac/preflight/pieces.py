"""What each piece of a built run holds, asked where the piece lives (its Ray actor or this process):
its process's peak memory (and the GPU's), the engine's KV cache, the learner's attention kernel."""

from __future__ import annotations

import os
import resource
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Optional, TypeVar

if TYPE_CHECKING:
    from aac.learner.learner import Learner

T = TypeVar("T")

GiB = 2**30


def inside(handle: object, fn: Callable[[Any], T]) -> T:
    """`fn(obj)` run where the piece lives: in its Ray actor (`handle` is an actor handle) or here."""
    if hasattr(handle, "__ray_call__"):
        import ray

        return ray.get(handle.__ray_call__.remote(fn))
    return fn(handle)


def memory(_: object = None) -> dict[str, Any]:
    """This process's peak resident memory and, on a GPU, the peak torch allocated on it and what the
    device holds in all (vLLM's KV cache included)."""
    import torch

    out: dict[str, Any] = {"pid": os.getpid(), "peak_rss_gb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / GiB, 2)}
    if torch.cuda.is_available():
        free, total = torch.cuda.mem_get_info()
        out.update(gpu=torch.cuda.get_device_name(), gpu_peak_allocated_gb=round(torch.cuda.max_memory_allocated() / GiB, 2),
                   gpu_used_gb=round((total - free) / GiB, 2), gpu_total_gb=round(total / GiB, 2))
    return out


def kv_cache(engine: object) -> Optional[dict[str, Any]]:
    """A vLLM engine's KV cache: its blocks, the tokens they hold and their size; None for other engines
    (HF generate grows a cache per call, an endpoint's is not ours to see)."""
    engine = getattr(engine, "engine", engine)  # an EngineHost serves its engine
    llm = getattr(engine, "llm", None)
    if llm is None:
        return None
    config = llm.llm_engine.vllm_config
    cache, model = config.cache_config, config.model_config
    blocks = cache.num_gpu_blocks
    if not blocks:  # the engine core lives in a process of its own and kept the number there
        return {"blocks": None, "tokens": None, "gb": None}
    hf = model.hf_config
    heads = getattr(hf, "num_key_value_heads", None) or hf.num_attention_heads
    head_dim = getattr(hf, "head_dim", None) or hf.hidden_size // hf.num_attention_heads
    per_token = 2 * hf.num_hidden_layers * heads * head_dim * model.dtype.itemsize  # keys and values
    tokens = blocks * cache.block_size
    return {"blocks": blocks, "tokens": tokens, "gb": round(tokens * per_token / GiB, 2),
            "max_model_len": model.max_model_len}


def engine_report(engine: object) -> dict[str, Any]:
    """Memory and KV cache of the engine (an EngineHost's or a local engine) in its process."""
    return {**memory(), "kv_cache": kv_cache(engine), "kind": getattr(getattr(engine, "engine", engine), "kind", "?")}


def learner_report(learner: Learner) -> dict[str, Any]:
    """Memory of the learner's process and the attention kernel its update runs."""
    from aac.learner.tree_attention import kernel_in_use

    cfg = learner.cfg
    if cfg.prefix_sharing:
        dtype = next(p.dtype for p in learner.policy.parameters() if not p.requires_grad)
        kernel = "prefix tree: " + kernel_in_use(learner.policy.config, learner.device, dtype)
    else:
        kernel = f"padded rows: {learner.policy.config._attn_implementation}"
    return {**memory(), "attention": kernel, "micro_batch_tokens": cfg.micro_batch_tokens,
            "device": str(learner.device)}
