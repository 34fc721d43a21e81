"""The one episode driver: continuous batching, its slot bound, and one seeding rule."""

from __future__ import annotations

import threading
import time
from dataclasses import replace

import pytest
from doubles import GenerateOnly

from aac.engines import GenResult
from aac.env.instance import Instance
from aac.env.protocol import ProtocolConfig, sandbox_caller
from aac.rollout.driver import EpisodeDriver, EpisodeSpec, SamplingSpec, turn_seed
from aac.sandbox.pool import SandboxPool
from aac.sandbox.result import CallKind, CallResult

INST = Instance(uid="t/0", source="t", code="def test_func(x):\n    return x\n", description="identity",
                header="def test_func(x):", train_examples=[("(1,)", 1), ("(2,)", 2)], test_examples=[],
                all_examples=[])


def fixed_caller(source, input_str, timeout_s):
    return CallResult(output=1, error=None, duration_s=0.0, output_repr="1", normalized=1)


class StopsAfter(GenerateOnly):
    """Episode k says YES in cycle stops[k] (k read from the seed); records every call's requests.
    It does not stream: each collect is one generate over every live episode (lockstep)."""

    def __init__(self, stops, seed):
        super().__init__()
        self.stops, self.seed, self.calls = stops, seed, []

    def key_turn(self, seed):
        return divmod(seed - self.seed * 1_000_003 * 4096, 4096)

    def reply(self, request) -> GenResult:
        key, turn = self.key_turn(request.sampling.seed)
        decision = "YES" if turn // 3 + 1 >= self.stops[key] else "NO"
        return GenResult(f"Input: (3,)\nDecision: {decision}\nSummary: identity", [], [1], None, "stop", None, None)

    def generate(self, requests):
        self.calls.append([r.sampling.seed for r in requests])
        return [self.reply(r) for r in requests]


class Streams(StopsAfter):
    """StopsAfter as a streaming engine: turn t of episode k takes length(k, t) decode steps, and
    `collect` returns when the first of the given requests is done. `steps` counts decode steps."""

    def __init__(self, stops, seed, length):
        super().__init__(stops, seed)
        self.length, self.left, self.steps, self.submitted = length, {}, 0, []

    def submit(self, requests):
        tickets = [len(self.submitted) + i for i in range(len(requests))]
        for t, r in zip(tickets, requests):
            self.submitted.append(r)
            self.left[t] = self.length(*self.key_turn(r.sampling.seed))
        return tickets

    def collect(self, tickets):
        n = min(self.left[t] for t in tickets)
        self.steps += n
        for t in self.left:
            self.left[t] -= n
        done = [t for t in tickets if self.left[t] == 0]
        for t in done:
            del self.left[t]
        return [(t, self.reply(self.submitted[t])) for t in done]


def _play(stops, max_live, seed=5, engine=None):
    engine = engine or StopsAfter(stops, seed)
    driver = EpisodeDriver(engine, ProtocolConfig(max_steps=60), fixed_caller, SamplingSpec(1.0, 1.0, 8),
                           seed=seed, max_live=max_live)
    finished = []
    played, stats = driver.play([EpisodeSpec(k, INST) for k in range(len(stops))], on_done=finished.extend)
    return engine, played, stats, finished


def test_continuous_batching_refills_slots_and_keeps_the_bound():
    stops = [5, 1, 1, 1, 1]
    engine, played, stats, finished = _play(stops, max_live=2)
    assert [len(p.turns) for p in played] == [3 * s for s in stops]  # in the order of the specs
    assert [p.spec.key for p in finished][:2] == [1, 2]  # handed over as they end
    assert max(len(c) for c in engine.calls) == 2 and stats.engine_calls == 15
    # episode 0 runs 15 turns; the four short ones pass through the other slot, 3 turns each:
    # no call has an idle slot until the last 3
    assert stats.idle_slots == 3 and stats.requests == sum(3 * s for s in stops)
    waves = sum(max(3 * s for s in stops[i:i + 2]) for i in range(0, len(stops), 2))
    assert stats.engine_calls < waves


def test_on_a_streaming_engine_a_turn_waits_for_its_own_reply_only():
    # two episodes of 3 cycles (9 turns) whose replies take 10 decode steps on alternate turns, 2 on
    # the others. Lockstep, every call waits for a 10-step reply: 90 steps. Streamed, each episode
    # goes at its own pace: 5 x 10 + 4 x 2 = 58 steps for the slower one
    def length(key, turn):
        return 10 if (key + turn) % 2 == 0 else 2

    lockstep, _, _, _ = _play([3, 3], max_live=None)
    assert len(lockstep.calls) == 9
    assert sum(max(length(*lockstep.key_turn(seed)) for seed in call) for call in lockstep.calls) == 90
    streams = Streams([3, 3], 5, length)
    ended_at = {}
    driver = EpisodeDriver(streams, ProtocolConfig(max_steps=60), fixed_caller, SamplingSpec(1.0, 1.0, 8), seed=5)
    played, stats = driver.play([EpisodeSpec(k, INST) for k in range(2)],
                                on_done=lambda eps: ended_at.update({p.spec.key: streams.steps for p in eps}))
    assert [len(p.turns) for p in played] == [9, 9] and stats.requests == 18
    assert ended_at == {1: 4 * 10 + 5 * 2, 0: 5 * 10 + 4 * 2}
    assert max(stats.per_call) == 2 and stats.idle_slots == stats.engine_calls * 2 - sum(stats.per_call)


