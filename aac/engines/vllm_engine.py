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

One thread drives vLLM (`_loop`): it steps the engine while any request is unfinished, whether or not
a call is waiting, and between two steps runs the calls' work (adding their requests, loading an
adapter) in the order it came. Callers (any number of threads: an engine host serves the critic's
calls beside the actor's) hand it that work and wait for their outputs, which wait in `_finished`
until claimed. So `submit` / `collect` stream (a turn's reply comes back while others decode), and a
critic batch shares the engine's steps with the actor's turns instead of stalling them. Plain (LoRA
off) and LoRA requests never share a step (the mixed-batch pitfall above): whichever kind comes
second waits until the other's requests in flight are done. An adapter load waits until nothing is
in flight, and what comes after it waits for the load.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import logging
import os
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

from aac.engines.base import (
    Engine,
    EngineError,
    GenRequest,
    GenResult,
    Sampling,
    TokenLogprobs,
    candidate_token_ids,
    merge_candidates,
    prompt_tokens,
    too_long,
    too_long_logprobs,
)
from aac.engines.cpu_threads import omp_threads, vllm_cpu_bind

if TYPE_CHECKING:
    from vllm import LLM

log = logging.getLogger(__name__)
CLOSE_JOIN_S = 60  # the engine loop's longest wait for its step at close

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


def _drop_stale_groups() -> None:
    """vLLM keeps its process groups in module globals. Once torch's default group is destroyed under them (a
    learner's collective in this process closed it), they are stale, and an engine started in this process would
    take them for its own ("pipeline model parallel group is not initialized"): dropped, so it makes new ones.
    They are not destroyed: torch no longer knows them."""
    import torch.distributed as dist
    from vllm.distributed import parallel_state

    if dist.is_available() and not dist.is_initialized():
        for name, value in list(vars(parallel_state).items()):
            if isinstance(value, parallel_state.GroupCoordinator):
                setattr(parallel_state, name, None)


def _start_llm(model_path: str, *, dtype: str, max_model_len: int, seed: int, enable_lora: bool, max_lora_rank: int,
               max_loras: int, kv_cache_gb: Optional[float], gpu_memory_utilization: float,
               enforce_eager: Optional[bool], cpu_threads: Optional[int], in_process: Optional[bool],
               **llm_kwargs: Any) -> tuple[LLM, float]:
    """vLLM's `LLM` for `model_path` and its start-up seconds: where its engine core runs and on which threads,
    its KV cache and LoRA slots, set before it starts."""
    import torch

    if kv_cache_gb is not None:  # read by the CPU build when the engine process starts
        os.environ["VLLM_CPU_KVCACHE_SPACE"] = str(kv_cache_gb)
    in_process = _on_cpu() if in_process is None else in_process
    # in_process: the engine core and its worker run here, not in two processes of their own (which
    # each import vLLM again and hand every decode step across shared memory): on 2 CPU cores the
    # start-up costs half the CPU seconds and a decode step ~10% less (benchmarks/RESULTS.md)
    os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0" if in_process else "1"
    if in_process:
        _drop_stale_groups()
    if in_process and _on_cpu():
        torch.set_num_threads(omp_threads(cpu_threads))
    elif cpu_threads is not None:  # a worker process of its own: its threads on the first cores
        os.environ["VLLM_CPU_OMP_THREADS_BIND"] = vllm_cpu_bind(cpu_threads)
    from vllm import LLM

    # None: eager on the CPU build (it has no CUDA graphs), graphs on GPU
    enforce_eager = _on_cpu() if enforce_eager is None else enforce_eager
    kwargs: dict[str, Any] = dict(model=str(model_path), dtype=dtype, max_model_len=max_model_len, seed=seed,
                                  enforce_eager=enforce_eager, **llm_kwargs)
    if not _on_cpu():
        kwargs["gpu_memory_utilization"] = gpu_memory_utilization
    if enable_lora:
        kwargs.update(enable_lora=True, max_lora_rank=max_lora_rank, max_loras=max_loras + 1)
    started = time.perf_counter()
    set_num_threads = torch.set_num_threads
    llm = LLM(**kwargs)
    # vLLM's CPU worker disables torch.set_num_threads for the whole process to protect its thread
    # binding; an in-process engine binds nothing, and the rest of the process keeps the call
    torch.set_num_threads = set_num_threads
    return llm, time.perf_counter() - started


class VLLMEngine(Engine):
    kind = "vllm"
    concurrent = True  # calls from any number of threads share the engine loop

    def __init__(self, model_path: str, *, dtype: str = "float32", max_model_len: int = 2048,
                 chat_template_kwargs: Optional[dict] = None, enable_lora: bool = True, max_lora_rank: int = 16,
                 max_loras: int = 2, seed: int = 0, kv_cache_gb: Optional[float] = None,
                 gpu_memory_utilization: float = 0.45, enforce_eager: Optional[bool] = None,
                 identity_cache_dir: Optional[str] = None, plain_base_batches: Optional[bool] = None,
                 cpu_threads: Optional[int] = None, in_process: Optional[bool] = None,
                 per_request_seeds: Optional[bool] = None, **llm_kwargs: Any) -> None:
        super().__init__()
        self.llm, self.start_s = _start_llm(
            model_path, dtype=dtype, max_model_len=max_model_len, seed=seed, enable_lora=enable_lora,
            max_lora_rank=max_lora_rank, max_loras=max_loras, kv_cache_gb=kv_cache_gb,
            gpu_memory_utilization=gpu_memory_utilization, enforce_eager=enforce_eager, cpu_threads=cpu_threads,
            in_process=in_process, **llm_kwargs)
        self.tokenizer = self.llm.get_tokenizer()
        self.chat_template_kwargs = dict(chat_template_kwargs or {})
        self.enable_lora = enable_lora
        self.plain_base_batches = _on_cpu() if plain_base_batches is None else plain_base_batches
        # a request's seed gives it its own generator, which vLLM's sampler serves one request at a time;
        # without, the batch samples from the engine's generator (seeded by `seed`) in one draw
        self.per_request_seeds = _on_cpu() if per_request_seeds is None else per_request_seeds
        self.max_model_len = max_model_len
        # guards what the calls and the loop share (below); vLLM itself is driven by the loop thread only
        self._cv = threading.Condition()
        self._tokenize = threading.Lock()  # chat templates rendered one at a time (a fast tokenizer is not re-entrant)
        self._work: deque[tuple[Callable[[], Any], Future, Callable[[], bool]]] = deque()  # (work, its result, blocked)
        self._live: dict[str, bool] = {}  # request id in vLLM -> whether it runs with LoRA
        self._stopped: Optional[str] = None  # why the loop ended (closed, or vLLM failed): calls fail with it
        self.max_lora_rank = max_lora_rank
        self._ids = itertools.count(IDENTITY_ID + 1)
        self._adapters: dict[str, tuple[int, Any]] = {}  # name -> (version, LoRARequest)
        self._identity = None
        self._streams: dict[Any, tuple[GenRequest, list[int], Optional[int]]] = {}  # submitted, not collected
        self._finished: dict[Any, Any] = {}  # finished vLLM outputs not yet claimed (None: too long)
        self._too_long = itertools.count()
        self._request_ids = itertools.count()
        if enable_lora:
            from vllm.lora.request import LoRARequest

            path = identity_adapter(str(model_path), Path(identity_cache_dir) if identity_cache_dir else None)
            self._identity = LoRARequest(IDENTITY_NAME, IDENTITY_ID, path)
            engine = self.llm.llm_engine
            if not engine.add_lora(self._identity):
                raise EngineError(f"vLLM refused the identity adapter at {path}")
            engine.pin_lora(IDENTITY_ID)
        self._thread = threading.Thread(target=self._loop, name="aac-vllm-loop", daemon=True)
        self._thread.start()
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

        def load() -> None:
            self._no_streams("load_adapter")
            if not engine.add_lora(request):
                raise EngineError(f"vLLM could not load adapter {name} v{version} from {path}")
            old = self._adapters.get(name)
            self._adapters[name] = (version, request)
            if old is not None:
                engine.remove_lora(old[1].lora_int_id)

        self._when_idle(load)

    def _no_streams(self, what: str) -> None:
        """New weights under requests in flight would serve one reply with two models."""
        if self._streams:
            raise EngineError(f"{what} with {len(self._streams)} submitted request(s) not yet collected")

    def adapter_version(self, name: str) -> Optional[int]:
        with self._cv:
            entry = self._adapters.get(name)
        return entry[0] if entry else None

    # ------------------------------------------------------------------ the engine loop
    def _loop(self) -> None:
        """Step vLLM while any request is unfinished; between steps, run the calls' work in order (the
        first that is blocked holds the rest back). Ends at `close`, or when vLLM fails."""
        engine = self.llm.llm_engine
        try:
            while True:
                with self._cv:
                    self._cv.wait_for(lambda: self._stopped or self._work or self._live)
                    if self._stopped:
                        return
                    while self._work and not self._work[0][2]():
                        work, result, _ = self._work.popleft()
                        try:
                            result.set_result(work())
                        except BaseException as e:  # the caller's error (an unknown adapter, ...)
                            result.set_exception(e)
                    if not self._live:
                        continue
                outputs = engine.step()
                with self._cv:
                    for out in outputs:
                        if out.finished:
                            self._finished[out.request_id] = out
                            self._live.pop(out.request_id, None)
                    if not engine.has_unfinished_requests() and self._live:
                        raise EngineError(f"vLLM finished without {len(self._live)} request(s)")
                    self._cv.notify_all()
        except BaseException as e:
            log.error("the vLLM engine loop stopped: %s", e)
            with self._cv:
                self._stopped = f"the vLLM engine loop stopped: {type(e).__name__}: {e}"
                self._cv.notify_all()
        finally:
            with self._cv:
                for _, result, _ in self._work:
                    result.set_exception(EngineError(self._stopped or "the vLLM engine was closed"))
                self._work.clear()

    def _on_loop(self, work: Callable[[], object], blocked: Callable[[], bool] = lambda: False) -> Any:
        """`work()` run by the loop thread between two steps, once `blocked()` is false (both under the
        condition, after the work handed in before it); its result or error."""
        result: Future = Future()
        with self._cv:
            self._alive()
            self._work.append((work, result, blocked))
            self._cv.notify_all()
        return result.result()

    def _when_idle(self, work: Callable[[], object]) -> Any:
        """`work` once no request is in flight: new weights under requests in flight would serve one
        reply with two models."""
        return self._on_loop(work, lambda: bool(self._live))

    def _alive(self) -> None:
        if self._stopped:
            raise EngineError(self._stopped)

    def _wait(self, ids: list[object], *, every: bool) -> None:
        """Until every one (every=False: some) of `ids` is in `_finished`. Under the condition."""
        done = all if every else any
        self._cv.wait_for(lambda: self._stopped or done(i in self._finished for i in ids))
        self._alive()

    def _add(self, prompt_ids: list[list[int]], params: Any, loras: Callable[[], Optional[list[Any]]]) -> list[str]:
        """Add requests to vLLM from the loop, with the LoRA requests `loras()` picks there (None: LoRA
        off); they wait while requests of the other kind are in flight. Their request ids."""
        picked: list[Any] = []  # loras()'s answer (or its error), asked once the call is next in line

        def blocked() -> bool:
            if not picked:
                try:
                    picked.append(loras())
                except Exception as e:  # the call's to raise, not the loop's
                    picked.append(e)
            if isinstance(picked[0], Exception):
                return False
            use = picked[0] is not None
            return any(lora != use for lora in self._live.values())

        def add() -> list[str]:
            if isinstance(picked[0], Exception):
                raise picked[0]
            return self._enqueue(prompt_ids, params, picked[0])

        return self._on_loop(add, blocked)

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
    def _params(self, s: Sampling, room: int) -> Any:
        from vllm import SamplingParams

        # logprobs=0: only the sampled token's; vLLM's default logprobs_mode "raw_logprobs" makes it
        # the temperature-1.0 log-prob (before temperature / top-p), as the module docstring promises
        return SamplingParams(temperature=s.temperature, top_p=s.top_p, max_tokens=min(s.max_tokens, room),
                              seed=s.seed if self.per_request_seeds else None,
                              logprobs=0 if s.logprobs else None, stop=list(s.stop) if s.stop else None,
                              include_stop_str_in_output=s.include_stop)

    def _sampling_params(self, requests: list[GenRequest], prompt_ids: list[list[int]], run: list[int]) -> list[Any]:
        """The SamplingParams of the requests that run, each capped at the room its prompt leaves."""
        return [self._params(requests[i].sampling, self.max_model_len - len(prompt_ids[i])) for i in run]

    def _prepare(self, requests: list[GenRequest]) -> tuple[list[list[int]], list[int]]:
        """Prompt ids per request, and the indices that fit (vLLM rejects a whole batch over one
        overlong prompt: those are answered apart, the others still run)."""
        with self._tokenize:
            prompt_ids = [prompt_tokens(self.tokenizer, r, self.chat_template_kwargs) for r in requests]
        return prompt_ids, [i for i, ids in enumerate(prompt_ids) if len(ids) < self.max_model_len]

    def _enqueue(self, prompt_ids: list[list[int]], params: Any, loras: Optional[list[Any]]) -> list[str]:
        """Add requests to the engine (not run yet); returns their request ids, which its outputs
        carry. On the loop thread."""
        from vllm.inputs import TokensPrompt
        from vllm.sampling_params import RequestOutputKind

        engine, ids = self.llm.llm_engine, []
        try:
            for i, prompt in enumerate(prompt_ids):
                p = params[i] if isinstance(params, list) else params.clone()
                p.output_kind = RequestOutputKind.FINAL_ONLY  # the finished output only, as LLM.generate asks
                request_id = f"aac-{next(self._request_ids)}"
                engine.add_request(request_id, TokensPrompt(prompt_token_ids=prompt), p,
                                   lora_request=loras[i] if loras else None)
                ids.append(request_id)
        except Exception:
            if ids:  # none of a batch that failed stays in the engine
                engine.abort_request(ids)
            raise
        self._live.update(dict.fromkeys(ids, loras is not None))
        return ids

    def _run(self, prompt_ids: list[list[int]], params: Any, loras: Callable[[], Optional[list[Any]]]) -> list[Any]:
        """vLLM's outputs for these prompts, in order (what `LLM.generate` does, beside other callers'
        requests in flight)."""
        ids = self._add(prompt_ids, params, loras)
        with self._cv:
            self._wait(ids, every=True)
            return [self._finished.pop(i) for i in ids]

    def _batch_lora(self, any_adapter: bool) -> bool:
        """Whether a batch runs with LoRA requests: also when LoRA requests are in flight (a stream
        always uses LoRA, see `submit`), which it may then share steps with rather than wait for."""
        return self._use_lora(any_adapter or bool(self._streams) or any(self._live.values()))

    @staticmethod
    def _result(req: GenRequest, prompt_ids: list[int], out: Any, version: Optional[int]) -> GenResult:
        o = out.outputs[0]
        tokens = list(o.token_ids)
        lps = [step[t].logprob for t, step in zip(tokens, o.logprobs)] if req.sampling.logprobs else None
        return GenResult(text=o.text, prompt_ids=prompt_ids, token_ids=tokens, logprobs=lps,
                         finish_reason="length" if o.finish_reason == "length" else "stop",
                         adapter=req.adapter, adapter_version=version)

    def _picker(self, requests: list[GenRequest], run: list[int], use_lora: Callable[[], bool]
                ) -> tuple[list[tuple[Any, Optional[int]]], Callable[[], Optional[list[Any]]]]:
        """The `loras` callable `_add` asks on the loop (the LoRA requests of `run`, or None where `use_lora()`
        says LoRA is off), and the list of each request's (LoRA request, version) it fills there. Adapters are
        resolved on the loop, where a load runs only with nothing in flight: a concurrent hot-load cannot swap
        them under the batch."""
        loras: list[tuple[Any, Optional[int]]] = []

        def pick() -> Optional[list[Any]]:
            loras.extend(self._lora(r.adapter) for r in requests)
            return [loras[i][0] for i in run] if use_lora() else None

        return loras, pick

    def generate(self, requests: list[GenRequest]) -> list[GenResult]:
        if not requests:
            return []
        started = time.perf_counter()
        prompt_ids, run = self._prepare(requests)
        results: list[Any] = [None if i in run else too_long(r, ids, self.max_model_len)
                              for i, (r, ids) in enumerate(zip(requests, prompt_ids))]
        loras, pick = self._picker(requests, run,
                                   lambda: self._batch_lora(any(requests[i].adapter is not None for i in run)))
        outputs = self._run([prompt_ids[i] for i in run], self._sampling_params(requests, prompt_ids, run), pick)
        for i, out in zip(run, outputs):
            results[i] = self._result(requests[i], prompt_ids[i], out, loras[i][1])
        with self._cv:
            self._account(results, started)
        return results

    def submit(self, requests: list[GenRequest]) -> list[Any]:
        """Start `requests` in the engine; `collect` returns each as soon as it is done. Streamed
        requests always run with LoRA when it is enabled (base ones through the identity adapter):
        requests added later, with or without an adapter, may share their batches."""
        prompt_ids, run = self._prepare(requests)
        loras, pick = self._picker(requests, run, lambda: self._use_lora(True))
        ids = iter(self._add([prompt_ids[i] for i in run], self._sampling_params(requests, prompt_ids, run), pick))
        tickets: list[Any] = []
        with self._cv:
            for i, (req, ids_i) in enumerate(zip(requests, prompt_ids)):
                ticket = next(ids) if i in run else f"too-long-{next(self._too_long)}"
                self._streams[ticket] = (req, ids_i, loras[i][1])
                if i not in run:
                    self._finished[ticket] = None  # answered without running
                tickets.append(ticket)
        return tickets

    def collect(self, tickets: list[object]) -> list[tuple[Any, GenResult]]:
        if not tickets:  # nothing to wait for (waiting on none would never end)
            return []
        started = time.perf_counter()
        with self._cv:
            if unknown := [t for t in tickets if t not in self._streams]:
                raise EngineError(f"collect: {len(unknown)} ticket(s) were never submitted or already collected")
            self._wait(list(tickets), every=False)
            got = []
            for t in tickets:
                if t in self._finished:
                    (req, ids, version), out = self._streams.pop(t), self._finished.pop(t)
                    got.append((t, too_long(req, ids, self.max_model_len) if out is None else
                                self._result(req, ids, out, version)))
            self._account([r for _, r in got], started)
        return got

    def next_token_logprobs(self, requests: list[GenRequest], candidates: list[str]) -> list[TokenLogprobs]:
        if not requests:
            return []
        started = time.perf_counter()
        from vllm import SamplingParams

        with self._tokenize:
            ids = candidate_token_ids(self.tokenizer, candidates)
        # logprob_token_ids: the exact raw log-probs of just these tokens (not a top-k); one token decoded
        params = SamplingParams(max_tokens=1, temperature=0.0,
                                logprob_token_ids=sorted({t for spellings in ids.values() for t in spellings}))
        prompt_ids, run = self._prepare(requests)
        results: list[Any] = [None if i in run else too_long_logprobs(p, self.max_model_len)
                              for i, p in enumerate(prompt_ids)]

        def pick() -> Optional[list[Any]]:
            loras = [self._lora(r.adapter)[0] for r in requests]
            use_lora = self._batch_lora(any(requests[i].adapter is not None for i in run))
            return [loras[i] for i in run] if use_lora else None

        outputs = self._run([prompt_ids[i] for i in run], params, pick)
        for i, out in zip(run, outputs):
            step = out.outputs[0].logprobs[0]
            results[i] = TokenLogprobs(merge_candidates({t: lp.logprob for t, lp in step.items()}, ids), prompt_ids[i])
        with self._cv:
            self._account_next_token(results, started)
        return results

    def score(self, prompt_ids: list[int], completion_ids: list[int], adapter: Optional[str]) -> list[float]:
        if not completion_ids:
            return []
        from vllm import SamplingParams

        # prompt_logprobs=0 returns each prompt token's own log-prob; the one generated token is ignored
        params = SamplingParams(max_tokens=1, temperature=0.0, prompt_logprobs=0)

        def pick() -> Optional[list[Any]]:
            lora, _ = self._lora(adapter)
            return [lora] if self._batch_lora(adapter is not None) else None

        out = self._run([list(prompt_ids) + list(completion_ids)], params, pick)[0]
        tail = out.prompt_logprobs[len(prompt_ids):]
        return [step[t].logprob for t, step in zip(completion_ids, tail)]

    def close(self) -> None:
        llm = getattr(self, "llm", None)
        if llm is None:
            return
        if hasattr(self, "_thread"):
            with self._cv:  # the loop ends after its step; calls waiting fail
                self._stopped = "the vLLM engine was closed"
                self._cv.notify_all()
            self._thread.join(timeout=CLOSE_JOIN_S)
            if self._thread.is_alive():
                log.warning("vLLM engine loop still inside a step %ds after close; shutting the engine down", CLOSE_JOIN_S)
        self.llm = None
        try:
            llm.llm_engine.engine_core.shutdown()
        except Exception as e:  # shutting down twice or after a crash: nothing left to free
            log.debug("vLLM shutdown: %s", e)
        del llm
