"""Generation engines: the shared interface, HF (tiny Qwen3, fast), vLLM and OpenAI (SmolLM2, slow)."""

from __future__ import annotations

import time

import pytest

from aac.config import OpenAIConfig
from aac.engines import EngineError, GenRequest, Sampling, make_engine
from aac.engines.base import TokenLogprobs, candidate_token_ids, cut_at_stop

POEM = [{"role": "user", "content": "Write a short poem about the sea."}]
OTHER = [{"role": "user", "content": "List three colours."}]
GREEDY = Sampling(temperature=0.0, max_tokens=16)


# ---------------------------------------------------------------- interface


def test_sampling_rejects_bad_values():
    with pytest.raises(ValueError, match="temperature"):
        Sampling(temperature=-1)
    with pytest.raises(ValueError, match="top_p"):
        Sampling(top_p=0)
    with pytest.raises(ValueError, match="max_tokens"):
        Sampling(max_tokens=0)


def test_unknown_engine_kind():
    with pytest.raises(ValueError, match="unknown engine kind 'tgi'"):
        make_engine("tgi", "x")


def test_cut_at_stop_takes_the_earliest():
    assert cut_at_stop("a STOP b END", ["END", "STOP"]) == ("a ", True)
    assert cut_at_stop("abc", ["x"]) == ("abc", False)
    assert cut_at_stop("abc", None) == ("abc", False)
    assert cut_at_stop("a STOP b END", ["END", "STOP"], include=True) == ("a STOP", True)


def test_token_logprobs_expectation_renormalises_over_the_candidates_present():
    import math

    r = TokenLogprobs({"9": math.log(0.3), "5": math.log(0.1), "x": math.log(0.5)}, [])
    mean, mass = r.expectation({str(d): d for d in range(10)})
    assert mean == pytest.approx((0.3 * 9 + 0.1 * 5) / 0.4) and mass == pytest.approx(0.4)
    assert TokenLogprobs({}, []).expectation({"1": 1}) == (None, 0.0)


# ---------------------------------------------------------------- HF on the tiny model (fast)


@pytest.fixture(scope="module")
def tiny_hf(tiny_model_path):
    engine = make_engine("hf", tiny_model_path, max_model_len=256, seed=0)
    yield engine
    engine.close()


def test_hf_batch_keeps_order_and_logprobs_match_score(tiny_hf):
    sampled = Sampling(temperature=1.0, max_tokens=12, logprobs=True, seed=7)
    requests = [GenRequest(POEM, GREEDY), GenRequest(OTHER, sampled), GenRequest(POEM, sampled)]
    results = tiny_hf.generate(requests)
    assert [len(r.token_ids) for r in results] == [16, 12, 12]
    assert results[0].logprobs is None and results[0].prompt_ids != results[1].prompt_ids
    for r in results[1:]:
        # the log-probs of the sampled tokens are temperature-1 log-probs: a forward pass agrees
        assert r.logprobs == pytest.approx(tiny_hf.score(r.prompt_ids, r.token_ids, None), abs=1e-4)
    again = tiny_hf.generate(requests)  # same requests and seeds, same tokens
    assert [r.token_ids for r in again] == [r.token_ids for r in results]
    assert tiny_hf.stats.requests >= 4 and tiny_hf.stats.generated_tokens >= 52


def test_hf_a_seeded_request_samples_the_same_tokens_whatever_shares_its_batch(tiny_hf):
    """Each row samples from its own seeded generator, as vLLM's requests do: alone, behind other rows, or
    with another seed beside it, a request's tokens follow its seed only."""
    mine = GenRequest(POEM, Sampling(temperature=1.0, max_tokens=12, seed=11))
    alone = tiny_hf.generate([mine])[0].token_ids
    mates = [GenRequest(OTHER, Sampling(temperature=1.0, max_tokens=12, seed=s)) for s in (1, 2)]
    assert tiny_hf.generate([*mates, mine])[-1].token_ids == alone
    assert tiny_hf.generate([mine, GenRequest(POEM, Sampling(temperature=1.0, max_tokens=12, seed=12))])[0].token_ids \
        == alone
    others = {tuple(tiny_hf.generate([GenRequest(POEM, Sampling(temperature=1.0, max_tokens=12, seed=s))])[0].token_ids)
              for s in range(4)}
    assert len(others) > 1  # the seed decides: a random model's tokens differ between seeds
    # top-p that keeps only the likeliest token is greedy decoding
    narrow = GenRequest(POEM, Sampling(temperature=1.0, top_p=1e-6, max_tokens=12, seed=3))
    assert tiny_hf.generate([narrow])[0].token_ids == tiny_hf.generate([GenRequest(POEM, Sampling(
        temperature=0.0, max_tokens=12))])[0].token_ids


