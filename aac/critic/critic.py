"""The privileged critic: a frozen LLM that grades actor turns with knowledge the actor lacks.

`score()` takes every pending judgment of every concurrent episode and sends the ones not already
cached to the engine in ONE batched call (identical prompts are sent once), ordered by prompt so that
judgments sharing a prefix (the worked examples, a function's source and gold description) sit next
to each other for the engine's prefix cache. Two scorings (`critic.scoring`):
- `generate` (the paper's): each reply's `Rating: n` becomes n / 9;
- `logprob`: the prompt ends with the rating cue and the engine returns the next token's log-probs
  over the ten digits; the score is their probability-weighted mean / 9 (G-Eval). One forward pass,
  one token, a continuous score; no reply to parse.
With `critic.informativeness=coverage`, informativeness judgments are not asked of the LLM at all:
`coverage.CoverageInformativeness` measures what the call explored (LLM-free).

A judgment without a score is None, never a number (docs/method.md §7.1 P5: masked downstream):
- a reply without a valid rating (generate), or with no digit among the log-probs an endpoint
  returned (logprob), counts as a parse failure and is cached (asking again gives the same answer);
- a prompt longer than its engine's context (`model.max_model_len`) counts as
  truncated (`critic/truncated`) and is cached: it has no score, and asking again gives none;
- a request the engine could not serve (endpoint down, timeout after retries, engine crash) counts
  as a fallback and is not cached, so the next call asks again.
The cache maps (instance uid, judgment kind, prompt) to the score: the prompt holds the graded text
and everything shown beside it, so equal keys are equal questions.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Optional

from aac.critic.judgment import Judgment
from aac.critic.parsing import RATING_MAX, RATING_MIN, parse_rating
from aac.critic.prompts import critic_messages
from aac.engines.base import Engine, GenRequest, GenResult, Sampling, TokenLogprobs, is_too_long

if TYPE_CHECKING:
    from aac.config import CriticConfig
    from aac.env.domains import Caller

log = logging.getLogger(__name__)

CACHE_ENTRIES = 200_000  # LRU bound: ~100 B per entry, far above one epoch's distinct judgments
DIGITS = {str(d): d / RATING_MAX for d in range(RATING_MIN, RATING_MAX + 1)}  # next token -> score


@dataclass
class _Counters:
    judgments: int = 0  # scores asked for
    cache_hits: int = 0  # answered from the cache (or by a duplicate in the same batch)
    requests: int = 0  # sent to the engine
    batches: int = 0  # engine calls
    replies: int = 0  # requests that came back with text (or log-probs)
    parse_failures: int = 0  # replies without a valid rating (missing + invalid)
    missing: int = 0  # generate: no `Rating:` number; logprob: no digit among the returned log-probs
    invalid: int = 0  # a rating outside 0..9 or not an integer
    fallbacks: int = 0  # requests that got no reply at all
    truncated: int = 0  # prompts past the engine's context: no reply, no score (a local engine says so)
    retries: int = 0  # transient failures the engine retried
    latency_s: float = 0.0  # wall time inside the engine
    digit_mass: float = 0.0  # logprob: summed probability of the ten digits (low: the cue is not followed)
    coverage_judgments: int = 0  # informativeness measured by coverage
    coverage_failures: int = 0  # ... that could not be measured (None)
    mutant_calls: int = 0  # critic.kind=mutants: sandbox calls of mutants and originals (cached ones not counted)
    mutants_fallback: int = 0  # ... judgments of rows without a mutant kept, scored by the scripted rule


class Counted:
    """The health counters every critic keeps (`_counters` under `_lock`), read the same way."""

    _counters: _Counters
    _lock: threading.Lock

    def counts(self) -> dict[str, float]:
        """The raw counters since start: subtract two snapshots for a period, add workers' up."""
        with self._lock:
            return dict(vars(self._counters))

    @property
    def health(self) -> dict[str, float]:
        """Counters since start, plus rates: what a run logs to watch the critic."""
        return with_rates(self.counts())


