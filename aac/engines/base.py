"""One small interface for text generation, shared by the actor, the critic and the eval harness.

An `Engine` takes a batch of chat requests and returns one result per request, in order. A request
names the LoRA adapter to use (None = the base model). Backends: `vllm` (in-process, one engine for
actor and critic), `hf` (transformers `generate` + peft) and `openai` (any compatible endpoint).

`submit` / `collect` serve the same requests as a stream: `collect` returns as soon as some of them
are done, so a caller (the episode driver) can send an episode's next turn while the others still
decode. An engine that cannot stream answers `collect` with one `generate` over everything
submitted (lockstep); the vLLM engine streams (continuous batching across turns).

`next_token_logprobs` is the scoring call (a rating read from one forward pass): for each chat, the
log-probs that the reply's first token is each of a few candidate strings (e.g. the ten digits).

Log-probs, wherever an engine returns them (`GenResult.logprobs`, `Engine.score`,
`Engine.next_token_logprobs`), are the natural
log-probability of each token under the model's *unmodified* next-token distribution, i.e. softmax of
the raw logits at temperature 1.0 without top-p: the quantity the learner's policy computes, whatever
temperature/top-p the token was sampled with.
"""

from __future__ import annotations

import itertools
import math
import time
from abc import ABC, abstractmethod
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Optional

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase


class EngineError(RuntimeError):
    """A request the engine cannot serve (unknown adapter, bad argument, backend down)."""