def token_in(engine) -> list:
    """The same prompts as chat messages and as their tokens (`GenRequest.prompt_ids`, SkyRL's way)."""
    from aac.engines.base import render_chat

    ids = [render_chat(engine.tokenizer, m, engine.chat_template_kwargs) for m in (POEM, OTHER)]
    chats = engine.generate([GenRequest(POEM, GREEDY), GenRequest(OTHER, GREEDY)])
    tokens = engine.generate([GenRequest([], GREEDY, prompt_ids=i) for i in ids])
    assert [r.prompt_ids for r in tokens] == ids
    return [(c.token_ids, c.text) for c in chats], [(t.token_ids, t.text) for t in tokens]


def test_hf_takes_prompt_token_ids(tiny_hf):
    chats, tokens = token_in(tiny_hf)
    assert tokens == chats


def test_openai_refuses_prompt_token_ids():
    from aac.engines.openai_engine import OpenAIEngine

    engine = OpenAIEngine("m", openai=OpenAIConfig(base_url="http://127.0.0.1:9/v1", max_retries=0))
    result = engine.generate([GenRequest([], prompt_ids=[1, 2])])[0]
    assert result.finish_reason == "error" and "not prompt token ids" in result.error
    engine.close()


def test_hf_adapter_hot_load_and_base(tiny_hf, tiny_model_path, make_random_lora):
    base = tiny_hf.generate([GenRequest(POEM, GREEDY)])[0].token_ids
    with pytest.raises(EngineError, match="not loaded"):
        tiny_hf.generate([GenRequest(POEM, GREEDY, adapter="actor")])
    tiny_hf.load_adapter("actor", make_random_lora(tiny_model_path, 1, std=0.5), 1)
    out = tiny_hf.generate([GenRequest(POEM, GREEDY, "actor"), GenRequest(POEM, GREEDY)])
    assert out[0].token_ids != base and out[0].adapter_version == 1
    assert out[1].token_ids == base and out[1].adapter_version is None
    tiny_hf.load_adapter("actor", make_random_lora(tiny_model_path, 2, std=0.5), 2)
    v2 = tiny_hf.generate([GenRequest(POEM, GREEDY, "actor")])[0]
    assert tiny_hf.adapter_version("actor") == 2 and v2.adapter_version == 2 and v2.token_ids != out[0].token_ids


def test_hf_next_token_logprobs_are_one_forward_pass_per_batch(tiny_hf):
    """Each digit's log-prob is the summed probability of its spellings ("7", " 7": both one token in
    Qwen3's vocabulary), each `score`d as one token after the prompt (an independent forward pass), in a
    left-padded batch of prompts of different lengths as alone."""
    import math

    digits = [str(d) for d in range(10)]
    ids = candidate_token_ids(tiny_hf.tokenizer, digits)
    requests = [GenRequest(POEM), GenRequest(OTHER), GenRequest([{"role": "user", "content": "word " * 300}])]
    short, other, long = tiny_hf.next_token_logprobs(requests, digits)
    assert long.error and "max_model_len" in long.error and not long.logprobs
    for r in (short, other):
        assert r.error is None and set(r.logprobs) == set(digits)
        for d in digits[:3]:
            want = math.log(sum(math.exp(tiny_hf.score(r.prompt_ids, [t], None)[0]) for t in ids[d]))
            assert len(ids[d]) == 2 and r.logprobs[d] == pytest.approx(want, abs=1e-4)
    assert tiny_hf.next_token_logprobs([requests[1]], digits)[0].logprobs == pytest.approx(other.logprobs, abs=1e-4)
    with pytest.raises(EngineError, match="not a single token"):
        tiny_hf.next_token_logprobs(requests[:1], ["several words here"])


