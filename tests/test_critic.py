"""The privileged critic: rating parsing, prompts, batching, cache, failures; then real SmolLM2 critics
through vllm, hf and openai (a local `vllm serve`)."""

from __future__ import annotations

import time

import pytest

from aac.assembly import EngineSet, critic_engine
from aac.config import CriticConfig, ModelConfig, OpenAIConfig, RolloutConfig
from aac.critic import Judgment, PrivilegedCritic, parse_rating
from aac.critic.prompts import critic_messages
from aac.engines.base import Engine, GenResult
from aac.env.instance import Instance
from aac.env.observation import Observation

# ---------------------------------------------------------------- rating parsing


@pytest.mark.parametrize("reply, value", [
    ("Good plan.\nRating: 7", 7),
    ("rating:3", 3),
    ("RATING :   9", 9),
    ("  Rating:\t0  ", 0),
    ("**Rating:** 5", 5),
    ("**Rating**: 4", 4),
    ("Rating: [8]", 8),
    ("Rating: 6/9", 6),
    ("Rating = 2", 2),
    ("Rating: 7.0", 7),
    ("Rating: 5. The call probes the empty list, which is the edge case.", 5),
    ("I'd say Rating: 2 at first... no. Rating: 6", 6),  # the last one wins
    ("<think>Rating: 1? no</think>The plan is strong.\nRating: 8", 8),
    ("<THINK>hmm</THINK>\nRating: 3", 3),
])
def test_parse_rating_reads_valid_ratings(reply, value):
    parsed = parse_rating(reply)
    assert (parsed.value, parsed.status) == (value, "ok")
    assert parsed.score == pytest.approx(value / 9)


@pytest.mark.parametrize("reply, status", [
    ("", "missing"),
    ("The plan is fine, I would give it a seven.", "missing"),
    ("Rating: high", "missing"),
    ("<think>Rating: 7 looks right, but let me check", "missing"),  # cut off while thinking
    ("<think>Rating: 7</think> The plan is fine.", "missing"),
    ("Rating: 10", "invalid"),
    ("Rating: -1", "invalid"),
    ("Rating: 7.5", "invalid"),
])
def test_parse_rating_failures_score_zero(reply, status):
    parsed = parse_rating(reply)
    assert (parsed.value, parsed.status, parsed.score) == (None, status, 0.0)


# ---------------------------------------------------------------- prompts

INSTANCE = Instance(
    uid="desc-sort", source="test", code="def test_func(arg0):\n    return sorted(arg0)[::-1]\n",
    description="Returns the list sorted in descending order.", header="def test_func(arg0):",
    train_examples=[("([3, 1, 2],)", [3, 2, 1]), ("([5],)", [5])], test_examples=[], all_examples=[])
CALLS = [Observation("([3, 1, 2],)", "[3, 2, 1]", None), Observation("('ab',)", "", "TypeError: bad input")]


def judgment(kind: str, text: str, instance: Instance = INSTANCE) -> Judgment:
    return Judgment(kind, instance, "It sorts the list in descending order.", list(CALLS), text)


def test_privileged_prompt_shows_source_and_gold_symmetric_shows_neither():
    for kind in ("informativeness", "hypothesis"):
        j = judgment(kind, "Call it with an empty list.")
        privileged = critic_messages(j, "privileged")[-1]["content"]
        symmetric = critic_messages(j, "symmetric")[-1]["content"]
        for text in (privileged, symmetric):
            assert "def test_func(arg0):" in text and "Call it with an empty list." in text
            assert "TypeError: bad input" in text and text.rstrip().endswith("`Rating: <integer 0-9>`.")
        assert INSTANCE.description in privileged and "sorted(arg0)[::-1]" in privileged
        assert INSTANCE.description not in symmetric and "sorted(arg0)" not in symmetric


def test_prompt_examples_fix_the_format_and_can_be_dropped():
    j = judgment("hypothesis", "It reverses the list.")
    with_examples = critic_messages(j, "privileged")
    assert [m["role"] for m in with_examples] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert all(parse_rating(m["content"]).status == "ok" for m in with_examples if m["role"] == "assistant")
    assert [m["role"] for m in critic_messages(j, "privileged", examples=False)] == ["system", "user"]
    with pytest.raises(ValueError, match="unknown judgment kind 'style'"):
        critic_messages(judgment("style", "x"), "privileged")
    with pytest.raises(ValueError, match="critic.mode='oracle'"):
        PrivilegedCritic(object(), CriticConfig(mode="oracle"))


