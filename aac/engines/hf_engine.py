"""transformers `generate` + peft: the engine for machines without vLLM.

Requests are grouped by (adapter, sampling other than the seed) and run in left-padded batches.
Adapters are peft adapters on the one base model (`disable_adapter()` for the base), hot-loaded under
`name_vN` and the old version deleted.

Seeds: `generate` samples a batch from one RNG, so `_RowSampler` samples instead: each row from a
generator of its own (its request's seed; an unseeded row's drawn from the process's RNG), after the
temperature and top-p, and leaves `generate` (greedy) that one token. A request's tokens follow its seed
whatever shares its batch, as vLLM's per-request seeds; the process's RNG, which the learner may share, is
left alone by seeded requests.
"""

from __future__ import annotations

import threading
import time
from contextlib import nullcontext
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
    cut_at_stop,
    merge_candidates,
    prompt_tokens,
    render_chat,
    too_long,
    too_long_logprobs,
)
from aac.engines.constrained import Grammar, GrammarLogitsProcessor, MatcherCache


class _RowSampler:
    """A logits processor that samples every row from its own generator (temperature, then top-p, as vLLM
    does) and leaves only the sampled token: greedy decoding then takes it. Last in the list, after any
    grammar's mask."""

    def __init__(self, seeds: list[Optional[int]], temperature: float, top_p: float) -> None:
        import torch

        self.generators = [torch.Generator().manual_seed(
            s if s is not None else int(torch.randint(2**62, ()))) for s in seeds]
        self.temperature, self.top_p = temperature, top_p

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        import torch

        probs = (scores.float() / self.temperature).softmax(-1).cpu()
        if self.top_p < 1.0:  # the smallest set of most likely tokens whose mass reaches top_p
            sorted_p, order = probs.sort(-1, descending=True)
            drop = sorted_p.cumsum(-1) - sorted_p >= self.top_p
            probs = probs.scatter(-1, order, sorted_p.masked_fill(drop, 0.0))
        picks = torch.cat([torch.multinomial(p, 1, generator=g) for p, g in zip(probs, self.generators)])
        only = torch.full_like(scores, float("-inf"))
        only[torch.arange(len(picks)), picks.to(scores.device)] = 0.0
        return only