def test_hf_stop_string_and_overlong_prompt(tiny_hf):
    free = tiny_hf.generate([GenRequest(POEM, Sampling(max_tokens=24, seed=1))])[0]
    half = len(free.text) // 2  # a stop string: two characters with no space, in the text's second half
    stop = next((free.text[i:i + 2] for i in range(half, len(free.text) - 1)
                 if not any(c.isspace() for c in free.text[i:i + 2])), "")
    assert stop, f"no text to stop on in {free.text!r}"
    cut = tiny_hf.generate([GenRequest(POEM, Sampling(max_tokens=24, seed=1, stop=[stop]))])[0]
    assert stop not in cut.text and free.text.startswith(cut.text) and cut.finish_reason == "stop"
    assert cut.token_ids == free.token_ids[:len(cut.token_ids)] and len(cut.token_ids) < len(free.token_ids)
    kept = tiny_hf.generate([GenRequest(POEM, Sampling(max_tokens=24, seed=1, stop=[stop], include_stop=True))])[0]
    assert kept.text == cut.text + stop and kept.token_ids == cut.token_ids  # the same tokens, the stop in the text
    long = [{"role": "user", "content": "word " * 400}]
    results = tiny_hf.generate([GenRequest(long, GREEDY), GenRequest(POEM, GREEDY)])
    assert results[0].finish_reason == "error" and "max_model_len" in results[0].error
    assert results[1].finish_reason in ("stop", "length") and results[1].token_ids


# ---------------------------------------------------------------- OpenAI engine faults (fast)


def test_openai_retries_and_fallbacks_are_bounded(flaky_endpoint):
    url, hits = flaky_endpoint
    cfg = OpenAIConfig(base_url=url, model="m", timeout_s=0.5, max_retries=2, backoff_s=0.05, concurrency=4)
    engine = make_engine("openai", "m", openai=cfg)
    ask = [GenRequest([{"role": "user", "content": cue}], GREEDY) for cue in ("ok", "FAIL", "BAD", "STALL", "FLAKY")]
    started = time.perf_counter()
    ok, fail, bad, stall, flaky = engine.generate(ask)
    elapsed = time.perf_counter() - started
    engine.close()
    assert ok.text.endswith("Rating: 6") and ok.retries == 0 and ok.error is None
    assert fail.finish_reason == "error" and fail.retries == 2 and "500" in fail.error
    assert bad.finish_reason == "error" and bad.retries == 0  # a 4xx is not retried
    assert stall.finish_reason == "error" and stall.retries == 2 and "Timeout" in stall.error
    assert flaky.finish_reason == "stop" and flaky.retries == 1
    assert hits["FAIL"] == 3 and hits["STALL"] == 3 and hits["BAD"] == 1
    assert engine.stats.errors == 3 and engine.stats.retries == 5
    assert elapsed < 5.0  # 3 timeouts of 0.5 s and short back-offs, not the stalls' 3 s each
    with pytest.raises(NotImplementedError):
        engine.score([1], [2], None)


def test_cpu_threads_name_the_first_allowed_cores():
    from aac.engines.cpu_threads import allowed_cores, omp_threads, vllm_cpu_bind

    cores = allowed_cores()
    assert omp_threads(None) == len(cores) and omp_threads(3) == 3
    assert vllm_cpu_bind(None) == ",".join(map(str, cores)) and vllm_cpu_bind(1) == str(cores[0])
    with pytest.raises(ValueError, match="cpu_threads"):
        omp_threads(0)


# ---------------------------------------------------------------- vLLM (slow, one shared engine)


