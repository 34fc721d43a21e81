"""Advantage estimators (docs/method.md §7) on hand-built groups."""

from __future__ import annotations

import numpy as np
import pytest

from aac.env.protocol import Phase
from aac.rewards import group_normalize, step_advantages, token_advantages

EPS = 1e-6
R, I, F = "reasoning", "input", "reflect"  # noqa: E741


def normalize(x) -> np.ndarray:
    x = np.asarray(x, dtype=float)
    return (x - x.mean()) / (x.std() + EPS)  # numpy's default std is the population one (ddof = 0)


# three episodes of different lengths; rewards differ step to step
GROUP = [
    [(R, 0.6), (I, 0.025), (F, 3.6)],
    [(R, 0.2), (I, -0.5), (F, 2.4), (R, 0.9), (I, 0.025), (F, -1.0)],
    [(R, 0.4), (I, 0.025), (F, 1.0), (R, 0.1), (I, 0.025), (F, 0.6), (R, 0.3), (I, 0.025), (F, 3.8)],
]


def release_final(group) -> list[list[float]]:
    """The released trainer: the last step's reward, group-normalised, copied to every step."""
    adv = normalize([episode[-1][1] for episode in group])
    return [[float(a)] * len(episode) for a, episode in zip(adv, group)]


def test_group_normalize_uses_population_std():
    assert group_normalize([1.0, 3.0], EPS) == pytest.approx([-1.0, 1.0], abs=1e-5)  # std = 1, not sqrt(2)
    assert group_normalize([5.0], EPS) == [0.0]
    assert group_normalize([], EPS) == []
    # equal values: exactly 0, not the mean's rounding residue over eps (0.1 * 3 / 3 != 0.1)
    assert group_normalize([0.1, 0.1, 0.1], EPS) == [0.0, 0.0, 0.0]


def test_final_equals_the_release():
    ours = step_advantages(GROUP, "final", w_step=1.0, eps=EPS)
    expected = release_final(GROUP)
    for a, b in zip(ours, expected):
        assert a == pytest.approx(b)
    # by hand: last rewards 3.6, -1.0, 3.8: mean 2.1333, population std 2.2171
    assert ours[1][0] == pytest.approx((-1.0 - 6.4 / 3) / np.std([3.6, -1.0, 3.8]), rel=1e-5)


def test_episode_is_normalised_sum_broadcast():
    ours = step_advantages(GROUP, "episode", w_step=1.0, eps=EPS)
    sums = normalize([sum(r for _, r in ep) for ep in GROUP])
    for a, s, ep in zip(ours, sums, GROUP):
        assert a == pytest.approx([s] * len(ep))


def test_turn_is_episode_plus_per_kind_step_advantage():
    w = 0.5
    ours = step_advantages(GROUP, "turn", w_step=w, eps=EPS)
    episode = step_advantages(GROUP, "episode", w_step=w, eps=EPS)
    by_kind = {k: [r for ep in GROUP for kind, r in ep if kind == k] for k in (R, I, F)}
    stats = {k: (np.mean(v), np.std(v)) for k, v in by_kind.items()}
    for i, ep in enumerate(GROUP):
        for t, (kind, r) in enumerate(ep):
            mu, sigma = stats[kind]
            assert ours[i][t] == pytest.approx(episode[i][t] + w * (r - mu) / (sigma + EPS))


def test_turn_gives_different_steps_of_one_episode_different_advantages():
    ours = step_advantages(GROUP, "turn", w_step=1.0, eps=EPS)
    long = ours[2]
    assert len(set(np.round(long, 6))) > 3  # not one broadcast value
    assert long[2] < long[8]  # reflect reward 1.0 vs 3.8 in the same episode
    assert long[0] > long[3]  # reasoning 0.4 vs 0.1
    # the broadcast estimators cannot tell them apart
    assert len(set(step_advantages(GROUP, "final", 1.0, EPS)[2])) == 1
    assert len(set(step_advantages(GROUP, "episode", 1.0, EPS)[2])) == 1


def per_index_step_advantages(group) -> list[list[float]]:
    """What we do NOT do: a baseline per turn index (steps at position t compared with each other)."""
    out = [[0.0] * len(ep) for ep in group]
    for t in range(max(len(ep) for ep in group)):
        rows = [i for i, ep in enumerate(group) if t < len(ep)]
        for i, z in zip(rows, normalize([group[i][t][1] for i in rows])):
            out[i][t] = float(z)
    return out


def test_turn_index_does_not_set_the_advantage():
    # Two short episodes stop right at step 2 with a good hypothesis (3.8); two long ones say NO
    # at step 2 (1.0) and again at step 5 (1.0). A per-index baseline compares step 5 only with
    # the long episodes, and step 2 with everyone: the same reflect reward (1.0) then gets a
    # negative advantage at index 2 and zero at index 5. Ours compares it with all reflect steps.
    short = [(R, 0.5), (I, 0.025), (F, 3.8)]
    long = [(R, 0.5), (I, 0.025), (F, 1.0), (R, 0.5), (I, 0.025), (F, 1.0)]
    group = [short, short, long, long]

    per_index = per_index_step_advantages(group)
    assert per_index[2][2] < -0.5 and per_index[2][5] == pytest.approx(0.0)  # the bias we avoid

    ours = step_advantages(group, "turn", w_step=1.0, eps=EPS)
    episode = step_advantages(group, "episode", w_step=1.0, eps=EPS)
    step_part = [[a - e for a, e in zip(x, y)] for x, y in zip(ours, episode)]
    assert step_part[2][2] == pytest.approx(step_part[2][5])  # same kind, same reward: same credit
    assert step_part[2][5] == pytest.approx(step_part[3][2])
    # and both are judged against all four reflect rewards (3.8, 3.8, 1.0, 1.0, 1.0, 1.0)
    assert step_part[2][5] == pytest.approx(normalize([3.8, 3.8, 1.0, 1.0, 1.0, 1.0])[2])

    # moving a step to another index (same kind, same reward) changes nothing
    reordered = [short, short, long, [(R, 0.5), (I, 0.025), (F, 1.0), (R, 0.5), (I, 0.025), (F, 1.0)][::-1]]
    moved = step_advantages(reordered, "turn", w_step=1.0, eps=EPS)
    assert sorted(moved[3]) == pytest.approx(sorted(ours[3]))


