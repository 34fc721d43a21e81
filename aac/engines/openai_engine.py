"""Any OpenAI-compatible chat endpoint: a `vllm serve` process, a hosted model.

Each request runs on a bounded thread pool (`concurrency` in flight at most, across all callers),
with a per-attempt timeout and up to `max_retries` retries with exponential back-off (with jitter) on
transient failures: timeouts, connection errors, 408/409/429 and 5xx. A request that still fails
comes back as a `GenResult` with finish_reason="error" and the reason: one bad request never sinks
the batch, and callers (the critic) count it.

`next_token_logprobs` asks for one token with `logprobs` / `top_logprobs` (the chat completions API):
an endpoint returns only its top `OpenAIConfig.top_logprobs` tokens (OpenAI: at most 20), so a
candidate outside them is absent from the result.

Adapters are whatever the server serves under a model name (`vllm serve --lora-modules name=path`):
`GenRequest.adapter` names it; this engine cannot hot-load one. Token ids come back only from servers
that return them (vLLM's `return_token_ids`, enabled with `return_token_ids=True`), else they are empty.
"""

from __future__ import annotations

import math
import os
import random
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Optional, TypeVar

from aac.engines.base import (
    Engine,
    EngineError,
    GenRequest,
    GenResult,
    TokenLogprobs,
    continuation,
    is_prefilled,
)

if TYPE_CHECKING:
    from aac.config import OpenAIConfig

T = TypeVar("T")

_RETRY_STATUS = {408, 409, 429}


def _transient(error: Exception) -> bool:
    import openai

    if isinstance(error, (openai.APITimeoutError, openai.APIConnectionError)):
        return True
    if isinstance(error, openai.APIStatusError):
        return error.status_code in _RETRY_STATUS or error.status_code >= 500
    return False