STALE_GROUPS = """
import os, sys
import torch.distributed as dist
from vllm.config import VllmConfig, set_current_vllm_config
from vllm.distributed import parallel_state as ps
from aac.engines.vllm_engine import _drop_stale_groups

os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=sys.argv[1])
def start():  # what an in-process engine's worker does on one CPU
    with set_current_vllm_config(VllmConfig()):
        ps.init_distributed_environment(1, 0, "env://", 0, "gloo")
        ps.ensure_model_parallel_initialized(1, 1)
start()
dist.destroy_process_group()  # a learner's collective in this process, closed
try:
    start()
except Exception as e:  # vLLM's groups, kept, are stale
    print("kept:", type(e).__name__, e)
dist.destroy_process_group()  # the one the failed start made
_drop_stale_groups()
start()
print("dropped: started", ps.get_pp_group().world_size)
"""


def test_an_in_process_vllm_starts_after_torchs_default_group_was_destroyed():
    """vLLM's process groups (module globals) outlive torch's default group; destroyed under them, they are
    dropped before an in-process engine starts, which then makes its own (kept: it fails)."""
    import subprocess
    import sys

    from aac.learner.backends import free_port

    out = subprocess.run([sys.executable, "-c", STALE_GROUPS, str(free_port())], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    kept, dropped = [ln for ln in out.stdout.splitlines() if ln.startswith(("kept:", "dropped:"))]
    assert "not initialized" in kept and dropped == "dropped: started 1"


@pytest.mark.slow
def test_vllm_cpu_engine_runs_in_process_on_every_core(vllm_engine):
    """The CPU build's defaults (in_process, cpu_threads None): no engine-core or worker process of its
    own, and the model's torch threads on every allowed core (vLLM's separate worker bound one of 2)."""
    import psutil
    import torch

    from aac.engines.cpu_threads import allowed_cores

    children = psutil.Process().children(recursive=True)
    # the session's `vllm serve` (the OpenAI backend's tests) is a child too, with processes of its own
    served = {c.pid for s in children if "vllm.entrypoints" in " ".join(s.cmdline()) for c in s.children(recursive=True)}
    titles = [" ".join(p.cmdline()) for p in children if p.pid not in served]
    assert not [t for t in titles if "VLLM::" in t], titles
    assert torch.get_num_threads() == len(allowed_cores())


@pytest.mark.slow
def test_vllm_on_cpu_runs_eager_and_seeds_each_request_unless_told_not_to(vllm_engine):
    """rollout.enforce_eager and rollout.per_request_seeds default (None) to the CPU build's settings; with
    per-request seeds off, requests sample from the engine's one generator (vLLM's batched sampler)."""
    assert vllm_engine.llm.llm_engine.vllm_config.model_config.enforce_eager  # no CUDA graphs on a CPU
    assert vllm_engine.per_request_seeds
    twins = [GenRequest(POEM, Sampling(temperature=1.0, max_tokens=16, seed=5)) for _ in range(2)]
    seeded = vllm_engine.generate(twins)
    assert seeded[0].token_ids == seeded[1].token_ids == vllm_engine.generate(twins[:1])[0].token_ids
    vllm_engine.per_request_seeds = False
    try:
        unseeded = vllm_engine.generate(twins) + vllm_engine.generate(twins)
    finally:
        vllm_engine.per_request_seeds = True
    assert len({tuple(r.token_ids) for r in unseeded}) > 1  # the twins' seed no longer decides their tokens


@pytest.mark.slow
def test_vllm_shared_engine_serves_base_and_adapter_in_one_batch(vllm_engine, hf_smollm2, smollm2_path,
                                                                make_random_lora):
    """The critic's request (no adapter) and the actor's (adapter) for the same prompt, in one mixed
    batch, give the base model's and the adapted model's greedy float32 tokens (checked against HF)."""
    v1, v2 = make_random_lora(smollm2_path, 1), make_random_lora(smollm2_path, 2)
    for engine in (vllm_engine, hf_smollm2):
        engine.load_adapter("actor", v1, 1)
    batch = [GenRequest(POEM, GREEDY), GenRequest(POEM, GREEDY, "actor"), GenRequest(OTHER, GREEDY),
             GenRequest(OTHER, GREEDY, "actor")]
    got = vllm_engine.generate(batch)
    want = hf_smollm2.generate(batch)
    assert [r.token_ids for r in got] == [r.token_ids for r in want]
    assert got[0].token_ids != got[1].token_ids and got[2].token_ids != got[3].token_ids
    assert [r.adapter_version for r in got] == [None, 1, None, 1]

    for engine in (vllm_engine, hf_smollm2):  # hot-load a new version: new id, old one removed
        engine.load_adapter("actor", v2, 2)
    got2 = vllm_engine.generate(batch[:2])
    assert [r.token_ids for r in got2] == [r.token_ids for r in hf_smollm2.generate(batch[:2])]
    assert got2[0].token_ids == got[0].token_ids and got2[1].token_ids != got[1].token_ids
    assert vllm_engine.adapter_version("actor") == 2 and got2[1].adapter_version == 2
    assert len(vllm_engine.llm.llm_engine.list_loras()) == 2  # the identity + actor v2

    # an all-base batch right after adapter batches is exact by both routes: LoRA off
    # (plain_base_batches, the CPU default) and the identity adapter
    default = vllm_engine.plain_base_batches
    try:
        for plain in (True, False):
            vllm_engine.plain_base_batches = plain
            base_only = vllm_engine.generate([batch[0], batch[2]])
            assert [r.token_ids for r in base_only] == [want[0].token_ids, want[2].token_ids], plain
    finally:
        vllm_engine.plain_base_batches = default


@pytest.mark.slow
def test_vllm_logprobs_are_temperature_one_and_match_score(vllm_engine, hf_smollm2, smollm2_path,
                                                          make_random_lora):
    for engine in (vllm_engine, hf_smollm2):
        if engine.adapter_version("actor") is None:
            engine.load_adapter("actor", make_random_lora(smollm2_path, 1), 1)
    # sampled at temperature 0.7 / top-p 0.9, yet the log-probs are those of the raw distribution
    sampling = Sampling(temperature=0.7, top_p=0.9, max_tokens=12, logprobs=True, seed=3)
    for r in vllm_engine.generate([GenRequest(POEM, sampling, "actor"), GenRequest(POEM, sampling)]):
        assert len(r.logprobs) == len(r.token_ids) == 12
        assert r.logprobs == pytest.approx(vllm_engine.score(r.prompt_ids, r.token_ids, r.adapter), abs=2e-4)
        assert r.logprobs == pytest.approx(hf_smollm2.score(r.prompt_ids, r.token_ids, r.adapter), abs=2e-3)


@pytest.mark.slow
def test_vllm_next_token_logprobs_match_hf(vllm_engine, hf_smollm2):
    """vLLM's exact candidate log-probs (`logprob_token_ids`) are HF's, with an adapter loaded."""
    digits = [str(d) for d in range(10)]
    requests = [GenRequest(POEM), GenRequest(OTHER)]
    got, want = vllm_engine.next_token_logprobs(requests, digits), hf_smollm2.next_token_logprobs(requests, digits)
    for g, w in zip(got, want):
        assert g.error is None and g.prompt_ids == w.prompt_ids
        assert [g.logprobs[d] for d in digits] == pytest.approx([w.logprobs[d] for d in digits], abs=2e-3)


@pytest.mark.slow
def test_vllm_takes_prompt_token_ids(vllm_engine):
    chats, tokens = token_in(vllm_engine)
    assert tokens == chats


@pytest.mark.slow
def test_vllm_overlong_prompt_fails_alone(vllm_engine):
    long = [{"role": "user", "content": "word " * 2100}]
    results = vllm_engine.generate([GenRequest(long, GREEDY), GenRequest(POEM, Sampling(max_tokens=4))])
    assert results[0].finish_reason == "error" and "max_model_len" in results[0].error
    assert len(results[1].token_ids) == 4
    with pytest.raises(EngineError, match="not loaded"):
        vllm_engine.generate([GenRequest(POEM, GREEDY, adapter="nobody")])


@pytest.mark.slow
def test_vllm_streams_requests_and_returns_each_when_it_is_done(vllm_engine, smollm2_path, make_random_lora):
    """`submit` / `collect`: the short request comes back first while the long one decodes; the
    tokens are those of `generate`; a batch (the critic's) served beside the stream leaves it whole."""
    if vllm_engine.adapter_version("actor") is None:
        vllm_engine.load_adapter("actor", make_random_lora(smollm2_path, 1), 1)
    short, long = Sampling(temperature=0.0, max_tokens=3), Sampling(temperature=0.0, max_tokens=24)
    want = vllm_engine.generate([GenRequest(POEM, short, "actor"), GenRequest(OTHER, long, "actor")])
    tickets = vllm_engine.submit([GenRequest(POEM, short, "actor"), GenRequest(OTHER, long, "actor")])
    first = vllm_engine.collect(tickets)
    assert [t for t, _ in first] == tickets[:1] and first[0][1].token_ids == want[0].token_ids
    with pytest.raises(EngineError, match="not yet collected"):
        vllm_engine.load_adapter("actor", make_random_lora(smollm2_path, 1), 1)
    critic = vllm_engine.generate([GenRequest(POEM, GREEDY)])  # steps the stream too, and keeps its output
    assert critic[0].token_ids == vllm_engine.generate([GenRequest(POEM, GREEDY)])[0].token_ids
    rest = vllm_engine.collect(tickets[1:])
    assert [t for t, _ in rest] == tickets[1:] and rest[0][1].token_ids == want[1].token_ids
    assert rest[0][1].adapter_version == vllm_engine.adapter_version("actor")
    with pytest.raises(EngineError, match="never submitted or already collected"):
        vllm_engine.collect(tickets[1:])
    overlong = vllm_engine.submit([GenRequest([{"role": "user", "content": "word " * 2100}], GREEDY)])
    [(_, res)] = vllm_engine.collect(overlong)
    assert res.finish_reason == "error" and "max_model_len" in res.error


@pytest.mark.slow
def test_vllm_and_hf_keep_the_stop_string_alike(vllm_engine, hf_smollm2):
    """`include_stop`: both engines end the reply at the stop string and keep it, with the same tokens."""
    free = vllm_engine.generate([GenRequest(POEM, GREEDY)])[0]
    stop = free.text.split()[2]
    sampling = Sampling(temperature=0.0, max_tokens=16, stop=[stop], include_stop=True)
    got, want = (e.generate([GenRequest(POEM, sampling)])[0] for e in (vllm_engine, hf_smollm2))
    assert got.text.endswith(stop) and free.text.startswith(got.text) and got.finish_reason == "stop"
    assert (got.text, got.token_ids) == (want.text, want.token_ids) and len(got.token_ids) < len(free.token_ids)


@pytest.mark.slow
def test_openai_engine_against_vllm_serve(vllm_server, vllm_engine):
    engine = make_engine("openai", "smollm2", openai=OpenAIConfig(base_url=vllm_server, timeout_s=60),
                         return_token_ids=True)
    sampling = Sampling(temperature=0.0, max_tokens=12, logprobs=True)
    remote = engine.generate([GenRequest(POEM, sampling), GenRequest(OTHER, sampling)])
    engine.close()
    local = vllm_engine.generate([GenRequest(POEM, sampling), GenRequest(OTHER, sampling)])
    for r, lo in zip(remote, local):
        assert r.error is None and r.retries == 0
        assert r.token_ids == lo.token_ids and r.prompt_ids == lo.prompt_ids  # same model, same float32 greedy
        assert r.logprobs == pytest.approx(lo.logprobs, abs=1e-3)
    # next-token log-probs through the chat API's top_logprobs: the digits the server's top-20 holds
    digits = [str(d) for d in range(10)]
    rating = [{"role": "user", "content": "Rate the sea from 0 to 9. Answer with one digit.\nRating:"}]
    engine = make_engine("openai", "smollm2", openai=OpenAIConfig(base_url=vllm_server, timeout_s=60))
    (remote,) = engine.next_token_logprobs([GenRequest(rating)], digits)
    engine.close()
    (local,) = vllm_engine.next_token_logprobs([GenRequest(rating)], digits)
    assert remote.error is None and len(remote.logprobs) >= 5
    for d, lp in remote.logprobs.items():
        assert lp == pytest.approx(local.logprobs[d], abs=1e-3)
