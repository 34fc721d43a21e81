"""The privileged critic: rating parsing, prompts, batching, cache, failures; then real SmolLM2 critics
through vllm, hf and openai (a local `vllm serve`)."""

from __future__ import annotations

import dataclasses
import json
import math
import time
from dataclasses import replace
from typing import Optional

import pytest

from aac.config import CriticConfig, ModelConfig, OpenAIConfig, RolloutConfig
from aac.critic import Judgment, PrivilegedCritic, parse_rating
from aac.critic.prompts import critic_messages
from aac.engines.base import Engine, GenResult, TokenLogprobs
from aac.env.instance import Instance
from aac.env.observation import Observation
from aac.placement import EngineSet, critic_engine

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
def test_parse_rating_failures_have_no_score(reply, status):
    parsed = parse_rating(reply)
    assert (parsed.value, parsed.status, parsed.score) == (None, status, None)


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


def test_a_long_source_keeps_its_end_where_the_judged_function_is():
    helpers = "".join(f"def helper_{i}(x):\n    return x + {i}\n\n" for i in range(120))  # validator and helpers first
    long = dataclasses.replace(INSTANCE, code=helpers + INSTANCE.code)
    assert len(long.code) > 2000
    text = critic_messages(judgment("hypothesis", "It reverses the list.", long), "privileged")[-1]["content"]
    assert "sorted(arg0)[::-1]" in text and "…[cut]" in text and "def helper_0(" not in text


def test_prompt_examples_fix_the_format_and_can_be_dropped():
    j = judgment("hypothesis", "It reverses the list.")
    with_examples = critic_messages(j, "privileged")
    assert [m["role"] for m in with_examples] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert all(parse_rating(m["content"]).status == "ok" for m in with_examples if m["role"] == "assistant")
    assert [m["role"] for m in critic_messages(j, "privileged", examples=False)] == ["system", "user"]
    with pytest.raises(ValueError, match="unknown judgment kind 'style'"):
        critic_messages(judgment("style", "x"), "privileged")


def test_logprob_prompt_ends_with_the_rating_cue_and_examples_answer_a_digit():
    j = judgment("informativeness", "Call it with an empty list.")
    messages = critic_messages(j, "privileged", scoring="logprob")
    assert messages[-1]["content"].endswith("one digit from 0 to 9.\nRating:")
    assert [m["content"] for m in messages if m["role"] == "assistant"] == ["1", "8"]
    # the question itself is the generate prompt's, up to the answer instruction
    generate = critic_messages(j, "privileged")[-1]["content"]
    assert generate.rsplit("\n\n", 1)[0] == messages[-1]["content"].rsplit("\n\n", 1)[0]


# ---------------------------------------------------------------- batching, cache, failures (test double)


class ScriptedEngine(Engine):
    """Answers each request by the first cue in its graded text; records the batches it was sent.

    Log-probs: "GOOD" puts 3/4 of the mass on 9 and 1/4 on 5 (score (0.75 * 9 + 0.25 * 5) / 9);
    "MID" all on 3, "NONE" on no digit (as an endpoint whose top-k holds none)."""

    kind = "scripted"
    REPLIES = {"GOOD": "Useful.\nRating: 9", "MID": "Some use.\nRating: 3", "NONE": "I cannot tell.",
               "HIGH": "Rating: 12"}
    LOGPROBS = {"GOOD": {"9": math.log(0.6), "5": math.log(0.2)}, "MID": {"3": 0.0}, "NONE": {}}

    def __init__(self, fail_with: Exception | None = None):
        super().__init__()
        self.batches: list[int] = []
        self.asked: list[list[str]] = []
        self.fail_with = fail_with

    def next_token_logprobs(self, requests, candidates):
        self.batches.append(len(requests))
        self.asked.append([r.messages[-1]["content"] for r in requests])
        out = []
        for r in requests:
            asked = r.messages[-1]["content"]
            if "DOWN" in asked:
                out.append(TokenLogprobs({}, [], error="endpoint down"))
                continue
            cue = next(c for c in self.LOGPROBS if c in asked)
            out.append(TokenLogprobs(self.LOGPROBS[cue], [1]))
        return out

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
    assert critic.score(batch) == [1.0, pytest.approx(3 / 9), None, None, 1.0, None]
    assert engine.batches == [5]  # every episode's judgments in one engine call
    h = critic.health
    assert (h["judgments"], h["requests"], h["batches"], h["cache_hits"]) == (6, 5, 1, 1)
    assert (h["parse_failures"], h["missing"], h["invalid"], h["fallbacks"], h["retries"]) == (2, 1, 1, 1, 2)
    assert h["parse_failure_rate"] == pytest.approx(2 / 4) and h["latency_s"] > 0

    # a second round: answered replies come from the cache; the failed request is asked again
    assert critic.score(batch[:4] + batch[5:]) == [1.0, pytest.approx(3 / 9), None, None, None]
    assert engine.batches == [5, 1]
    assert critic.health["cache_hits"] == 5 and critic.health["fallbacks"] == 2
    # a different instance is a different question, even with the same text
    other = Instance(**{**INSTANCE.__dict__, "uid": "other"})
    critic.score([judgment("informativeness", "GOOD plan", other)])
    assert engine.batches == [5, 1, 1]