class PrivilegedCritic(Counted):
    def __init__(self, engine: Engine, cfg: CriticConfig, adapter: Optional[str] = None, *, seed: int = 0,
                 caller: Optional[Caller] = None) -> None:
        """`caller` runs the function for `informativeness=coverage` (an `aac.env.protocol` caller, e.g.
        `sandbox_caller(pool)`); None: the process's shared sandbox pool."""
        self.engine = engine
        self.cfg = cfg
        self.adapter = adapter
        self.mode = cfg.mode
        self.scoring = cfg.scoring
        self.examples = bool(cfg.examples)
        self.sampling = Sampling(temperature=cfg.temperature, max_tokens=cfg.max_tokens, seed=seed)
        self.coverage = None
        if cfg.informativeness == "coverage":
            from aac.critic.coverage import CoverageInformativeness

            self.coverage = CoverageInformativeness(caller, output_weight=cfg.coverage_output_weight,
                                                    call_timeout_s=cfg.coverage_call_timeout_s)
        self._cache: OrderedDict[tuple, Optional[float]] = OrderedDict()
        self._counters = _Counters()
        self._lock = threading.Lock()  # counters and cache; the engine call itself runs unlocked

    def messages(self, judgment: Judgment) -> list[dict]:
        return critic_messages(judgment, self.mode, self.examples, self.scoring)

    @staticmethod
    def _key(judgment: Judgment, messages: list[dict]) -> tuple:
        prompt = "\x00".join(m["content"] for m in messages)
        return judgment.instance.uid, judgment.kind, hashlib.sha256(prompt.encode()).hexdigest()

    def score(self, judgments: list[Judgment]) -> list[Optional[float]]:
        """One score in [0, 1] per judgment, in order; None where there is none (masked downstream)."""
        out: list[Optional[float]] = [None] * len(judgments)
        by_llm = list(range(len(judgments)))
        if self.coverage is not None:
            measured = [i for i, j in enumerate(judgments) if j.kind == "informativeness"]
            by_llm = [i for i in by_llm if judgments[i].kind != "informativeness"]
            if measured:
                scores = self.coverage.score([judgments[i] for i in measured])
                with self._lock:
                    self._counters.judgments += len(measured)
                    self._counters.coverage_judgments += len(measured)
                    self._counters.coverage_failures += sum(s is None for s in scores)
                for i, s in zip(measured, scores):
                    out[i] = s
        if by_llm:
            for i, s in zip(by_llm, self._score_by_llm([judgments[i] for i in by_llm])):
                out[i] = s
        return out

    def _score_by_llm(self, judgments: list[Judgment]) -> list[Optional[float]]:
        prompts = [self.messages(j) for j in judgments]
        keys = [self._key(j, m) for j, m in zip(judgments, prompts)]
        scores: dict[tuple, Optional[float]] = {}
        todo: dict[tuple, list[dict]] = {}
        with self._lock:
            self._counters.judgments += len(judgments)
            for key, messages in zip(keys, prompts):
                if key in scores or key in todo:
                    self._counters.cache_hits += 1  # a duplicate within this batch: asked once
                elif self.cfg.cache and key in self._cache:
                    self._cache.move_to_end(key)
                    scores[key] = self._cache[key]
                    self._counters.cache_hits += 1
                else:
                    todo[key] = messages
        if todo:
            # shared prefixes next to each other: the engine's prefix cache computes each once
            order = sorted(todo, key=lambda k: [m["content"] for m in todo[k]])
            replies = self._ask([todo[k] for k in order])
            with self._lock:
                for key, reply in zip(order, replies):
                    scores[key] = self._record(key, reply)
        return [scores[k] for k in keys]

    def _ask(self, prompts: list[list[dict]]) -> list[Any]:
        started = time.perf_counter()
        requests = [GenRequest(m, self.sampling, self.adapter) for m in prompts]
        try:
            if self.scoring == "logprob":
                results: list[Any] = list(self.engine.next_token_logprobs(requests, list(DIGITS)))
            else:
                results = list(self.engine.generate(requests))
            if len(results) != len(prompts):
                raise RuntimeError(f"engine returned {len(results)} results for {len(prompts)} requests")
        except Exception as e:  # the critic never stops a run: every request of the batch falls back
            log.warning("critic: engine call failed for %d requests (%s: %s); their judgments are masked",
                        len(prompts), type(e).__name__, e)
            results = [None] * len(prompts)
        with self._lock:
            c = self._counters
            c.batches += 1
            c.requests += len(prompts)
            c.latency_s += time.perf_counter() - started
        return results

    def _record(self, key: tuple, reply: GenResult | TokenLogprobs | None) -> Optional[float]:
        """Count one reply (lock held), cache and return its score; a request without reply is None."""
        c = self._counters
        if reply is not None:
            c.retries += reply.retries
        failed = reply is None or (reply.error is not None if isinstance(reply, TokenLogprobs)
                                   else reply.finish_reason == "error")
        if failed and reply is not None and is_too_long(reply.error):
            c.truncated += 1
            log.debug("critic: judgment unscored: %s", reply.error)
            return self._cached(key, None)
        if failed:
            c.fallbacks += 1
            if reply is not None:
                log.debug("critic fallback: %s", reply.error)
            return None
        c.replies += 1
        if isinstance(reply, TokenLogprobs):
            score, mass = reply.expectation(DIGITS)
            c.digit_mass += mass
            status = "ok" if score is not None else "missing"
        else:
            rating = parse_rating(reply.text)
            score, status = rating.score, rating.status
        if status != "ok":
            c.parse_failures += 1
            setattr(c, status, getattr(c, status) + 1)
        return self._cached(key, score)

    def _cached(self, key: tuple, score: Optional[float]) -> Optional[float]:
        """`score`, kept for `key` where the cache is on (lock held)."""
        if self.cfg.cache:
            self._cache[key] = score
            if len(self._cache) > CACHE_ENTRIES:
                self._cache.popitem(last=False)
        return score

    def close(self) -> None:
        """Stop the coverage helper, if any (the engine belongs to whoever built it)."""
        if self.coverage is not None:
            self.coverage.close()


def with_rates(counts: dict[str, float]) -> dict[str, float]:
    """Counters plus the rates derived from them. Rates come from (merged) counts, never by adding
    rates up, so they stay in [0, 1] for any period and any number of workers."""
    out = dict(counts)
    replies, requests, judgments = out["replies"], out["requests"], out["judgments"]
    out["parse_failure_rate"] = out["parse_failures"] / replies if replies else 0.0
    out["fallback_rate"] = out["fallbacks"] / requests if requests else 0.0
    out["cache_hit_rate"] = out["cache_hits"] / judgments if judgments else 0.0
    out["latency_per_request_s"] = out["latency_s"] / requests if requests else 0.0
    out["digit_mass_mean"] = out["digit_mass"] / replies if replies else 0.0  # log-prob scoring only
    return out