def test_a_turn_is_seeded_by_its_episode_and_index_whatever_shares_its_batch():
    a = _play([2, 2, 2], max_live=None)[0]
    b = _play([2, 2, 2], max_live=1)[0]
    assert sorted(s for call in a.calls for s in call) == sorted(s for call in b.calls for s in call)
    assert a.calls[0] == [turn_seed(5, k, 0) for k in range(3)]
    assert turn_seed(5, 1, 0) != turn_seed(5, 0, 1) and turn_seed(10**9, 10**6, 4095) < 2**63
    with pytest.raises(ValueError, match="turn"):
        turn_seed(0, 0, 4096)


def test_greedy_sampling_has_no_seed_and_top_p_one():
    s = SamplingSpec(0.0, 0.5, 8).for_turn(1, 2, 3)
    assert s.seed is None and s.top_p == 1.0 and s.temperature == 0.0
    assert SamplingSpec(1.0, 0.5, 8).for_turn(1, 2, 3).top_p == 0.5


LOOPS = replace(INST, uid="t/loops", code="def test_func(x):\n    while True:\n        pass\n")


def _turns(played):
    """What each episode did, timing aside: every turn's prompt, reply and call result."""
    return [[(t.step.prompt, t.step.text, t.step.call and (t.step.call.kind, t.step.call.error, t.step.call.output_repr))
             for t in p.turns] for p in played]


def _timed_play(caller, instances, stops, call_wait_s, timeout_s):
    """Play one episode per instance (episode k says YES in cycle stops[k]); when each ended."""
    engine = StopsAfter(stops, 5)
    driver = EpisodeDriver(engine, ProtocolConfig(max_steps=60, call_timeout_s=timeout_s), caller,
                           SamplingSpec(1.0, 1.0, 8), seed=5, call_wait_s=call_wait_s)
    ended, start = {}, time.monotonic()
    played, stats = driver.play([EpisodeSpec(k, inst) for k, inst in enumerate(instances)],
                                on_done=lambda eps: ended.update({p.spec.key: time.monotonic() - start for p in eps}))
    return played, stats, ended, engine


def test_a_call_that_times_out_holds_only_its_own_episode():
    # episode 0's function loops until its timeout; episodes 1 and 2 make 3 calls each meanwhile.
    # One call at a time (the reference: the driver before calls ran in threads), their first calls
    # would wait for that timeout, so they could not end before it
    timeout_s = 1.5
    with SandboxPool(workers=2, memory_mb=256) as pool:
        pool.isolation  # noqa: B018 - the zygote starts before the clock
        lock = threading.Lock()

        def one_at_a_time(*call):
            with lock:
                return sandbox_caller(pool)(*call)

        played, stats, ended, _ = _timed_play(sandbox_caller(pool), [LOOPS, INST, INST], [1, 3, 3], 0.1, timeout_s)
        ref, ref_stats, ref_ended, _ = _timed_play(one_at_a_time, [LOOPS, INST, INST], [1, 3, 3], None, timeout_s)
    assert [p.spec.key for p in played] == [0, 1, 2] and [len(p.turns) for p in played] == [3, 9, 9]
    assert played[0].turns[1].step.call.kind is CallKind.TIMEOUT
    assert max(ended[1], ended[2]) < timeout_s <= ended[0], ended  # the others ended during the timeout
    assert min(ref_ended[1], ref_ended[2]) >= timeout_s, ref_ended
    assert _turns(played) == _turns(ref) and stats.requests == ref_stats.requests == 21


def test_call_wait_s_sets_how_long_a_batch_waits_for_slow_calls():
    slow = replace(INST, uid="t/slow", code="def test_func(x):\n    return x  # slow\n")

    def caller(source, input_str, timeout_s):
        time.sleep(0.2 if "slow" in source else 0.0)
        return fixed_caller(source, input_str, timeout_s)

    waits, waits_stats, _, waits_engine = _timed_play(caller, [slow, INST], [2, 2], None, 10.0)
    goes_on, stats, ended, engine = _timed_play(caller, [slow, INST], [2, 2], 0.0, 10.0)
    assert all(len(call) == 2 for call in waits_engine.calls) and waits_stats.engine_calls == 6  # lockstep
    # not waiting, the fast episode runs ahead: the slow one's turns after a call go alone
    assert stats.engine_calls > 6 and min(len(call) for call in engine.calls) == 1 and ended[1] < ended[0]
    assert _turns(goes_on) == _turns(waits)
    with pytest.raises(ValueError, match="call_wait_s"):
        EpisodeDriver(engine, ProtocolConfig(), caller, SamplingSpec(1.0, 1.0, 8), call_wait_s=-1)