def test_logprob_scoring_is_the_digits_expectation_and_never_parses():
    engine = ScriptedEngine()
    critic = PrivilegedCritic(engine, CriticConfig(scoring="logprob"))
    batch = [judgment("hypothesis", "GOOD"), judgment("informativeness", "MID plan"),
             judgment("hypothesis", "NONE"), judgment("hypothesis", "DOWN")]
    assert critic.score(batch) == [pytest.approx((0.75 * 9 + 0.25 * 5) / 9), pytest.approx(3 / 9), None, None]
    assert engine.batches == [4]
    h = critic.health
    assert (h["replies"], h["parse_failures"], h["missing"], h["fallbacks"]) == (3, 1, 1, 1)
    assert h["digit_mass_mean"] == pytest.approx((0.8 + 1.0 + 0.0) / 3)
    assert critic.score(batch[:3]) == critic.score(batch[:3]) and engine.batches == [4]  # cached


def test_judgments_are_sent_prefix_neighbours_first_and_answered_in_order():
    other = Instance(**{**INSTANCE.__dict__, "uid": "other", "code": "def test_func(arg0):\n    return arg0\n"})
    engine = ScriptedEngine()
    critic = PrivilegedCritic(engine, CriticConfig(scoring="logprob"))
    batch = [judgment("hypothesis", "GOOD a"), judgment("hypothesis", "MID b", other),
             judgment("hypothesis", "MID c"), judgment("hypothesis", "GOOD d", other)]
    scores = critic.score(batch)
    assert scores == [pytest.approx(critic.score([j])[0]) for j in batch]  # each its own answer
    sources = ["sorted(arg0)" in text for text in engine.asked[0]]
    assert sources in ([True, True, False, False], [False, False, True, True])  # same source side by side


def test_cache_off_asks_every_time():
    engine = ScriptedEngine()
    critic = PrivilegedCritic(engine, CriticConfig(cache=False))
    critic.score([judgment("hypothesis", "GOOD")])
    critic.score([judgment("hypothesis", "GOOD")])
    assert engine.batches == [1, 1] and critic.health["cache_hits"] == 0


def test_engine_crash_gives_fallbacks_not_an_exception():
    critic = PrivilegedCritic(ScriptedEngine(fail_with=RuntimeError("engine died")), CriticConfig())
    assert critic.score([judgment("hypothesis", "GOOD"), judgment("informativeness", "MID")]) == [None, None]
    assert critic.health["fallbacks"] == 2 and critic.health["fallback_rate"] == 1.0