# ---------------------------------------------------------------- batching, cache, failures (test double)


class ScriptedEngine(Engine):
    """Answers each request by the first cue in its graded text; records the batches it was sent."""

    kind = "scripted"
    REPLIES = {"GOOD": "Useful.\nRating: 9", "MID": "Some use.\nRating: 3", "NONE": "I cannot tell.",
               "HIGH": "Rating: 12"}

    def __init__(self, fail_with: Exception | None = None):
        super().__init__()
        self.batches: list[int] = []
        self.fail_with = fail_with

    def generate(self, requests):
        self.batches.append(len(requests))
        if self.fail_with:
            raise self.fail_with
        out = []
        for r in requests:
            asked = r.messages[-1]["content"]
            if "DOWN" in asked:
                out.append(GenResult("", [], [], None, "error", r.adapter, None, error="endpoint down", retries=2))
                continue
            cue = next(c for c in self.REPLIES if c in asked)
            out.append(GenResult(self.REPLIES[cue], [1], [2], None, "stop", r.adapter, None))
        return out

    def load_adapter(self, name, path, version):
        raise NotImplementedError

    def adapter_version(self, name):
        return None

    def score(self, prompt_ids, completion_ids, adapter):
        raise NotImplementedError

    def close(self):
        pass


def test_score_batches_dedupes_caches_and_counts():
    engine = ScriptedEngine()
    critic = PrivilegedCritic(engine, CriticConfig())
    batch = [judgment("informativeness", "GOOD plan"), judgment("hypothesis", "MID hypothesis"),
             judgment("informativeness", "NONE plan"), judgment("hypothesis", "HIGH hypothesis"),
             judgment("informativeness", "GOOD plan"),  # the same question twice: asked once
             judgment("informativeness", "DOWN plan")]
    assert critic.score(batch) == pytest.approx([1.0, 3 / 9, 0.0, 0.0, 1.0, 0.0])
    assert engine.batches == [5]  # every episode's judgments in one engine call
    h = critic.health
    assert (h["judgments"], h["requests"], h["batches"], h["cache_hits"]) == (6, 5, 1, 1)
    assert (h["parse_failures"], h["missing"], h["invalid"], h["fallbacks"], h["retries"]) == (2, 1, 1, 1, 2)
    assert h["parse_failure_rate"] == pytest.approx(2 / 4) and h["latency_s"] > 0

    # a second round: answered replies come from the cache; the failed request is asked again
    assert critic.score(batch[:4] + batch[5:]) == pytest.approx([1.0, 3 / 9, 0.0, 0.0, 0.0])
    assert engine.batches == [5, 1]
    assert critic.health["cache_hits"] == 5 and critic.health["fallbacks"] == 2
    # a different instance is a different question, even with the same text
    other = Instance(**{**INSTANCE.__dict__, "uid": "other"})
    critic.score([judgment("informativeness", "GOOD plan", other)])
    assert engine.batches == [5, 1, 1]


def test_cache_off_asks_every_time():
    engine = ScriptedEngine()
    critic = PrivilegedCritic(engine, CriticConfig(cache=False))
    critic.score([judgment("hypothesis", "GOOD")])
    critic.score([judgment("hypothesis", "GOOD")])
    assert engine.batches == [1, 1] and critic.health["cache_hits"] == 0


def test_engine_crash_gives_fallbacks_not_an_exception():
    critic = PrivilegedCritic(ScriptedEngine(fail_with=RuntimeError("engine died")), CriticConfig())
    assert critic.score([judgment("hypothesis", "GOOD"), judgment("informativeness", "MID")]) == [0.0, 0.0]
    assert critic.health["fallbacks"] == 2 and critic.health["fallback_rate"] == 1.0


def _critic(cfg: CriticConfig) -> tuple[PrivilegedCritic, Engine]:
    engine = critic_engine(EngineSet(ModelConfig(), RolloutConfig(), 0, use_ray=False), cfg)
    return PrivilegedCritic(engine, cfg), engine