@dataclass
class Sampling:
    temperature: float = 1.0  # 0 = greedy
    top_p: float = 1.0
    max_tokens: int = 256
    seed: Optional[int] = None
    logprobs: bool = False  # return the sampled tokens' log-probs (see the module docstring)
    stop: Optional[list[str]] = None  # the text ends before the first stop string
    include_stop: bool = False  # ... or with it (the reply is its answer, and stops there)
    # the reply must spell a string of this slot grammar (aac/engines/constrained.py); None: free.
    # Not part of batch_key: rows of one batch may each have their own (HF engine only)
    grammar: Optional[tuple[tuple[str, ...], ...]] = None

    def __post_init__(self) -> None:
        if self.temperature < 0:
            raise ValueError(f"Sampling.temperature must be >= 0, got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"Sampling.top_p must be in (0, 1], got {self.top_p}")
        if self.max_tokens < 1:
            raise ValueError(f"Sampling.max_tokens must be >= 1, got {self.max_tokens}")

    def batch_key(self) -> tuple:
        """What requests must share to run in one batched call (everything but the seed)."""
        return (self.temperature, self.top_p, self.max_tokens, self.logprobs, tuple(self.stop or ()), self.include_stop)


@dataclass
class GenRequest:
    messages: list[dict]
    sampling: Sampling = field(default_factory=Sampling)
    adapter: Optional[str] = None  # None = the base model (vLLM: identity adapter or LoRA off, see there)
    # token-in: the prompt's tokens as given (a caller that templates the chat itself, e.g. SkyRL's
    # generator); `messages` are then unused. Local engines only (vllm, hf)
    prompt_ids: Optional[list[int]] = None
    # the episode this turn belongs to (any hashable id): engine replicas keep an episode's turns on one
    # replica, whose prefix cache holds the prompt they share (aac/engines/replicas.py)
    episode: Optional[Hashable] = None


@dataclass
class GenResult:
    text: str
    prompt_ids: list[int]  # the chat-templated prompt (empty when an endpoint does not return it)
    token_ids: list[int]  # generated tokens, EOS included when the model stopped by itself
    logprobs: Optional[list[float]]  # one per token_ids entry, when Sampling.logprobs
    finish_reason: str  # "stop" | "length" | "error"
    adapter: Optional[str]
    adapter_version: Optional[int]
    error: Optional[str] = None  # set when finish_reason == "error" (the text is then empty)
    retries: int = 0  # transient failures retried before this result (openai)
    replica: Optional[int] = None  # the engine replica that served it (aac/engines/replicas.py)


@dataclass
class TokenLogprobs:
    """The next token's log-probs over candidate strings, for one chat (`Engine.next_token_logprobs`)."""

    logprobs: dict[str, float]  # candidate -> log-prob; absent: the backend cannot see it (endpoint top-k)
    prompt_ids: list[int]  # the chat-templated prompt (empty from an endpoint)
    error: Optional[str] = None  # the request failed (then logprobs is empty)
    retries: int = 0

    def expectation(self, values: Mapping[str, float]) -> tuple[Optional[float], float]:
        """The probability-weighted mean of `values` over the candidates present, renormalised over
        them (G-Eval), and the probability mass they hold (None, 0.0 when none is present)."""
        probs = {c: math.exp(lp) for c, lp in self.logprobs.items() if c in values}
        mass = sum(probs.values())
        if mass <= 0.0:
            return None, 0.0
        return sum(p * values[c] for c, p in probs.items()) / mass, mass


@dataclass
class EngineStats:
    """Counters every engine keeps; `as_dict()` is what goes into the logs."""

    requests: int = 0
    errors: int = 0
    retries: int = 0
    prompt_tokens: int = 0
    generated_tokens: int = 0
    busy_s: float = 0.0  # wall time inside generate()

    def as_dict(self) -> dict[str, float]:
        out = dict(vars(self))
        out["tokens_per_s"] = self.generated_tokens / self.busy_s if self.busy_s > 0 else 0.0
        return out


class Engine(ABC):
    """Batched chat generation with optional LoRA adapters."""

    kind: str = ""
    # serves calls from several threads at once, sharing its batches (vLLM's engine loop, an endpoint);
    # False: threads sharing it take turns (`aac.engines.serialized.shared`)
    concurrent: bool = False

    def __init__(self) -> None:
        self.stats = EngineStats()

    @abstractmethod
    def generate(self, requests: list[GenRequest]) -> list[GenResult]:
        """One result per request, in order. A failed request gives finish_reason="error"."""

    def submit(self, requests: list[GenRequest]) -> list[Any]:
        """Start `requests`; returns one ticket per request for `collect`. Here: queued, and served
        by the next `collect` in one `generate` (an engine that streams overrides both). The queue is
        made on first use: engines that never call `Engine.__init__` (RemoteEngine, test doubles) work too."""
        queued = self.__dict__.setdefault("_queued", {})
        counter = self.__dict__.setdefault("_tickets", itertools.count())
        tickets = [next(counter) for _ in requests]
        queued.update(zip(tickets, requests))
        return tickets

    def collect(self, tickets: list[object]) -> list[tuple[Any, GenResult]]:
        """Wait until at least one of `tickets` is done; returns (ticket, result) for every done one
        (each ticket once). Here: all of them, from one `generate` call."""
        queued = self.__dict__.get("_queued", {})
        todo = [t for t in tickets if t in queued]
        if len(todo) < len(tickets):
            raise EngineError(f"collect: {len(tickets) - len(todo)} ticket(s) were never submitted or already collected")
        return list(zip(todo, self.generate([queued.pop(t) for t in todo])))

    def replicas(self) -> list[Engine]:
        """The engines serving this one's requests (an engine is its own only replica)."""
        return [self]

    @abstractmethod
    def load_adapter(self, name: str, path: str, version: int) -> None:
        """Load the peft adapter folder `path` as `name` at `version`, replacing any older one.

        The folder must not change while that version is loaded (write each version to a new one)."""

    @abstractmethod
    def adapter_version(self, name: str) -> Optional[int]:
        """The loaded version of adapter `name`, or None if it is not loaded."""

    @abstractmethod
    def score(self, prompt_ids: list[int], completion_ids: list[int], adapter: Optional[str]) -> list[float]:
        """Per-token log-probs of `completion_ids` after `prompt_ids` (one per completion token)."""

    def next_token_logprobs(self, requests: list[GenRequest], candidates: list[str]) -> list[TokenLogprobs]:
        """For each chat (its messages and adapter; the sampling is ignored), the log-prob that the reply
        starts with each candidate: one forward pass, no token sampled. A token that is a candidate
        after stripping whitespace counts for it (" 7" and "7" both count for "7"). In order; a failed
        request has `error` set."""
        raise EngineError(f"the {self.kind or type(self).__name__} engine cannot return next-token log-probs")

    @abstractmethod
    def close(self) -> None:
        """Release the model and any processes; idempotent."""

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # shared bookkeeping for the backends
    def _account(self, results: list[GenResult], started: float) -> None:
        s = self.stats
        s.requests += len(results)
        s.errors += sum(r.finish_reason == "error" for r in results)
        s.retries += sum(r.retries for r in results)
        s.prompt_tokens += sum(len(r.prompt_ids) for r in results)
        s.generated_tokens += sum(len(r.token_ids) for r in results)
        s.busy_s += time.perf_counter() - started

    def _account_next_token(self, results: list[TokenLogprobs], started: float) -> None:
        s = self.stats
        s.requests += len(results)
        s.errors += sum(r.error is not None for r in results)
        s.retries += sum(r.retries for r in results)
        s.prompt_tokens += sum(len(r.prompt_ids) for r in results)
        s.busy_s += time.perf_counter() - started


def candidate_token_ids(tokenizer: PreTrainedTokenizerBase, candidates: list[str]) -> dict[str, list[int]]:
    """The single-token spellings of each candidate ("7", and " 7" where that is one token)."""
    out: dict[str, list[int]] = {}
    for c in candidates:
        ids = {enc[0] for text in (c, " " + c)
               if len(enc := tokenizer.encode(text, add_special_tokens=False)) == 1}
        if not ids:
            raise EngineError(f"candidate {c!r} is not a single token of this tokenizer")
        out[c] = sorted(ids)
    return out


def merge_candidates(token_logprobs: Mapping[int, float], ids: Mapping[str, list[int]]) -> dict[str, float]:
    """Candidate -> log-prob, summing the probability of each candidate's spellings."""
    out = {}
    for c, spellings in ids.items():
        present = [token_logprobs[t] for t in spellings if t in token_logprobs]
        if present:
            top = max(present)
            out[c] = top + math.log(sum(math.exp(lp - top) for lp in present))
    return out


def is_prefilled(messages: list[dict]) -> bool:
    """Whether the chat ends in an assistant message that the reply continues (a prefill)."""
    return bool(messages) and messages[-1].get("role") == "assistant"


def continuation(messages: list[dict]) -> dict[str, bool]:
    """The chat-template flags for `messages`: open a new assistant turn, or continue a prefilled one
    (the names of transformers' apply_chat_template and of vLLM's OpenAI-compatible server)."""
    prefilled = is_prefilled(messages)
    return {"add_generation_prompt": not prefilled, "continue_final_message": prefilled}


def render_chat(tokenizer: PreTrainedTokenizerBase, messages: list[dict], chat_template_kwargs: Optional[dict] = None) -> list[int]:
    """Token ids of `messages` under the model's chat template, ready for the assistant's reply.

    A last message from the assistant is a prefill: the reply continues its text (its turn is left
    open), so the prefill's tokens are prompt tokens. One function for every local backend, so vLLM,
    HF and the learner see the same prompt tokens."""
    if not messages:
        raise ValueError("a chat request needs at least one message")
    ids = tokenizer.apply_chat_template(messages, tokenize=True, **continuation(messages),
                                        **(chat_template_kwargs or {}))
    if isinstance(ids, dict) or hasattr(ids, "input_ids"):  # transformers 5 may return a BatchEncoding
        ids = ids["input_ids"]
    return list(ids)


def prompt_tokens(tokenizer: PreTrainedTokenizerBase, request: GenRequest, chat_template_kwargs: Optional[dict] = None) -> list[int]:
    """The request's prompt tokens: its own `prompt_ids`, else its chat rendered (`render_chat`)."""
    if request.prompt_ids is not None:
        return list(request.prompt_ids)
    return render_chat(tokenizer, request.messages, chat_template_kwargs)


def too_long(request: GenRequest, prompt_ids: list[int], max_model_len: int) -> GenResult:
    """The error result for a prompt that leaves no room to generate (the batch's others still run)."""
    return GenResult("", prompt_ids, [], None, "error", request.adapter, None,
                     error=_too_long_message(prompt_ids, max_model_len))


def too_long_logprobs(prompt_ids: list[int], max_model_len: int) -> TokenLogprobs:
    """The same for `next_token_logprobs` (a prompt with no room for one more token)."""
    return TokenLogprobs({}, prompt_ids, error=_too_long_message(prompt_ids, max_model_len))


def _too_long_message(prompt_ids: list[int], max_model_len: int) -> str:
    return f"prompt of {len(prompt_ids)} tokens {TOO_LONG} max_model_len={max_model_len}"


TOO_LONG = "leaves no room in"  # what `too_long`'s error says, and `is_too_long` reads


def is_too_long(error: Optional[str]) -> bool:
    """Whether a result's error is `too_long`'s: the prompt does not fit the context (asking again will not help)."""
    return error is not None and TOO_LONG in error


def cut_at_stop(text: str, stop: Optional[list[str]], include: bool = False) -> tuple[str, bool]:
    """`text` up to the earliest stop string (through it with `include`), and whether one was found."""
    found = [(i, i + len(s)) for s in stop or () if (i := text.find(s)) >= 0]
    if not found:
        return text, False
    start, end = min(found)
    return text[:end if include else start], True
