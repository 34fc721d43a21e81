"""Building an engine by kind (`vllm` | `hf` | `openai`), directly or from a run's config sections."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

from aac.config import EngineKind
from aac.engines.base import Engine

if TYPE_CHECKING:
    from aac.config import ModelConfig, RolloutConfig


def make_engine(kind: str, model_path: str, *, dtype: str = "float32", max_model_len: int = 2048,
                chat_template_kwargs: Optional[dict] = None, enable_lora: bool = True, max_lora_rank: int = 16,
                max_loras: int = 2, seed: int = 0, lora_mode: str = "adapter", **backend_kwargs: Any) -> Engine:
    """Build an engine. `backend_kwargs` go to the backend's constructor (e.g. `kv_cache_gb` for vllm,
    `openai=OpenAIConfig(...)` for openai). `lora_mode="merged"` with vllm and LoRA on: the engine
    serves one adapter merged into its weights (aac/engines/vllm_merged.py)."""
    common = dict(dtype=dtype, max_model_len=max_model_len, chat_template_kwargs=chat_template_kwargs,
                  enable_lora=enable_lora, max_lora_rank=max_lora_rank, max_loras=max_loras, seed=seed)
    if kind == "vllm" and enable_lora and lora_mode == "merged":
        from aac.engines.vllm_merged import MergedVLLMEngine

        return MergedVLLMEngine(model_path, **common, **backend_kwargs)
    if kind == "vllm":
        from aac.engines.vllm_engine import VLLMEngine

        return VLLMEngine(model_path, **common, **backend_kwargs)
    if kind == "hf":
        from aac.engines.hf_engine import HFEngine

        return HFEngine(model_path, **common, **backend_kwargs)
    if kind == "openai":
        from aac.engines.openai_engine import OpenAIEngine

        return OpenAIEngine(model_path, chat_template_kwargs=chat_template_kwargs, seed=seed, **backend_kwargs)
    raise ValueError(f"unknown engine kind {kind!r}: expected one of {', '.join(EngineKind)}")


def engine_from_config(model_cfg: ModelConfig, rollout_cfg: RolloutConfig, seed: int = 0, **overrides: Any) -> Engine:
    """The rollout engine of a run, from `ModelConfig` and `RolloutConfig` (aac/config.py)."""
    from aac.models import REGISTRY, chat_template_kwargs, resolve_model

    kind = overrides.pop("kind", rollout_cfg.engine)
    kwargs: dict[str, Any] = dict(
        dtype=model_cfg.dtype, max_model_len=model_cfg.max_model_len,
        chat_template_kwargs=chat_template_kwargs(model_cfg.name, dict(model_cfg.chat_template_kwargs)),
        max_lora_rank=rollout_cfg.max_lora_rank, max_loras=rollout_cfg.max_loras, seed=seed)
    if kind == "vllm":
        kwargs.update(kv_cache_gb=rollout_cfg.kv_cache_gb, enforce_eager=rollout_cfg.enforce_eager,
                      gpu_memory_utilization=rollout_cfg.gpu_memory_utilization,
                      # requested RolloutConfig field; None = on for the CPU build (vllm_engine.py)
                      plain_base_batches=rollout_cfg.plain_base_batches, lora_mode=rollout_cfg.lora_mode,
                      cpu_threads=rollout_cfg.cpu_threads, in_process=rollout_cfg.vllm_in_process,
                      per_request_seeds=rollout_cfg.per_request_seeds)
        if overrides.get("tensor_parallel_size", 1) > 1:
            # the shards run as processes of the engine's own, on the GPUs its host sees (the host holds
            # them all, aac/placement.py), not as Ray actors, which would ask Ray for GPUs the host holds
            kwargs.update(distributed_executor_backend="mp")
    elif kind == "openai":
        kwargs = dict(chat_template_kwargs=kwargs["chat_template_kwargs"], seed=seed, openai=rollout_cfg.openai)
    # `model_path`: the local folder the run's driver resolved `model_cfg.name` to (aac.models.local_model)
    path = overrides.pop("model_path", None)
    kwargs.update(overrides)
    # an endpoint knows a model by its served name: nothing is built or loaded here
    name = model_cfg.name
    model = (REGISTRY[name].source if name in REGISTRY else name) if kind == "openai" else path or resolve_model(name)
    return make_engine(kind, model, **kwargs)
