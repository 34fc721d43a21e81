"""A vLLM engine serving the actor's LoRA *merged* into the base weights (`rollout.lora_mode=merged`).

Why: the vLLM CPU build's LoRA ops gather a copy of the adapter weights for every token, so a LoRA
batch runs several times slower than the plain model (benchmarks/RESULTS.md, "Actor generation").
This engine has LoRA off; `load_adapter` merges W + scale * B @ A on the engine's worker (from the
base checkpoint and the saved adapter, aac/engines/lora_merge.py) and reloads the weights in place
through vLLM's layerwise reload, which also redoes the CPU build's weight packing. The prefix cache
is reset after each load: its KV blocks were computed with the old weights.

It serves one adapter, under its name; the base model is not served here (a request with
adapter=None is an error), so the critic and judges keep their own base engine.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any, Optional

from aac.engines.base import EngineError
from aac.engines.vllm_engine import VLLMEngine

WORKER_EXTENSION = f"{__name__}.MergedWeightsWorker"


class MergedWeightsWorker:
    """vLLM worker extension (`worker_extension_cls`): its methods run on the engine's worker."""

    def aac_load_merged(self, adapter_path: str) -> int:
        """Reload every weight, the adapted ones merged with the LoRA at `adapter_path`; returns how
        many were merged."""
        from aac.engines.lora_merge import Checkpoint, adapter_deltas, merged_checkpoint

        if not hasattr(self, "_aac_base"):
            self._aac_base = Checkpoint(self.vllm_config.model_config.model)
        deltas = adapter_deltas(adapter_path)
        # its "Failed to load weights" warnings name layers with no checkpoint weight of their own (the
        # rotary cache, a tied lm_head): they keep their tensors, as they should
        quiet = logging.getLogger("vllm.model_executor.model_loader.reload.layerwise")
        level = quiet.level
        quiet.setLevel(logging.ERROR)
        try:
            self.model_runner.reload_weights(weights_iterator=merged_checkpoint(deltas, self._aac_base),
                                             is_checkpoint_format=True)
        finally:
            quiet.setLevel(level)
        return len(deltas)


class MergedVLLMEngine(VLLMEngine):
    kind = "vllm"

    def __init__(self, model_path: str, **kwargs: Any) -> None:
        if not Path(model_path).is_dir():
            raise EngineError(f"the merged engine merges into a local model folder, got {model_path!r}")
        for lora_only in ("enable_lora", "max_lora_rank", "max_loras", "plain_base_batches", "identity_cache_dir"):
            kwargs.pop(lora_only, None)
        super().__init__(model_path, enable_lora=False, worker_extension_cls=WORKER_EXTENSION, **kwargs)
        self.merge_s = 0.0  # wall time of the last load_adapter

    def load_adapter(self, name: str, path: str, version: int) -> None:
        if not (Path(path) / "adapter_config.json").exists():
            raise EngineError(f"not a peft adapter folder (no adapter_config.json): {path}")
        started = time.perf_counter()

        def load() -> None:
            self._no_streams("load_adapter")
            self.llm.collective_rpc("aac_load_merged", args=(str(path),))
            if not self.llm.reset_prefix_cache():
                raise EngineError("vLLM could not reset its prefix cache after new weights were loaded")
            self._adapters = {name: (version, None)}  # the weights now hold this adapter only

        self._when_idle(load)
        self.merge_s = time.perf_counter() - started

    def _lora(self, adapter: Optional[str]) -> tuple[Any, Optional[int]]:
        if adapter is None:
            raise EngineError("the merged engine serves its adapter only; the base model is served by the "
                              "base engine")
        entry = self._adapters.get(adapter)
        if entry is None:
            raise EngineError(f"adapter {adapter!r} is not loaded (loaded: {sorted(self._adapters) or 'none'})")
        return None, entry[0]