@pytest.mark.parametrize("scoring", ["generate", "logprob"])
def test_prompts_past_the_context_are_counted_truncated_and_not_asked_again(tiny_model_path, scoring):
    """A real engine whose context is shorter than the critic's prompts (~800 tokens): each judgment is
    unscored and counted as truncated (critic/truncated), not as a fallback, and not sent again."""
    from aac.engines import make_engine

    engine = make_engine("hf", tiny_model_path, dtype="float32", max_model_len=256, seed=0)
    try:
        critic = PrivilegedCritic(engine, CriticConfig(scoring=scoring))
        batch = _real_batch()[:2]
        assert critic.score(batch) == [None, None]
        h = critic.health
        assert (h["truncated"], h["fallbacks"], h["requests"], h["parse_failures"]) == (2, 0, 2, 0)
        assert critic.score(batch) == [None, None] and critic.health["requests"] == 2  # from the cache
    finally:
        engine.close()


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
    assert scores == [pytest.approx(6 / 9)] * 2 + [None] * 3 + [pytest.approx(6 / 9)]
    h = critic.health
    assert (h["requests"], h["replies"], h["fallbacks"], h["parse_failures"]) == (6, 3, 3, 0)
    assert h["retries"] == 3  # FAIL once, STALL once, FLAKY once; BAD (400) is not retried
    assert elapsed < 4.0  # two 0.5 s timeouts for the stalled request, in parallel with the rest
    critic.score(batch)  # the failed ones are asked again, the answered ones come from the cache
    assert critic.health["cache_hits"] == 3 and critic.health["fallbacks"] == 6 and hits["FAIL"] == 4
    engine.close()


# ---------------------------------------------------------------- real SmolLM2 critics (slow)

SMALL = CriticConfig(max_tokens=24)
LOGPROB = CriticConfig(scoring="logprob")


def _real_batch() -> list[Judgment]:
    return [judgment("hypothesis", "It sorts the list in descending order."),
            judgment("hypothesis", "It returns the first element of the list."),
            judgment("informativeness", "I will call it with an empty list to check the edge case."),
            judgment("informativeness", "I will call it with [3, 1, 2] again.")]


def _check_real_critic(critic: PrivilegedCritic, engine: Engine, batch: list[Judgment]) -> list[Optional[float]]:
    n = len(batch)
    before = engine.stats.requests
    scores = critic.score(batch)
    h = critic.health
    assert len(scores) == n and all(s is None or 0.0 <= s <= 1.0 for s in scores)
    assert h["batches"] == 1 and h["requests"] == n and engine.stats.requests - before == n
    assert h["parse_failures"] <= n // 4 and h["fallbacks"] == 0  # SmolLM2 follows the format it is shown
    if critic.scoring == "logprob":  # no parse failures by construction; the digits hold most of the mass
        assert h["parse_failures"] == 0 and None not in scores and h["digit_mass_mean"] > 0.5
    assert critic.score(batch) == scores  # the second time, all from the cache
    assert critic.health["cache_hits"] == n and critic.health["batches"] == 1
    return scores


@pytest.mark.slow
def test_critic_through_vllm_while_the_actor_adapter_is_loaded(vllm_engine, smollm2_path, make_random_lora):
    if vllm_engine.adapter_version("actor") is None:
        vllm_engine.load_adapter("actor", make_random_lora(smollm2_path, 1), 1)
    critic = PrivilegedCritic(vllm_engine, SMALL)
    _check_real_critic(critic, vllm_engine, _real_batch())
    logprob = _check_real_critic(PrivilegedCritic(vllm_engine, LOGPROB), vllm_engine, _real_batch())
    assert len(set(logprob)) == len(logprob)  # continuous scores: no two judgments tie
    # (that base requests get exact base-model tokens next to adapter requests is
    # test_engines.py::test_vllm_shared_engine_serves_base_and_adapter_in_one_batch)


@pytest.mark.slow
def test_critic_through_hf(hf_smollm2):
    # two judgments: HF prefills the ~800-token prompts without vLLM's speed
    _check_real_critic(PrivilegedCritic(hf_smollm2, SMALL), hf_smollm2, _real_batch()[1:3])
    _check_real_critic(PrivilegedCritic(hf_smollm2, LOGPROB), hf_smollm2, _real_batch()[1:3])


@pytest.mark.slow
def test_critic_through_openai_against_vllm_serve(vllm_server):
    cfg = CriticConfig(max_tokens=24, backend="openai", openai=OpenAIConfig(base_url=vllm_server, model="smollm2"))
    critic, engine = _critic(cfg)
    _check_real_critic(critic, engine, _real_batch())
    critic, engine = _critic(replace(cfg, scoring="logprob"))
    _check_real_critic(critic, engine, _real_batch())  # top_logprobs of the chat completions API
    engine.close()


