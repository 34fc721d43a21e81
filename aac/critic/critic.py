"""The privileged critic: a frozen LLM that grades actor turns with knowledge the actor lacks.

`score()` takes every pending judgment of every concurrent episode and sends the ones not already
cached to the engine in ONE batched call (identical prompts are sent once). Each reply's
`Rating: n` becomes n / 9. Failures never propagate:
- a reply without a valid rating scores 0 (SPEC §5) and counts as a parse failure;
- a request the engine could not serve (endpoint down, timeout after retries, engine crash) scores
  the fallback, `CriticConfig.fallback_score` (default 0.0, the same as an unreadable reply), counts as
  a fallback, and is not cached, so the next call asks again.
The cache maps (instance uid, judgment kind, prompt) to the parsed rating: the prompt holds the
graded text and everything shown beside it, so equal keys are equal questions.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Optional

from aac.critic.judgment import Judgment
from aac.critic.parsing import ParsedRating, parse_rating
from aac.critic.prompts import MODES, critic_messages
from aac.engines.base import Engine, GenRequest, GenResult, Sampling

log = logging.getLogger(__name__)

CACHE_ENTRIES = 200_000  # LRU bound: ~100 B per entry, far above one epoch's distinct judgments


@dataclass
class _Counters:
    judgments: int = 0  # scores asked for
    cache_hits: int = 0  # answered from the cache (or by a duplicate in the same batch)
    requests: int = 0  # sent to the engine
    batches: int = 0  # engine calls
    replies: int = 0  # requests that came back with text
    parse_failures: int = 0  # replies without a valid rating (missing + invalid)
    missing: int = 0
    invalid: int = 0  # a rating outside 0..9 or not an integer
    fallbacks: int = 0  # requests that got no reply at all
    retries: int = 0  # transient failures the engine retried
    latency_s: float = 0.0  # wall time inside the engine


class PrivilegedCritic:
    def __init__(self, engine: Engine, cfg: Any, adapter: Optional[str] = None, *, seed: int = 0) -> None:
        if cfg.mode not in MODES:
            raise ValueError(f"critic.mode={cfg.mode!r} is not one of: {', '.join(MODES)}")
        self.engine = engine
        self.cfg = cfg
        self.adapter = adapter
        self.mode = cfg.mode
        # not yet in CriticConfig (requested): read with their defaults
        self.fallback_score = float(cfg.fallback_score)
        self.examples = bool(cfg.examples)
        self.sampling = Sampling(temperature=cfg.temperature, max_tokens=cfg.max_tokens, seed=seed)
        self._cache: OrderedDict[tuple, ParsedRating] = OrderedDict()
        self._counters = _Counters()
        self._lock = threading.Lock()  # counters and cache; the engine call itself runs unlocked

    def messages(self, judgment: Judgment) -> list[dict]:
        return critic_messages(judgment, self.mode, self.examples)

    @staticmethod
    def _key(judgment: Judgment, messages: list[dict]) -> tuple:
        prompt = "\x00".join(m["content"] for m in messages)
        return judgment.instance.uid, judgment.kind, hashlib.sha256(prompt.encode()).hexdigest()

    def score(self, judgments: list[Judgment]) -> list[float]:
        """One score in [0, 1] per judgment, in order."""
        prompts = [self.messages(j) for j in judgments]
        keys = [self._key(j, m) for j, m in zip(judgments, prompts)]
        ratings: dict[tuple, Optional[ParsedRating]] = {}
        todo: dict[tuple, list[dict]] = {}
        with self._lock:
            self._counters.judgments += len(judgments)
            for key, messages in zip(keys, prompts):
                if key in ratings or key in todo:
                    self._counters.cache_hits += 1  # a duplicate within this batch: asked once
                elif self.cfg.cache and key in self._cache:
                    self._cache.move_to_end(key)
                    ratings[key] = self._cache[key]
                    self._counters.cache_hits += 1
                else:
                    todo[key] = messages
        if todo:
            replies = self._ask(list(todo.values()))
            with self._lock:
                for key, reply in zip(todo, replies):
                    ratings[key] = self._record(key, reply)
        return [self._value(ratings[k]) for k in keys]

    def _ask(self, prompts: list[list[dict]]) -> list[Optional[GenResult]]:
        started = time.perf_counter()
        try:
            results: list[Optional[GenResult]] = list(
                self.engine.generate([GenRequest(m, self.sampling, self.adapter) for m in prompts]))
            if len(results) != len(prompts):
                raise RuntimeError(f"engine returned {len(results)} results for {len(prompts)} requests")
        except Exception as e:  # the critic never stops a run: every request of the batch falls back
            log.warning("critic: engine call failed for %d requests (%s: %s); using the fallback score",
                        len(prompts), type(e).__name__, e)
            results = [None] * len(prompts)
        with self._lock:
            c = self._counters
            c.batches += 1
            c.requests += len(prompts)
            c.latency_s += time.perf_counter() - started
        return results

    def _record(self, key: tuple, reply: Optional[GenResult]) -> Optional[ParsedRating]:
        """Count one reply (lock held) and cache its rating; None = no reply (fallback)."""
        c = self._counters
        if reply is not None:
            c.retries += reply.retries
        if reply is None or reply.finish_reason == "error":
            c.fallbacks += 1
            if reply is not None:
                log.debug("critic fallback: %s", reply.error)
            return None
        c.replies += 1
        rating = parse_rating(reply.text)
        if rating.status != "ok":
            c.parse_failures += 1
            setattr(c, rating.status, getattr(c, rating.status) + 1)
        if self.cfg.cache:
            self._cache[key] = rating
            if len(self._cache) > CACHE_ENTRIES:
                self._cache.popitem(last=False)
        return rating

    def _value(self, rating: Optional[ParsedRating]) -> float:
        return self.fallback_score if rating is None else rating.score

    @property
    def health(self) -> dict[str, float]:
        """Counters since start, plus rates: what a run logs to watch the critic."""
        with self._lock:
            out: dict[str, float] = dict(vars(self._counters))
        out["parse_failure_rate"] = out["parse_failures"] / out["replies"] if out["replies"] else 0.0
        out["fallback_rate"] = out["fallbacks"] / out["requests"] if out["requests"] else 0.0
        out["cache_hit_rate"] = out["cache_hits"] / out["judgments"] if out["judgments"] else 0.0
        out["latency_per_request_s"] = out["latency_s"] / out["requests"] if out["requests"] else 0.0
        return out


def make_critic(cfg: Any, actor_engine: Optional[Engine], model_cfg: Any, rollout_cfg: Any,
                seed: int = 0) -> tuple[PrivilegedCritic, Optional[Engine]]:
    """The critic of a run, and the engine it owns (None when it shares the actor's engine: close that
    one yourself).

    Default (`critic.backend` unset and `critic.model` unset or the actor's model): the actor's engine
    with the adapter off. Otherwise a separate engine: `openai` talks to `critic.openai`; `vllm` /
    `hf` load `critic.model` (default: the actor's base model) without LoRA."""
    from aac.engines import make_engine
    from aac.models import REGISTRY, chat_template_kwargs, resolve_model

    model = cfg.model or model_cfg.name
    if actor_engine is not None and cfg.backend is None and model == model_cfg.name:
        return PrivilegedCritic(actor_engine, cfg, seed=seed), None
    backend = cfg.backend or rollout_cfg.engine
    overrides = dict(model_cfg.chat_template_kwargs) if model == model_cfg.name else {}
    kwargs: dict[str, Any] = dict(chat_template_kwargs=chat_template_kwargs(model, overrides), seed=seed)
    if backend == "openai":  # an endpoint knows models by hub id / served name: nothing to build here
        spec = REGISTRY.get(model)
        kwargs["openai"] = cfg.openai
        engine = make_engine(backend, spec.source if spec and spec.builder is None else model, **kwargs)
    else:
        kwargs.update(dtype=model_cfg.dtype, max_model_len=model_cfg.max_model_len, enable_lora=False)
        if backend == "vllm":
            kwargs.update(kv_cache_gb=rollout_cfg.kv_cache_gb, enforce_eager=rollout_cfg.enforce_eager,
                          gpu_memory_utilization=rollout_cfg.gpu_memory_utilization)
        engine = make_engine(backend, resolve_model(model), **kwargs)
    return PrivilegedCritic(engine, cfg, seed=seed), engine
