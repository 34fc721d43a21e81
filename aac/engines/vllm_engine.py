"""In-process vLLM engine (CPU build or CUDA) serving the base model and LoRA adapters at once.

One engine serves the actor (base + current adapter) and the critic (base, adapter off) in the same
batch. vLLM has been seen applying an adapter to the *no-adapter* requests of a batch that mixes both
(reported on the CPU build; our own greedy checks on SmolLM2 and tiny Qwen3 did not reproduce it), so
with LoRA enabled every base-model request of a mixed batch goes through an identity adapter instead: a LoRA with zero weights in its own, pinned slot, whose output is exactly the base's.
`max_loras` counts the user's adapters; the engine adds the identity's slot.

The identity route has a price on CPU: the CPU build's LoRA ops gather a copy of the adapter weights
for every token, so every base token pays for LoRA (measured on SmolLM2: a batch of 16 critic prompts
4.9x slower than with LoRA off, and no faster than one request at a time; benchmarks/RESULTS.md).
`plain_base_batches` therefore runs a generate call whose requests ALL use the base model with no
LoRA at all; mixed batches still route base requests through the identity adapter. Default (None):
on for the CPU build, where it is exact even right after adapter batches (tests/test_engines.py);
off on GPUs, where LoRA kernels are cheap and vLLM #42008 reports stale adapter deltas on exactly
such batches (MoE models).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import logging
import os
import threading
import time
from pathlib import Path
from typing import Any, Optional

from aac.engines.base import (
    Engine,
    EngineError,
    GenRequest,
    GenResult,
    Sampling,
    TokenLogprobs,
    candidate_token_ids,
    merge_candidates,
    render_chat,
    too_long,
    too_long_logprobs,
)
from aac.engines.cpu_threads import omp_threads, vllm_cpu_bind

log = logging.getLogger(__name__)

IDENTITY_NAME = "__identity__"
IDENTITY_ID = 1
_IDENTITY_TARGETS = ("q_proj", "qkv_proj", "c_attn", "query_key_value")


def identity_adapter(model_path: str, cache_dir: Optional[Path] = None) -> str:
    """A peft LoRA folder for `model_path` whose weights are all zero, built once into a cache.

    Built from the model's config on the meta device (no weights loaded), rank 1 on the attention
    query projection of every layer: the adapter adds exactly 0, so outputs are the base model's."""
    from aac.models import aac_home, atomic_build

    config_text = (Path(model_path) / "config.json").read_text() if Path(model_path).is_dir() else model_path
    digest = hashlib.sha256(config_text.encode()).hexdigest()[:16]
    target = (cache_dir or aac_home() / "adapters") / f"identity-{digest}"
    if (target / "adapter_model.safetensors").exists():
        return str(target)
    atomic_build(target, lambda out: _write_identity(model_path, out), marker="adapter_model.safetensors")
    return str(target)


def _write_identity(model_path: str, out: Path) -> None:
    import torch
    from peft import LoraConfig
    from safetensors.torch import save_file
    from transformers import AutoConfig, AutoModelForCausalLM

    config = AutoConfig.from_pretrained(model_path)
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config)
    tensors: dict[str, torch.Tensor] = {}
    for suffix in _IDENTITY_TARGETS:
        for name, module in model.named_modules():
            if name.endswith("." + suffix) and isinstance(module, torch.nn.Linear):
                prefix = f"base_model.model.{name}"
                tensors[f"{prefix}.lora_A.weight"] = torch.zeros(1, module.in_features)
                tensors[f"{prefix}.lora_B.weight"] = torch.zeros(module.out_features, 1)
        if tensors:
            break
    if not tensors:
        raise EngineError(f"cannot build an identity adapter for {model_path}: no layer named "
                          f"{' / '.join(_IDENTITY_TARGETS)}")
    save_file(tensors, str(out / "adapter_model.safetensors"))
    LoraConfig(r=1, lora_alpha=1, target_modules=[suffix], lora_dropout=0.0,
               base_model_name_or_path=str(model_path)).save_pretrained(str(out))


def _on_cpu() -> bool:
    from vllm.platforms import current_platform

    return current_platform.is_cpu()