# ---------------------------------------------------------------- coverage informativeness (real runner + sandbox)


def test_coverage_informativeness_pays_new_branches_and_new_results_on_a_built_row():
    """HumanEval/125 splits on spaces, else on commas, else counts letters; both context examples
    contain a space. With w = 0.5: a query down an unexplored branch beats one down the explored path,
    and a call that repeats an earlier one, or no call at all, scores 0."""
    from aac.critic.coverage import CoverageInformativeness
    from aac.datasets import load_instances
    from aac.env.prompts import example_repr
    from aac.env.protocol import sandbox_caller

    inst = next(i for i in load_instances("builtin:humaneval", split="test") if i.uid == "HumanEval/125")
    context = [Observation(inp, example_repr(out, 300), None) for inp, out in inst.train_examples]
    assert all(" " in inp for inp, _ in inst.train_examples)
    caller = sandbox_caller(None)

    def after(calls: list[str]) -> list[Observation]:
        done = [caller(inst.code, q, 5.0) for q in calls]
        return context + [Observation(q, r.output_repr, r.error) for q, r in zip(calls, done)]

    def asked(query, calls=(), **kw):
        return Judgment("informativeness", inst, "It splits the text into words.", after(list(calls)), "plan",
                        query=query)

    scorer = CoverageInformativeness(caller)
    try:
        comma, space, again, none, comma_again, letters = scorer.score([
            asked("('ab,cd',)"),  # the comma branch: 2 of the 4 branch arcs are new, a new result
            asked("('Good morning',)"),  # the explored space path, a new result
            asked(inst.train_examples[0][0]),  # a context example again
            asked(None),  # the input turn made no call
            asked("('a,b',)", ["('ab,cd',)"]),  # the comma path once more
            asked("('abcdef',)", ["('ab,cd',)"]),  # the last arc (the `elif` false)
        ])
        assert comma == pytest.approx(0.5 * 2 / 4 + 0.5) and space == pytest.approx(0.5)
        assert comma > space and again == 0.0 and none == 0.0
        assert comma_again == pytest.approx(0.5) and letters == pytest.approx(0.5 * 1 / 4 + 0.5)
        repeated = asked("('ab,cd',)", ["('ab,cd',)"])
        assert scorer.score([repeated, repeated]) == [0.0, 0.0]  # identical repeated queries: nothing new
        # a call that raised (wrong arity; a TypeError not seen before) observed nothing, as the reward says
        assert caller(inst.code, "('ab,cd', 1)", 5.0).error.startswith("TypeError")
        assert scorer.score([asked("('ab,cd', 1)")]) == [0.0]
    finally:
        scorer.close()
    # the output weight is a real knob: w = 0 pays arcs only, w = 1 results only
    for weight, want in ((0.0, [0.5, 0.0]), (1.0, [1.0, 1.0])):
        critic = PrivilegedCritic(ScriptedEngine(), CriticConfig(informativeness="coverage",
                                                                 coverage_output_weight=weight), caller=caller)
        try:
            got = critic.score([asked("('ab,cd',)"), asked("('Good morning',)"),
                                judgment("hypothesis", "GOOD")])
        finally:
            critic.close()
        assert got == [pytest.approx(w) for w in want] + [1.0]  # hypotheses still go to the LLM
        assert critic.health["coverage_judgments"] == 2 and critic.health["requests"] == 1


# ---------------------------------------------------------------- the report card


@pytest.mark.parametrize("description, degraded, how", [
    ("Returns the smallest element.", "Returns the largest element.", "negated: smallest -> largest"),
    ("True when all items are even.", "False when all items are even.", "negated: True -> False"),
    ("The result is sorted.", "The result is not sorted.", "negated: is not"),
    ("Reverse the string. Then repeat it twice over.", "Reverse the string.", "dropped sentence 2"),
    ("Reverse the string", None, None),
])
def test_degrade_negates_a_condition_or_drops_a_sentence(description, degraded, how):
    from aac.critic.degrade import degrade

    assert degrade(description) == (None if degraded is None else (degraded, how))