class OpenAIEngine(Engine):
    kind = "openai"

    concurrent = True  # its requests go out from a thread pool, whoever calls

    def __init__(self, model_path: str, *, openai: Optional[OpenAIConfig] = None, chat_template_kwargs: Optional[dict] = None,
                 seed: int = 0, return_token_ids: Optional[bool] = None) -> None:
        super().__init__()
        import openai as openai_lib

        from aac.config import OpenAIConfig

        self.cfg = openai or OpenAIConfig()
        if self.cfg.max_retries < 0 or self.cfg.concurrency < 1 or self.cfg.timeout_s <= 0:
            raise ValueError("openai: need max_retries >= 0, concurrency >= 1 and timeout_s > 0")
        self.model = self.cfg.model or str(model_path)
        self.chat_template_kwargs = dict(chat_template_kwargs or {})
        # None: OpenAIConfig.return_token_ids (a requested field; off: hosted APIs reject unknown fields)
        self.return_token_ids = (bool(self.cfg.return_token_ids) if return_token_ids is None
                                 else return_token_ids)
        # the client's own retries are off: ours are counted and bounded
        self.client = openai_lib.OpenAI(base_url=self.cfg.base_url, api_key=os.environ.get(self.cfg.api_key_env) or "EMPTY",
                                        timeout=self.cfg.timeout_s, max_retries=0)
        self.pool = ThreadPoolExecutor(max_workers=self.cfg.concurrency, thread_name_prefix="aac-openai")
        self._jitter = random.Random(seed)
        self._jitter_lock = threading.Lock()

    def load_adapter(self, name: str, path: str, version: int) -> None:
        raise NotImplementedError("the openai engine cannot hot-load adapters: serve them with the endpoint "
                                  "(vllm serve --lora-modules NAME=PATH) and pass NAME as the request's adapter")

    def adapter_version(self, name: str) -> Optional[int]:
        return None

    def score(self, prompt_ids: list[int], completion_ids: list[int], adapter: Optional[str]) -> list[float]:
        raise NotImplementedError("the openai engine cannot score a given completion; use the vllm or hf engine")

    def generate(self, requests: list[GenRequest]) -> list[GenResult]:
        started = time.perf_counter()
        results = list(self.pool.map(self._one, requests))
        self._account(results, started)
        return results

    def _backoff(self, attempt: int) -> float:
        with self._jitter_lock:
            return self.cfg.backoff_s * (2 ** attempt) * self._jitter.uniform(0.5, 1.0)

    def next_token_logprobs(self, requests: list[GenRequest], candidates: list[str]) -> list[TokenLogprobs]:
        started = time.perf_counter()
        wanted = set(candidates)

        def call(request: GenRequest, retries: int) -> TokenLogprobs:
            response = self.client.chat.completions.create(
                **self._common(request), temperature=0.0, max_tokens=1, logprobs=True,
                top_logprobs=self.cfg.top_logprobs, extra_body=self._extra() or None)
            content = response.choices[0].logprobs.content if response.choices[0].logprobs else None
            probs: dict[str, float] = {}
            for top in (content[0].top_logprobs if content else []):  # " 7" and "7" both count for "7"
                if top.token.strip() in wanted:
                    probs[top.token.strip()] = probs.get(top.token.strip(), 0.0) + math.exp(top.logprob)
            return TokenLogprobs({c: math.log(p) for c, p in probs.items() if p > 0},
                                 list(getattr(response, "prompt_token_ids", None) or []), retries=retries)

        def failed(request: GenRequest, error: str, retries: int) -> TokenLogprobs:
            return TokenLogprobs({}, [], error=error, retries=retries)

        results = list(self.pool.map(lambda r: self._with_retries(call, failed, r), requests))
        self._account_next_token(results, started)
        return results

    def _one(self, request: GenRequest) -> GenResult:
        def failed(request: GenRequest, error: str, retries: int) -> GenResult:
            return GenResult("", [], [], None, "error", request.adapter, None, error=error, retries=retries)

        return self._with_retries(self._call, failed, request)

    def _with_retries(self, call: Callable[[GenRequest, int], T], failed: Callable[[GenRequest, str, int], T],
                      request: GenRequest) -> T:
        retries = 0
        while True:
            try:
                return call(request, retries)
            except Exception as e:  # every failure is reported per request, never raised into the batch
                if retries < self.cfg.max_retries and _transient(e):
                    time.sleep(self._backoff(retries))
                    retries += 1
                    continue
                return failed(request, f"{type(e).__name__}: {e}"[:500], retries)

    def _common(self, request: GenRequest) -> dict[str, Any]:
        kwargs: dict[str, Any] = dict(model=request.adapter or self.model, messages=request.messages)
        if request.sampling.seed is not None:
            kwargs["seed"] = request.sampling.seed
        return kwargs

    def _extra(self) -> dict[str, Any]:
        extra: dict[str, Any] = {}
        if self.chat_template_kwargs:
            extra["chat_template_kwargs"] = self.chat_template_kwargs
        if self.return_token_ids:
            extra["return_token_ids"] = True
        return extra

    def _call(self, request: GenRequest, retries: int) -> GenResult:
        if request.prompt_ids is not None:  # not transient: reported as the request's error
            raise EngineError("the openai engine takes chat messages, not prompt token ids")
        s = request.sampling
        extra = self._extra()
        if is_prefilled(request.messages):  # vLLM servers continue the prefill; hosted APIs may refuse it
            extra.update(continuation(request.messages))
        kwargs: dict[str, Any] = dict(self._common(request), temperature=s.temperature, top_p=s.top_p,
                                      max_tokens=s.max_tokens)
        if s.stop:
            kwargs["stop"] = list(s.stop)
            if s.include_stop:  # a vLLM server's option; an endpoint without it ends the text before the stop
                extra["include_stop_str_in_output"] = True
        if s.logprobs:
            kwargs["logprobs"] = True
        response = self.client.chat.completions.create(**kwargs, extra_body=extra or None)
        choice = response.choices[0]
        logprobs = None
        if s.logprobs and choice.logprobs is not None and choice.logprobs.content is not None:
            logprobs = [t.logprob for t in choice.logprobs.content]
        finish = "length" if choice.finish_reason == "length" else "stop"
        return GenResult(text=choice.message.content or "",
                         prompt_ids=list(getattr(response, "prompt_token_ids", None) or []),
                         token_ids=list(getattr(choice, "token_ids", None) or []), logprobs=logprobs,
                         finish_reason=finish, adapter=request.adapter, adapter_version=None, retries=retries)

    def close(self) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)
        self.client.close()
