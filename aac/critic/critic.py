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

    def counts(self) -> dict[str, float]:
        """The raw counters since start: subtract two snapshots for a period, add workers' up."""
        with self._lock:
            return dict(vars(self._counters))

    @property
    def health(self) -> dict[str, float]:
        """Counters since start, plus rates: what a run logs to watch the critic."""
        return with_rates(self.counts())


def with_rates(counts: dict[str, float]) -> dict[str, float]:
    """Counters plus the rates derived from them. Rates come from (merged) counts, never by adding
    rates up, so they stay in [0, 1] for any period and any number of workers."""
    out = dict(counts)
    out["parse_failure_rate"] = out["parse_failures"] / out["replies"] if out["replies"] else 0.0
    out["fallback_rate"] = out["fallbacks"] / out["requests"] if out["requests"] else 0.0
    out["cache_hit_rate"] = out["cache_hits"] / out["judgments"] if out["judgments"] else 0.0
    out["latency_per_request_s"] = out["latency_s"] / out["requests"] if out["requests"] else 0.0
    return out