class VLLMEngine(Engine):
    kind = "vllm"

    def __init__(self, model_path: str, *, dtype: str = "float32", max_model_len: int = 2048,
                 chat_template_kwargs: Optional[dict] = None, enable_lora: bool = True, max_lora_rank: int = 16,
                 max_loras: int = 2, seed: int = 0, kv_cache_gb: Optional[float] = None,
                 gpu_memory_utilization: float = 0.45, enforce_eager: bool = True,
                 identity_cache_dir: Optional[str] = None, plain_base_batches: Optional[bool] = None,
                 cpu_threads: Optional[int] = None, in_process: Optional[bool] = None, **llm_kwargs: Any) -> None:
        super().__init__()
        import torch

        if kv_cache_gb is not None:  # read by the CPU build when the engine process starts
            os.environ["VLLM_CPU_KVCACHE_SPACE"] = str(kv_cache_gb)
        in_process = _on_cpu() if in_process is None else in_process
        # in_process: the engine core and its worker run here, not in two processes of their own (which
        # each import vLLM again and hand every decode step across shared memory): on 2 CPU cores the
        # start-up costs half the CPU seconds and a decode step ~10% less (benchmarks/RESULTS.md)
        os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0" if in_process else "1"
        if in_process and _on_cpu():
            torch.set_num_threads(omp_threads(cpu_threads))
        elif cpu_threads is not None:  # a worker process of its own: its threads on the first cores
            os.environ["VLLM_CPU_OMP_THREADS_BIND"] = vllm_cpu_bind(cpu_threads)
        from vllm import LLM

        kwargs: dict[str, Any] = dict(model=str(model_path), dtype=dtype, max_model_len=max_model_len, seed=seed,
                                      enforce_eager=enforce_eager, **llm_kwargs)
        if not _on_cpu():
            kwargs["gpu_memory_utilization"] = gpu_memory_utilization
        if enable_lora:
            kwargs.update(enable_lora=True, max_lora_rank=max_lora_rank, max_loras=max_loras + 1)
        started = time.perf_counter()
        set_num_threads = torch.set_num_threads
        self.llm = LLM(**kwargs)
        # vLLM's CPU worker disables torch.set_num_threads for the whole process to protect its thread
        # binding; an in-process engine binds nothing, and the rest of the process keeps the call
        torch.set_num_threads = set_num_threads
        self.start_s = time.perf_counter() - started
        self.tokenizer = self.llm.get_tokenizer()
        self.chat_template_kwargs = dict(chat_template_kwargs or {})
        self.enable_lora = enable_lora
        self.plain_base_batches = _on_cpu() if plain_base_batches is None else plain_base_batches
        self.max_model_len = max_model_len
        self._lock = threading.Lock()  # vLLM's LLM is not safe to call from two threads at once
        self.max_lora_rank = max_lora_rank
        self._ids = itertools.count(IDENTITY_ID + 1)
        self._adapters: dict[str, tuple[int, Any]] = {}  # name -> (version, LoRARequest)
        self._identity = None
        if enable_lora:
            from vllm.lora.request import LoRARequest

            path = identity_adapter(str(model_path), Path(identity_cache_dir) if identity_cache_dir else None)
            self._identity = LoRARequest(IDENTITY_NAME, IDENTITY_ID, path)
            engine = self.llm.llm_engine
            if not engine.add_lora(self._identity):
                raise EngineError(f"vLLM refused the identity adapter at {path}")
            engine.pin_lora(IDENTITY_ID)
        log.info("vLLM engine ready in %.1f s (lora=%s)", self.start_s, enable_lora)

    # ------------------------------------------------------------------ adapters
    def load_adapter(self, name: str, path: str, version: int) -> None:
        if not self.enable_lora:
            raise EngineError("this vLLM engine was built with enable_lora=False")
        if name == IDENTITY_NAME:
            raise EngineError(f"adapter name {IDENTITY_NAME!r} is reserved")
        config_file = Path(path) / "adapter_config.json"
        if not config_file.exists():
            raise EngineError(f"not a peft adapter folder (no adapter_config.json): {path}")
        rank = json.loads(config_file.read_text()).get("r", 0)
        if rank > self.max_lora_rank:
            raise EngineError(f"adapter {name} has rank {rank} > max_lora_rank={self.max_lora_rank}")
        from vllm.lora.request import LoRARequest

        request = LoRARequest(f"{name}@v{version}", next(self._ids), str(path))
        engine = self.llm.llm_engine
        with self._lock:
            if not engine.add_lora(request):
                raise EngineError(f"vLLM could not load adapter {name} v{version} from {path}")
            old = self._adapters.get(name)
            self._adapters[name] = (version, request)
            if old is not None:
                engine.remove_lora(old[1].lora_int_id)

    def adapter_version(self, name: str) -> Optional[int]:
        entry = self._adapters.get(name)
        return entry[0] if entry else None

    def _lora(self, adapter: Optional[str]) -> tuple[Any, Optional[int]]:
        if adapter is None:
            return self._identity, None
        entry = self._adapters.get(adapter)
        if entry is None:
            raise EngineError(f"adapter {adapter!r} is not loaded (loaded: {sorted(self._adapters) or 'none'})")
        return entry[1], entry[0]

    def _use_lora(self, any_adapter: bool) -> bool:
        return self.enable_lora and (any_adapter or not self.plain_base_batches)

    # ------------------------------------------------------------------ generation
    @staticmethod
    def _params(s: Sampling, room: int) -> Any:
        from vllm import SamplingParams

        # logprobs=0: only the sampled token's; vLLM's default logprobs_mode "raw_logprobs" makes it
        # the temperature-1.0 log-prob (before temperature / top-p), as the module docstring promises
        return SamplingParams(temperature=s.temperature, top_p=s.top_p, max_tokens=min(s.max_tokens, room), seed=s.seed,
                              logprobs=0 if s.logprobs else None, stop=list(s.stop) if s.stop else None)

    def generate(self, requests: list[GenRequest]) -> list[GenResult]:
        if not requests:
            return []
        started = time.perf_counter()
        from vllm.inputs import TokensPrompt

        prompt_ids = [render_chat(self.tokenizer, r.messages, self.chat_template_kwargs) for r in requests]
        results: list[Optional[GenResult]] = [None] * len(requests)
        run = []  # vLLM rejects a whole batch over one overlong prompt: answer those apart
        for i, (req, ids) in enumerate(zip(requests, prompt_ids)):
            if len(ids) >= self.max_model_len:
                results[i] = too_long(req, ids, self.max_model_len)
            else:
                run.append(i)
        with self._lock:  # adapters resolved under the lock: a concurrent hot-load cannot swap them
            loras = [self._lora(r.adapter) for r in requests]
            use_lora = self._use_lora(any(requests[i].adapter is not None for i in run))
            outputs = self.llm.generate(
                [TokensPrompt(prompt_token_ids=prompt_ids[i]) for i in run],
                [self._params(requests[i].sampling, self.max_model_len - len(prompt_ids[i])) for i in run],
                lora_request=[loras[i][0] for i in run] if use_lora else None, use_tqdm=False,
            ) if run else []
        for i, out in zip(run, outputs):
            req, o = requests[i], out.outputs[0]
            tokens = list(o.token_ids)
            lps = [step[t].logprob for t, step in zip(tokens, o.logprobs)] if req.sampling.logprobs else None
            finish = "length" if o.finish_reason == "length" else "stop"
            results[i] = GenResult(text=o.text, prompt_ids=prompt_ids[i], token_ids=tokens, logprobs=lps,
                                   finish_reason=finish, adapter=req.adapter, adapter_version=loras[i][1])
        done = [r for r in results if r is not None]
        self._account(done, started)
        return done

    def next_token_logprobs(self, requests: list[GenRequest], candidates: list[str]) -> list[TokenLogprobs]:
        if not requests:
            return []
        started = time.perf_counter()
        from vllm import SamplingParams
        from vllm.inputs import TokensPrompt

        ids = candidate_token_ids(self.tokenizer, candidates)
        # logprob_token_ids: the exact raw log-probs of just these tokens (not a top-k); one token decoded
        params = SamplingParams(max_tokens=1, temperature=0.0,
                                logprob_token_ids=sorted({t for spellings in ids.values() for t in spellings}))
        prompt_ids = [render_chat(self.tokenizer, r.messages, self.chat_template_kwargs) for r in requests]
        results: list[Optional[TokenLogprobs]] = [
            too_long_logprobs(p, self.max_model_len) if len(p) >= self.max_model_len else None for p in prompt_ids]
        run = [i for i, r in enumerate(results) if r is None]
        with self._lock:
            loras = [self._lora(r.adapter)[0] for r in requests]
            use_lora = self._use_lora(any(requests[i].adapter is not None for i in run))
            outputs = self.llm.generate([TokensPrompt(prompt_token_ids=prompt_ids[i]) for i in run], params,
                                        lora_request=[loras[i] for i in run] if use_lora else None,
                                        use_tqdm=False) if run else []
        for i, out in zip(run, outputs):
            step = out.outputs[0].logprobs[0]
            results[i] = TokenLogprobs(merge_candidates({t: lp.logprob for t, lp in step.items()}, ids), prompt_ids[i])
        done = [r for r in results if r is not None]
        self._account_next_token(done, started)
        return done

    def score(self, prompt_ids: list[int], completion_ids: list[int], adapter: Optional[str]) -> list[float]:
        if not completion_ids:
            return []
        from vllm import SamplingParams
        from vllm.inputs import TokensPrompt

        # prompt_logprobs=0 returns each prompt token's own log-prob; the one generated token is ignored
        params = SamplingParams(max_tokens=1, temperature=0.0, prompt_logprobs=0)
        with self._lock:
            lora, _ = self._lora(adapter)
            out = self.llm.generate([TokensPrompt(prompt_token_ids=list(prompt_ids) + list(completion_ids))], params,
                                    lora_request=lora if self._use_lora(adapter is not None) else None,
                                    use_tqdm=False)[0]
        tail = out.prompt_logprobs[len(prompt_ids):]
        return [step[t].logprob for t, step in zip(completion_ids, tail)]

    def close(self) -> None:
        llm = getattr(self, "llm", None)
        if llm is None:
            return
        self.llm = None
        try:
            llm.llm_engine.engine_core.shutdown()
        except Exception as e:  # shutting down twice or after a crash: nothing left to free
            log.debug("vLLM shutdown: %s", e)
        del llm