def test_the_critic_engine_is_the_actors_exactly_when_it_names_the_same_model_and_backend():
    engines = EngineSet(ModelConfig(name="smollm2_135m"), RolloutConfig(engine="vllm"), 0, use_ray=False)
    actor = engines._made[("vllm", "smollm2_135m", None)] = ScriptedEngine()  # stands for the built actor
    assert critic_engine(engines, CriticConfig()) is actor
    assert critic_engine(engines, CriticConfig(model="smollm2_135m", backend="vllm")) is actor
    remote = CriticConfig(backend="openai", openai=OpenAIConfig(base_url="http://127.0.0.1:9/v1", model="judge"))
    owned = critic_engine(engines, remote)
    assert owned is not actor and owned.kind == "openai" and owned.model == "judge"
    engines.close()


def test_critic_over_a_failing_endpoint_counts_fallbacks_and_retries(flaky_endpoint):
    """Part of the requests fail (500, 400) or time out: they fall back, are counted, nothing raises,
    and the whole batch takes bounded time."""
    url, hits = flaky_endpoint
    cfg = CriticConfig(backend="openai", openai=OpenAIConfig(base_url=url, model="m", timeout_s=0.5, max_retries=1,
                                                             backoff_s=0.05, concurrency=8))
    critic, engine = _critic(cfg)
    batch = [judgment("informativeness", text) for text in ("plan A", "plan B", "FAIL", "BAD", "STALL", "FLAKY")]
    started = time.perf_counter()
    scores = critic.score(batch)
    elapsed = time.perf_counter() - started
    assert scores == pytest.approx([6 / 9, 6 / 9, 0.0, 0.0, 0.0, 6 / 9])
    h = critic.health
    assert (h["requests"], h["replies"], h["fallbacks"], h["parse_failures"]) == (6, 3, 3, 0)
    assert h["retries"] == 3  # FAIL once, STALL once, FLAKY once; BAD (400) is not retried
    assert elapsed < 4.0  # two 0.5 s timeouts for the stalled request, in parallel with the rest
    critic.score(batch)  # the failed ones are asked again, the answered ones come from the cache
    assert critic.health["cache_hits"] == 3 and critic.health["fallbacks"] == 6 and hits["FAIL"] == 4
    engine.close()


# ---------------------------------------------------------------- real SmolLM2 critics (slow)

SMALL = CriticConfig(max_tokens=24)


def _real_batch() -> list[Judgment]:
    return [judgment("hypothesis", "It sorts the list in descending order."),
            judgment("hypothesis", "It returns the first element of the list."),
            judgment("informativeness", "I will call it with an empty list to check the edge case."),
            judgment("informativeness", "I will call it with [3, 1, 2] again.")]


def _check_real_critic(critic: PrivilegedCritic, engine: Engine, batch: list[Judgment]) -> None:
    n = len(batch)
    before = engine.stats.requests
    scores = critic.score(batch)
    h = critic.health
    assert len(scores) == n and all(0.0 <= s <= 1.0 for s in scores)
    assert h["batches"] == 1 and h["requests"] == n and engine.stats.requests - before == n
    assert h["parse_failures"] <= n // 4 and h["fallbacks"] == 0  # SmolLM2 follows the format it is shown
    assert critic.score(batch) == scores  # the second time, all from the cache
    assert critic.health["cache_hits"] == n and critic.health["batches"] == 1


@pytest.mark.slow
def test_critic_through_vllm_while_the_actor_adapter_is_loaded(vllm_engine, smollm2_path, make_random_lora):
    if vllm_engine.adapter_version("actor") is None:
        vllm_engine.load_adapter("actor", make_random_lora(smollm2_path, 1), 1)
    critic = PrivilegedCritic(vllm_engine, SMALL)
    _check_real_critic(critic, vllm_engine, _real_batch())
    # (that base requests get exact base-model tokens next to adapter requests is
    # test_engines.py::test_vllm_shared_engine_serves_base_and_adapter_in_one_batch)


@pytest.mark.slow
def test_critic_through_hf(hf_smollm2):
    # two judgments: HF prefills the ~800-token prompts without vLLM's speed
    _check_real_critic(PrivilegedCritic(hf_smollm2, SMALL), hf_smollm2, _real_batch()[1:3])


@pytest.mark.slow
def test_critic_through_openai_against_vllm_serve(vllm_server):
    cfg = CriticConfig(max_tokens=24, backend="openai", openai=OpenAIConfig(base_url=vllm_server, model="smollm2"))
    critic, engine = _critic(cfg)
    _check_real_critic(critic, engine, _real_batch())
    engine.close()