@pytest.mark.parametrize("estimator", ["final", "episode", "turn"])
def test_all_equal_rewards_give_zero_advantage(estimator):
    same = [[(R, 0.3), (I, 0.3), (F, 0.3)]] * 4
    for adv in step_advantages(same, estimator, 1.0, EPS):
        assert adv == [0.0, 0.0, 0.0]
    lone = step_advantages([[(R, 0.7), (I, -0.5), (F, 2.0)]], estimator, 1.0, EPS)  # group of one
    assert lone == [[0.0, 0.0, 0.0]]


def test_phase_members_and_strings_are_the_same_kind():
    strings = step_advantages(GROUP, "turn", 1.0, EPS)
    mixed = [[(Phase(kind) if i % 2 else kind, r) for kind, r in ep] for i, ep in enumerate(GROUP)]
    assert step_advantages(mixed, "turn", 1.0, EPS) == strings


def test_bad_inputs():
    with pytest.raises(ValueError, match="no steps"):
        step_advantages([[(R, 1.0)], []], "turn", 1.0, EPS)


def test_token_advantages_mask_only_generated_tokens():
    adv, mask = token_advantages(3, 2, -0.75)
    assert mask == [0, 0, 0, 1, 1]
    assert adv == [0.0, 0.0, 0.0, -0.75, -0.75]


def test_a_local_part_leaves_the_episode_return_and_stays_in_the_step_advantage():
    """rewards.format_in_return=false: two episodes alike but for a format penalty on one reflect. In the
    return it makes the erring episode worse on every turn (its plan and call too); kept local, the
    episode advantages are equal (0) and only the erring turn is marked down."""
    group = [[(R, 0.5), (I, 0.025), (F, 0.0)], [(R, 0.5), (I, 0.025), (F, -0.5)]]
    local = [[0.0, 0.0, 0.0], [0.0, 0.0, -0.5]]
    summed = step_advantages(group, "turn", w_step=1.0, eps=EPS)
    apart = step_advantages(group, "turn", w_step=1.0, eps=EPS, local=local)
    assert summed[1][0] == pytest.approx(-1.0, abs=1e-4) and summed[1][1] == pytest.approx(-1.0, abs=1e-4)
    assert apart[1][0] == 0.0 and apart[1][1] == 0.0 and apart[0][0] == 0.0
    assert apart[1][2] == pytest.approx(-1.0, abs=1e-4) and apart[0][2] == pytest.approx(1.0, abs=1e-4)
    # a longer episode with more informative plans but one more error: summed, the error outweighs the
    # plan; apart, the episode that learned more is ahead on every turn
    group = [[(R, 0.5), (I, 0.025), (F, 0.0)], [(R, 0.5), (I, 0.025), (F, 0.0), (R, 0.25), (I, -0.5), (F, 0.0)]]
    local = [[0.0] * 3, [0.0, 0.0, 0.0, 0.0, -0.5, 0.0]]
    assert step_advantages(group, "turn", 1.0, EPS)[1][0] < 0 < step_advantages(group, "turn", 1.0, EPS, local)[1][0]
    with pytest.raises(ValueError, match="needs the turn estimator"):
        step_advantages(group, "episode", 1.0, EPS, local)


def test_the_trainer_keeps_format_penalties_out_of_the_return_when_told():
    """`rewards.format_in_return` as the Trainer reads it: each turn's `format_penalty` (set by the rollout
    worker) leaves the episode return under false; under true the erring episode is marked down everywhere."""
    from types import SimpleNamespace

    from aac.config import compose
    from aac.rollout.workers import RolloutBatch, ScoredEpisode, ScoredTurn
    from aac.training import Trainer

    def episode(key: int, reflect_reward: float) -> ScoredEpisode:
        turns = [ScoredTurn(Phase(kind), [1], [2], [0.0], None, reward != -0.5, reward,
                            format_penalty=-0.5 if reward == -0.5 else 0.0)
                 for kind, reward in ((R, 0.5), (I, 0.025), (F, reflect_reward))]
        return ScoredEpisode(key, "f", 0, turns, 1, True, False, "h")

    batch = RolloutBatch([episode(0, 0.0), episode(1, -0.5)])
    advantages = {flag: Trainer.advantages(SimpleNamespace(cfg=compose(f"rewards.format_in_return={flag}")), batch)
                  for flag in ("true", "false")}
    assert advantages["true"][1][0] == pytest.approx(-1.0, abs=1e-4)  # its plan pays for the broken reflect
    assert advantages["false"][1][0] == 0.0 and advantages["false"][1][2] == pytest.approx(-1.0, abs=1e-4)
