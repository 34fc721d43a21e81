"""The vLLM engine's loop: it steps on its own, whether or not a call is inside the engine, and calls from
several threads share its steps (a critic's judgment does not stall the actor's turns)."""

from __future__ import annotations

import threading
import time

import pytest

from aac.engines import EngineError, GenRequest, Sampling

pytestmark = pytest.mark.slow


def _ask(text: str, max_tokens: int) -> GenRequest:
    return GenRequest([{"role": "user", "content": text}], Sampling(temperature=0.0, max_tokens=max_tokens))


def _alone(engine, request: GenRequest) -> list[int]:
    return engine.generate([request])[0].token_ids


def test_submitted_requests_finish_with_no_call_inside_the_engine(vllm_engine):
    short, long_ = _ask("Count to three.", 2), _ask("Tell a story.", 24)
    tickets = vllm_engine.submit([short, long_])
    deadline = time.time() + 120
    while vllm_engine._live and time.time() < deadline:  # requests in vLLM; nobody collects meanwhile
        time.sleep(0.1)
    # a core that stepped only inside collect would hand back the short reply alone, first
    got = dict(vllm_engine.collect(tickets))
    assert set(got) == set(tickets) and [len(got[t].token_ids) for t in tickets] == [2, 24]


def test_a_long_critic_batch_shares_steps_with_the_actors_turns(vllm_engine):
    critic, turns = _ask("Rate this answer from 1 to 10 and explain why.", 48), [_ask("Name a color.", 3), _ask("Name a fruit.", 3)]
    expected = {"critic": _alone(vllm_engine, critic), **{i: _alone(vllm_engine, t) for i, t in enumerate(turns)}}
    first = vllm_engine.submit([turns[0]])  # the actor's stream is live: the critic's batch runs beside it
    judged: dict[str, list[int]] = {}
    judge = threading.Thread(target=lambda: judged.update(critic=_alone(vllm_engine, critic)))
    judge.start()
    while not set(vllm_engine._live) - set(first) and judge.is_alive():  # the judgment is in vLLM
        time.sleep(0.01)
    got = dict(vllm_engine.collect(first))
    while first[0] not in got:
        got.update(vllm_engine.collect(first))
    second = vllm_engine.submit([turns[1]])  # the next turn starts while the judgment decodes
    while second[0] not in got:
        got.update(vllm_engine.collect(second))
    assert judge.is_alive(), "the actor's turns waited for the critic's judgment"
    judge.join()
    assert judged["critic"] == expected["critic"]
    assert [got[first[0]].token_ids, got[second[0]].token_ids] == [expected[0], expected[1]]


def test_a_bad_call_fails_alone_and_the_loop_goes_on(vllm_engine):
    bad = GenRequest([{"role": "user", "content": "Hi"}], Sampling(max_tokens=2), adapter="never-loaded")
    with pytest.raises(EngineError, match="never-loaded"):
        vllm_engine.generate([bad])
    assert len(_alone(vllm_engine, _ask("Hi", 2))) == 2
