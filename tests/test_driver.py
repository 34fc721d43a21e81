"""The one episode driver: continuous batching, its slot bound, and one seeding rule."""

from __future__ import annotations

import pytest

from aac.engines import GenResult
from aac.env.instance import Instance
from aac.env.protocol import ProtocolConfig
from aac.rollout.driver import EpisodeDriver, EpisodeSpec, SamplingSpec, turn_seed
from aac.sandbox.pool import CallResult

INST = Instance(uid="t/0", source="t", code="def test_func(x):\n    return x\n", description="identity",
                header="def test_func(x):", train_examples=[("(1,)", 1), ("(2,)", 2)], test_examples=[],
                all_examples=[])


def fixed_caller(source, input_str, timeout_s):
    return CallResult(output=1, error=None, duration_s=0.0, output_repr="1", normalized=1)


class StopsAfter:
    """Episode k says YES in cycle stops[k] (k read from the seed); records every call's requests."""

    def __init__(self, stops, seed):
        self.stops, self.seed, self.calls = stops, seed, []

    def generate(self, requests):
        self.calls.append([r.sampling.seed for r in requests])
        out = []
        for r in requests:
            key, turn = divmod(r.sampling.seed - self.seed * 1_000_003 * 4096, 4096)
            decision = "YES" if turn // 3 + 1 >= self.stops[key] else "NO"
            out.append(GenResult(f"Input: (3,)\nDecision: {decision}\nSummary: identity", [], [1], None, "stop",
                                 None, None))
        return out


def _play(stops, max_live, seed=5):
    engine = StopsAfter(stops, seed)
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