class GoldSeer(ScriptedEngine):
    """A perfect critic: 9 when the graded description is the reference, else 2 (or as `reply` says)."""

    def __init__(self, reply: str | None = None):
        super().__init__()
        self.reply = reply

    def generate(self, requests):
        out = []
        for r in requests:
            asked = r.messages[-1]["content"]
            gold = asked.split("Reference description (hidden from the agent):\n", 1)[1].split("\n\n", 1)[0]
            graded = asked.split("Agent's description of the function:\n", 1)[1].split("\n\n", 1)[0]
            out.append(GenResult(self.reply or f"Rating: {9 if graded == gold else 2}", [1] * 10, [2], None, "stop",
                                 None, None))
        self.stats.requests += len(out)
        self.stats.prompt_tokens += 10 * len(out)
        return out


def test_card_of_a_perfect_critic_and_of_one_at_chance(tmp_path):
    from aac.critic import NEVER_CHECKED, card_headline, card_status
    from aac.critic.card import card_headline_of, run_card, write_card
    from aac.datasets import load_instances

    instances = load_instances("builtin:humaneval", split="test", limit=6)
    about = {"model": "seer", "backend": "test", "scoring": "generate", "data": "builtin:humaneval", "split": "test"}
    card = run_card(PrivilegedCritic(GoldSeer(), CriticConfig()), instances, about)
    assert card["instances"] == 6 and card["classes"]["gold"]["n"] == card["classes"]["mismatched"]["n"] == 6
    assert card["judgments"] == 12 + card["classes"]["degraded"]["n"] and card["classes"]["degraded"]["n"] >= 4
    assert card["auc_gold_vs_mismatched"] == card["auc_gold_vs_degraded"] == 1.0
    assert card["parse_failure_rate"] == 0.0 and card["prompt_tokens_per_judgment"] == 10.0
    assert card["score_spread"] > 0.3 and card["seconds_per_judgment"] > 0
    assert all(it["text"] != instances[0].description for it in card["items"][1:3])
    json_path, png_path = write_card(card, tmp_path / "seer")
    assert png_path.stat().st_size > 5000
    headline = card_headline(json_path)
    assert "AUC gold/mismatched 1.00, gold/degraded 1.00" in headline and "AT CHANCE" not in headline
    assert card_status(str(json_path)) == headline
    assert card_status(None) == NEVER_CHECKED and "no card at /nowhere" in card_status("/nowhere")

    flat = run_card(PrivilegedCritic(GoldSeer("Rating: 5"), CriticConfig()), instances, about)
    assert flat["auc_gold_vs_mismatched"] == 0.5 and flat["score_spread"] == 0.0
    assert "AT CHANCE" in card_headline_of(flat)


def test_check_cli_runs_the_card_against_an_endpoint(flaky_endpoint, tmp_path, capsys):
    """`python -m aac.critic.check` takes the training overrides; every reply here says 6: at chance."""
    from aac.critic.check import main

    url, hits = flaky_endpoint
    out = tmp_path / "card"
    assert main(["limit=3", f"out={out}", "critic.backend=openai", f"critic.openai.base_url={url}",
                 "critic.openai.model=m"]) == 0
    card = json.loads((out / "card.json").read_text())
    assert card["critic"]["backend"] == "openai" and card["critic"]["base_url"] == url
    assert card["judgments"] >= 6 and card["auc_gold_vs_mismatched"] == 0.5 and card["parse_failure_rate"] == 0.0
    assert hits["OK"] == card["judgments"] + 1  # + the warm-up
    assert "AT CHANCE" in capsys.readouterr().out and (out / "card.png").exists()
    with pytest.raises(SystemExit, match=r"^aac: config error: critic\.scoring: Invalid value 'sometimes'"):
        main(["critic.scoring=sometimes"])
    # the scripted critic is a rule: no card to measure, one line before any engine starts
    with pytest.raises(SystemExit, match=r"^aac: config error: critic\.kind=scripted is a rule .* no report card"):
        main(["critic.kind=scripted"])