class HFEngine(Engine):
    kind = "hf"

    def __init__(self, model_path: str, *, dtype: str = "float32", max_model_len: int = 2048,
                 chat_template_kwargs: Optional[dict] = None, enable_lora: bool = True, max_lora_rank: int = 16,
                 max_loras: int = 2, seed: int = 0, device: Optional[str] = None, batch_size: int = 16) -> None:
        super().__init__()
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        if not hasattr(torch, dtype):
            raise ValueError(f"unknown dtype {dtype!r}")
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        self.tokenizer = AutoTokenizer.from_pretrained(model_path)
        self.model = AutoModelForCausalLM.from_pretrained(model_path, dtype=getattr(torch, dtype)).to(self.device)
        self.model.eval()
        self.chat_template_kwargs = dict(chat_template_kwargs or {})
        self.max_model_len = max_model_len
        self.enable_lora = enable_lora
        self.batch_size = batch_size
        self.eos_ids = self._eos_ids()
        pad = self.tokenizer.pad_token_id
        self.pad_id = pad if pad is not None else self.eos_ids[0]
        self._adapters: dict[str, tuple[int, str]] = {}  # name -> (version, peft adapter key)
        self._lock = threading.Lock()  # one model, one caller at a time
        self._matchers: Optional[MatcherCache] = None  # constrained decoding, built on first use
        torch.manual_seed(seed)

    def _eos_ids(self) -> list[int]:
        ids = self.model.generation_config.eos_token_id
        ids = [ids] if isinstance(ids, int) else list(ids or [])
        if self.tokenizer.eos_token_id is not None and self.tokenizer.eos_token_id not in ids:
            ids.append(self.tokenizer.eos_token_id)
        if not ids:
            raise EngineError("the model has no EOS token id")
        return ids

    # ------------------------------------------------------------------ adapters
    def load_adapter(self, name: str, path: str, version: int) -> None:
        if not self.enable_lora:
            raise EngineError("this HF engine was built with enable_lora=False")
        if not (Path(path) / "adapter_config.json").exists():
            raise EngineError(f"not a peft adapter folder (no adapter_config.json): {path}")
        from peft import PeftModel

        key = f"{name}_v{version}".replace(".", "_")
        with self._lock:
            if isinstance(self.model, PeftModel):
                self.model.load_adapter(path, adapter_name=key)
            else:
                self.model = PeftModel.from_pretrained(self.model, path, adapter_name=key)
            self.model.eval()
            old = self._adapters.get(name)
            self._adapters[name] = (version, key)
            if old is not None and old[1] != key:
                self.model.set_adapter(key)  # deleting the active adapter would warn
                self.model.delete_adapter(old[1])

    def adapter_version(self, name: str) -> Optional[int]:
        entry = self._adapters.get(name)
        return entry[0] if entry else None

    def _use(self, adapter: Optional[str]) -> Any:
        """A context in which the model runs with `adapter` (None: the base model)."""
        if adapter is None:
            return self.model.disable_adapter() if self._adapters else nullcontext()
        if adapter not in self._adapters:
            raise EngineError(f"adapter {adapter!r} is not loaded (loaded: {sorted(self._adapters) or 'none'})")
        self.model.set_adapter(self._adapters[adapter][1])
        return nullcontext()

    # ------------------------------------------------------------------ generation
    def generate(self, requests: list[GenRequest]) -> list[GenResult]:
        started = time.perf_counter()
        prompts = [prompt_tokens(self.tokenizer, r, self.chat_template_kwargs) for r in requests]
        for r in requests:  # fail before any work on a bad adapter name
            self._use(r.adapter)
        results: list[Optional[GenResult]] = [None] * len(requests)
        groups: dict[tuple, list[int]] = {}
        for i, (req, ids) in enumerate(zip(requests, prompts)):
            if len(ids) >= self.max_model_len:
                results[i] = too_long(req, ids, self.max_model_len)
                continue
            groups.setdefault((req.adapter, req.sampling.batch_key()), []).append(i)
        with self._lock:
            for (adapter, _), idx in groups.items():
                for start in range(0, len(idx), self.batch_size):
                    chunk = idx[start:start + self.batch_size]
                    outs = self._generate_batch([prompts[i] for i in chunk], requests[chunk[0]].sampling, adapter,
                                                [requests[i].sampling.seed for i in chunk],
                                                [requests[i].sampling.grammar for i in chunk])
                    for i, out in zip(chunk, outs):
                        results[i] = out
        done = [r for r in results if r is not None]
        self._account(done, started)
        return done

    def _generate_batch(self, prompts: list[list[int]], s: Sampling, adapter: Optional[str],
                        seeds: list[Optional[int]], grammars: list[Optional[Grammar]]) -> list[GenResult]:
        import torch
        from transformers import GenerationConfig, LogitsProcessorList

        width = max(map(len, prompts))
        input_ids = torch.tensor([[self.pad_id] * (width - len(p)) + p for p in prompts], device=self.device)
        mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts], device=self.device)
        budget = min(s.max_tokens, self.max_model_len - width)
        # a fresh config: the model's own defaults (top_k, repetition penalty, ...) must not leak in; greedy,
        # as sampling is _RowSampler's
        config = GenerationConfig(max_new_tokens=budget, do_sample=False, temperature=None, top_p=None, top_k=None,
                                  eos_token_id=self.eos_ids, pad_token_id=self.pad_id,
                                  output_logits=s.logprobs, return_dict_in_generate=True,
                                  stop_strings=list(s.stop) if s.stop else None)
        processors = LogitsProcessorList()
        if any(g is not None for g in grammars):
            if self._matchers is None:
                self._matchers = MatcherCache(self.tokenizer, self.eos_ids)
            processors.append(GrammarLogitsProcessor(
                [self._matchers.get(g) if g is not None else None for g in grammars], width))
        if s.temperature > 0:
            processors.append(_RowSampler(seeds, s.temperature, s.top_p))
        with torch.no_grad(), self._use(adapter):
            out = self.model.generate(input_ids=input_ids, attention_mask=mask, generation_config=config,
                                      tokenizer=self.tokenizer, logits_processor=processors)
        new = out.sequences[:, width:].tolist()
        logps = None
        if s.logprobs:  # raw logits = the temperature-1.0 distribution, as engine.py documents
            steps = torch.stack(out.logits, dim=1).float().log_softmax(-1)
            logps = steps.gather(-1, out.sequences[:, width:, None].to(steps.device))[..., 0].tolist()
        results = []
        for row, (ids, tokens) in enumerate(zip(prompts, new)):
            tokens, text, stopped = self._trim(tokens, s.stop, s.include_stop)
            results.append(GenResult(text=text, prompt_ids=ids, token_ids=tokens,
                                     logprobs=logps[row][:len(tokens)] if logps else None,
                                     finish_reason="stop" if stopped else "length", adapter=adapter,
                                     adapter_version=self.adapter_version(adapter) if adapter else None))
        return results

    def _trim(self, tokens: list[int], stop: Optional[list[str]], include: bool = False) -> tuple[list[int], str, bool]:
        """Cut a generated row after its EOS or the token completing a stop string (then padding)."""
        end = next((k + 1 for k, t in enumerate(tokens) if t in self.eos_ids), None)
        if end is not None:
            tokens = tokens[:end]
        if stop:
            text = self.tokenizer.decode(tokens, skip_special_tokens=True)
            if cut_at_stop(text, stop)[1]:
                lo, hi = 1, len(tokens)  # smallest prefix whose text holds a stop string (monotone)
                while lo < hi:
                    mid = (lo + hi) // 2
                    if cut_at_stop(self.tokenizer.decode(tokens[:mid], skip_special_tokens=True), stop)[1]:
                        hi = mid
                    else:
                        lo = mid + 1
                tokens = tokens[:lo]
                text = cut_at_stop(self.tokenizer.decode(tokens, skip_special_tokens=True), stop, include)[0]
                return tokens, text, True
        return tokens, self.tokenizer.decode(tokens, skip_special_tokens=True), end is not None

    def next_token_logprobs(self, requests: list[GenRequest], candidates: list[str]) -> list[TokenLogprobs]:
        import torch

        started = time.perf_counter()
        ids = candidate_token_ids(self.tokenizer, candidates)
        wanted = sorted({t for spellings in ids.values() for t in spellings})
        prompts = [render_chat(self.tokenizer, r.messages, self.chat_template_kwargs) for r in requests]
        for r in requests:
            self._use(r.adapter)
        results: list[Optional[TokenLogprobs]] = [
            too_long_logprobs(p, self.max_model_len) if len(p) >= self.max_model_len else None for p in prompts]
        groups: dict[Optional[str], list[int]] = {}
        for i, r in enumerate(requests):
            if results[i] is None:
                groups.setdefault(r.adapter, []).append(i)
        with self._lock:
            for adapter, idx in groups.items():
                for start in range(0, len(idx), self.batch_size):
                    chunk = idx[start:start + self.batch_size]
                    width = max(len(prompts[i]) for i in chunk)
                    input_ids = torch.tensor([[self.pad_id] * (width - len(prompts[i])) + prompts[i] for i in chunk],
                                             device=self.device)
                    mask = torch.tensor([[0] * (width - len(prompts[i])) + [1] * len(prompts[i]) for i in chunk],
                                        device=self.device)
                    positions = (mask.cumsum(-1) - 1).clamp(min=0)  # left padding must not shift positions
                    with torch.no_grad(), self._use(adapter):
                        logits = self.model(input_ids=input_ids, attention_mask=mask, position_ids=positions).logits
                    logps = logits[:, -1].float().log_softmax(-1)[:, wanted].tolist()
                    for i, row in zip(chunk, logps):
                        results[i] = TokenLogprobs(merge_candidates(dict(zip(wanted, row)), ids), prompts[i])
        done = [r for r in results if r is not None]
        self._account_next_token(done, started)
        return done

    def score(self, prompt_ids: list[int], completion_ids: list[int], adapter: Optional[str]) -> list[float]:
        if not completion_ids:
            return []
        import torch

        ids = torch.tensor([list(prompt_ids) + list(completion_ids)], device=self.device)
        with self._lock, torch.no_grad(), self._use(adapter):
            logits = self.model(input_ids=ids).logits[0, len(prompt_ids) - 1:-1].float()
        logps = logits.log_softmax(-1).gather(-1, ids[0, len(prompt_ids):, None])[:, 0]
        return logps.tolist()

    def close(self) -> None:
        self.model = None
