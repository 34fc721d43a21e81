"""docs/method.md §7.1's properties P1-P5 of the default objective, on random episodes (fixed seeds).

Each property is a function that returns its counterexamples among N random episodes. The default
(`schedule=aac_potential`, `advantage=turn`) must have none; the paper's table summed into the
`turn` episode term (`schedule=aac`, the default before docs/method.md §7.1) is asserted to have some: the
bugs these properties rule out, reproduced. Random: critic scores, episode lengths, decisions.
"""

from __future__ import annotations

import random
from dataclasses import replace

import pytest
from test_rewards import OK, RAISED, input_step, reasoning, reflect

from aac.config import RewardConfig
from aac.rewards import episode_rewards, judgment_kind, masked_judgments, step_advantages, step_reward

EPS = 1e-6
N = 300  # random cases per property
T_MAX = 40
DEFAULT = dict(schedule="aac_potential", advantage="turn")
TODAY = dict(schedule="aac", advantage="turn")  # the paper's table, summed into the episode term


def cfg(**kw) -> RewardConfig:
    return RewardConfig(t_max=kw.pop("t_max", T_MAX), **kw)


def build(decisions: list[bool], *, t_max: int = T_MAX, calls=None) -> list:
    """Steps of an episode: reasoning, input, reflect per cycle with these reflect decisions; a run
    of NOs continues to the step limit (a timeout on the last step), a YES ends it."""
    steps = []
    for index in range(t_max):
        phase = index % 3
        last = index == t_max - 1
        if phase == 0:
            steps.append(reasoning(index=index, done=last, timed_out=last))
        elif phase == 1:
            call = calls[len(steps) // 3] if calls else OK
            steps.append(input_step(index=index, call=call, done=last, timed_out=last))
        else:
            yes = decisions[index // 3] if index // 3 < len(decisions) else False
            steps.append(reflect(index=index, decision=yes, done=yes or last, timed_out=last and not yes))
            if yes:
                break
    return steps


def random_scores(rng: random.Random, steps: list, c: RewardConfig, final_s: float | None = None) -> list:
    scores = [rng.random() if judgment_kind(s, c) else None for s in steps]
    if final_s is not None:
        scores[-1] = final_s
    return scores


def stopper(rng: random.Random, c: RewardConfig) -> tuple[list, list]:
    """Stops correctly (s > stop_threshold) after 1..13 cycles, every call answered."""
    cycles = rng.randint(1, T_MAX // 3)
    steps = build([False] * (cycles - 1) + [True])
    return steps, random_scores(rng, steps, c, final_s=rng.uniform(c.stop_threshold + 1e-9, 1.0))


def staller(rng: random.Random, c: RewardConfig) -> tuple[list, list]:
    """Never says YES: runs to the step limit; its calls may fail."""
    steps = build([], calls=[rng.choice([OK, RAISED]) for _ in range(T_MAX)])
    return steps, random_scores(rng, steps, c)


def any_episode(rng: random.Random, c: RewardConfig) -> tuple[list, list]:
    decisions = [rng.random() < 0.15 for _ in range(T_MAX // 3 + 1)]
    steps = build(decisions)
    return steps, random_scores(rng, steps, c)


def episode_advantages(group: list[tuple[list, list]], c: RewardConfig) -> list[list[float]]:
    rewarded = [[(s.phase, r) for s, r in zip(steps, episode_rewards(steps, scores, c))] for steps, scores in group]
    return step_advantages(rewarded, c.advantage, c.w_step, c.eps)


# ------------------------------------------------------------------ the properties


def p1_no_stalling(c: RewardConfig, seed: int = 1) -> list:
    """Running to the step limit never returns more, or gets a higher group advantage, than stopping
    correctly; in a group of 8 random episodes holding one of each."""
    rng = random.Random(seed)
    bad = []
    for _ in range(N):
        stop, stall = stopper(rng, c), staller(rng, c)
        r_stop = sum(episode_rewards(*stop, c))
        r_stall = sum(episode_rewards(*stall, c))
        group = [stop, stall] + [any_episode(rng, c) for _ in range(6)]
        episode_adv = step_advantages([[(s.phase, r) for s, r in zip(st, episode_rewards(st, sc, c))]
                                       for st, sc in group], "episode", c.w_step, c.eps)
        if r_stall >= r_stop or episode_adv[1][0] >= episode_adv[0][0]:
            bad.append((r_stop, r_stall))
    return bad


def p2_no_sandbagging(c: RewardConfig, seed: int = 2) -> list:
    """With the decisions fixed, raising one hypothesis score never lowers its turn's reward or the
    episode's return."""
    rng = random.Random(seed)
    bad = []
    for _ in range(N):
        steps, scores = any_episode(rng, c)
        t = rng.choice([i for i, s in enumerate(steps) if s.phase.value == "reflect"])
        higher = list(scores)
        higher[t] = rng.uniform(scores[t], 1.0)
        before, after = episode_rewards(steps, scores, c), episode_rewards(steps, higher, c)
        if after[t] < before[t] - 1e-12 or sum(after) < sum(before) - 1e-12:
            bad.append((scores[t], higher[t], before[t], after[t]))
    return bad


def untimed(steps: list) -> list:
    """The same turns, the last one not marked as the step limit's."""
    return steps[:-1] + [replace(steps[-1], done=False, timed_out=False)]


def p3_credit_where_earned(c: RewardConfig, seed: int = 3) -> list:
    """The timeout's cost lands on the reflect turns that said NO, not on the last plan; the stop
    bonus/penalty only on the reflect turn that said YES."""
    rng = random.Random(seed)
    bad = []
    for _ in range(N):
        steps, scores = staller(rng, c)
        diff = [x - y for x, y in zip(episode_rewards(steps, scores, c), episode_rewards(untimed(steps), scores, c))]
        charged = {i for i, d in enumerate(diff) if abs(d) > 1e-12}
        said_no = {i for i, st in enumerate(steps) if st.phase.value == "reflect"}
        if not charged <= said_no or abs(sum(diff) - c.timeout_penalty) > 1e-9:
            bad.append(("timeout", sorted(charged - said_no)))
        steps, scores = stopper(rng, c)
        went_on = steps[:-1] + [replace(steps[-1], decision=False, done=False)]
        diff = [x - y for x, y in zip(episode_rewards(steps, scores, c), episode_rewards(went_on, scores, c))]
        if any(abs(d) > 1e-12 for d in diff[:-1]) or diff[-1] <= 0:
            bad.append(("stop", diff))
    return bad


def p4_bounded_length_terms(c: RewardConfig, seed: int = 4) -> list:
    """More turns (NO cycles within tau, the hypothesis held, random plans) change the return by at
    most the per-call and per-plan rewards' bounds: lambda_h / 2 and info_budget."""
    rng = random.Random(seed)
    bad = []
    for _ in range(N):
        s = rng.random()
        returns = []
        for cycles in range(1, T_MAX // 3 + 1):
            steps = untimed(build([], t_max=3 * cycles))
            scores = [s if st.phase.value == "reflect" else (rng.random() if judgment_kind(st, c) else None)
                      for st in steps]
            returns.append(sum(episode_rewards(steps, scores, c)))
        if max(returns) - min(returns) > c.lambda_h / 2 + c.info_budget:
            bad.append((s, returns))
    return bad


def p5_neutral_failures(c: RewardConfig, failed_score, seed: int = 5) -> list:
    """A judgment without a rating (arriving as `failed_score`) adds no judged term: in an episode
    within tau whose calls all succeed and that does not time out, that turn's reward is 0."""
    rng = random.Random(seed)
    bad = []
    for _ in range(N):
        steps, scores = any_episode(rng, c)
        steps = untimed(steps) if steps[-1].timed_out else steps
        t = rng.choice([i for i, st in enumerate(steps) if judgment_kind(st, c)])
        failed = list(scores)
        failed[t] = failed_score
        own = episode_rewards(steps, failed, c)[t]
        if own != 0.0:
            bad.append((steps[t].phase.value, steps[t].decision, own))
    return bad


# ------------------------------------------------------------------ the default has them, today's table not


PROPERTIES = [p1_no_stalling, p2_no_sandbagging, p3_credit_where_earned, p4_bounded_length_terms]


@pytest.mark.parametrize("prop", PROPERTIES, ids=lambda p: p.__name__)
def test_default_objective_has_the_property(prop):
    assert RewardConfig().schedule == DEFAULT["schedule"] and RewardConfig().advantage == DEFAULT["advantage"]
    assert prop(cfg(**DEFAULT)) == []


@pytest.mark.parametrize("prop", [p1_no_stalling, p2_no_sandbagging, p3_credit_where_earned,
                                  p4_bounded_length_terms], ids=lambda p: p.__name__)
def test_the_papers_table_summed_violates_it(prop):
    assert len(prop(cfg(**TODAY))) > N // 10  # not a corner case: a large share of random episodes


def test_neutral_failures():
    assert p5_neutral_failures(cfg(**DEFAULT), None) == []
    assert p5_neutral_failures(cfg(**TODAY), None) == []  # the table masks a missing score too
    # before: the critic's fallback 0.0 read as a verdict, "right to go on" +2 / premature stop -2
    assert len(p5_neutral_failures(cfg(**TODAY), 0.0)) > N // 10


# ------------------------------------------------------------------ the case, by hand


def stall_and_stop(c: RewardConfig) -> tuple[tuple[list, list], tuple[list, list]]:
    """Stall: s = 0.2 on every NO, 40 steps, timeout. Stop: NO at s = 0.5, YES at s = 0.9 on step 6.
    Every plan is rated 0.5, every call succeeds, every reply is within tau."""
    def scores(steps):
        return [None if not judgment_kind(st, c) else 0.5 if st.phase.value == "reasoning" else s
                for st, s in zip(steps, [0.2 if not st.decision else 0.9 for st in steps])]
    stall = build([])
    stop = build([False, True])
    stop_scores = scores(stop)
    stop_scores[2] = 0.5
    return (stall, scores(stall)), (stop, stop_scores)


def test_stall_vs_stop_the_default_ranks_the_stopper_first():
    c = cfg(**DEFAULT)
    (stall, s_stall), (stop, s_stop) = stall_and_stop(c)
    assert len(stall) == 40 and stall[-1].timed_out and len(stop) == 6 and stop[-1].decision
    plan = 1.0 * 0.5 / 14  # info_budget * r / ceil(40 / 3)
    # hypothesis 2 * 0.2 (telescoped), 14 plans, 13 calls of 2 / 80, the timeout -1 over the 13 NOs
    assert sum(episode_rewards(stall, s_stall, c)) == pytest.approx(2 * 0.2 + 14 * plan + 13 * 0.025 - 1)
    assert episode_rewards(stop, s_stop, c) == pytest.approx(
        [plan, 0.025, 2 * 0.5, plan, 0.025, 2 * (0.9 - 0.5) + 2 * 1])
    assert sum(episode_rewards(stop, s_stop, c)) == pytest.approx(3.92, abs=0.01)
    adv = episode_advantages([(stop, s_stop), (stall, s_stall)], c)
    assert min(adv[0]) > 0 > max(adv[1])  # every turn of the stopper beats every turn of the staller
    episode = episode_advantages([(stop, s_stop), (stall, s_stall)], cfg(**{**DEFAULT, "advantage": "episode"}))
    assert episode[0][0] == pytest.approx(1.0) and episode[1][0] == pytest.approx(-1.0)


def test_stall_vs_stop_the_papers_table_summed_pays_the_staller():
    c = cfg(**TODAY)
    (stall, s_stall), (stop, s_stop) = stall_and_stop(c)
    # 13 NOs at 2 * (0.2 + 1), 14 plans at 0.5, 13 calls, timeout -1 on the last (a plan)
    assert sum(episode_rewards(stall, s_stall, c)) == pytest.approx(13 * 2.4 + 14 * 0.5 + 13 * 0.025 - 1)
    assert sum(episode_rewards(stop, s_stop, c)) == pytest.approx(0.5 + 0.025 + 2 * 0.5 + 0.5 + 0.025 + 2 * 1.9)
    adv = episode_advantages([(stop, s_stop), (stall, s_stall)], c)
    assert sum(a < 0 for a in adv[0]) == 5  # the correct stopper is pushed down on 5 of its 6 turns
    episode = episode_advantages([(stop, s_stop), (stall, s_stall)], cfg(**{**TODAY, "advantage": "episode"}))
    assert episode[0][0] == pytest.approx(-1.0) and episode[1][0] == pytest.approx(1.0)


def test_a_masked_hypothesis_before_the_last_leaves_the_return_unchanged():
    c = cfg(**DEFAULT)
    rng = random.Random(6)
    for _ in range(50):
        steps, scores = any_episode(rng, c)
        reflects = [i for i, st in enumerate(steps) if st.phase.value == "reflect"]
        if len(reflects) < 2:
            continue
        masked = list(scores)
        masked[rng.choice(reflects[:-1])] = None
        assert sum(episode_rewards(steps, masked, c)) == pytest.approx(sum(episode_rewards(steps, scores, c)))
        assert masked_judgments(steps, masked, c).count("hypothesis") == 1


def test_aac_potential_by_hand():
    c = cfg(**DEFAULT)
    steps = [reasoning(index=0, n_words=150), input_step(index=1, call=RAISED),
             reflect(index=2, decision=False, parse_ok=False), reasoning(index=3, parse_ok=False, n_words=0),
             input_step(index=4, call=OK), reflect(index=5, decision=True, done=True)]
    scores = [0.7, None, 0.3, None, None, 0.6]
    assert episode_rewards(steps, scores, c) == pytest.approx([
        0.7 / 14 - 50 / 200,  # plan, 50 words over tau
        -0.5,  # the call raised
        -0.5 + 2 * (0.3 - 0.0),  # unparsed reflect: -p_parse, potential step from 0 (kept hypothesis)
        -0.5,  # no plan
        0.025,
        2 * (0.6 - 0.3) + 2 * -1,  # premature stop: s = 0.6 <= 0.7
    ])
    assert episode_rewards(steps, scores, cfg(**DEFAULT, info_budget=2.8))[0] == pytest.approx(0.7 / 5 - 0.25)
    assert masked_judgments(steps, scores, c) == [None] * 6
    # a failed critic on the stopping turn: no potential step, no stop penalty; on a plan: no informativeness
    failed = [None, None, 0.3, None, None, None]
    assert masked_judgments(steps, failed, c) == ["informativeness", None, None, None, None, "hypothesis"]
    assert episode_rewards(steps, failed, c)[::5] == pytest.approx([-0.25, 0.0])
    with pytest.raises(ValueError, match="use episode_rewards"):
        step_reward(steps[0], 0.7, c)


def test_timeout_without_reflect_turns_lands_on_the_last_step():
    c = cfg(**DEFAULT, t_max=2)
    steps = build([], t_max=2)
    assert episode_rewards(steps, [0.4, None], c) == pytest.approx([0.4 / 1, 2 / 4 - 1])


# ------------------------------------------------------------------ rewards.mask_hypothesis (a critic at chance)


@pytest.mark.parametrize("schedule", ["aac_potential", "aac"])
def test_mask_hypothesis_pays_only_what_the_sandbox_verifies(schedule):
    """Masked, no reflect turn asks the critic, so the decision and the hypothesis score change nothing;
    format, calls, informativeness and the timeout still pay (the same episode as test_aac_potential_by_hand)."""
    paid, masked = cfg(schedule=schedule), cfg(schedule=schedule, mask_hypothesis=True)
    steps = [reasoning(index=0), input_step(index=1, call=RAISED), reflect(index=2, decision=False, parse_ok=False),
             reasoning(index=3), input_step(index=4, call=OK), reflect(index=5, decision=True, done=True)]
    assert [judgment_kind(st, masked) for st in steps] == ["informativeness", None, None] * 2
    scores = [0.7, None, None, 0.2, None, None]
    per_plan = 1 / 14 if schedule == "aac_potential" else 1.0  # info_budget over ceil(40 / 3) plans | the table's
    assert episode_rewards(steps, scores, masked) == pytest.approx(
        [0.7 * per_plan, -0.5, -0.5, 0.2 * per_plan, 0.025, 0.0])
    # a YES instead of a NO, or any hypothesis score, is the same episode to the masked objective ...
    went_on = [*steps[:5], reflect(index=5, decision=False)]
    assert episode_rewards(went_on, scores, masked) == episode_rewards(steps, scores, masked)
    with pytest.raises(ValueError, match="asks for no critic score"):
        episode_rewards(steps, [0.7, None, 0.9, 0.2, None, 0.1], masked)
    # ... while paid, a premature stop costs lambda_h on its turn
    judged = [0.7, None, 0.3, 0.2, None, 0.6]
    assert episode_rewards(steps, judged, paid)[-1] < episode_rewards(went_on, judged, paid)[-1] - 1.0
    # the timeout still lands on the NO decisions that ran out the clock
    timed = build([], t_max=6)
    assert sum(episode_rewards(timed, [0.0 if judgment_kind(st, masked) else None for st in timed], masked)) \
        == pytest.approx(2 * 0.025 - 1.0)


def test_mask_hypothesis_needs_a_schedule_with_other_terms():
    from aac.config import ConfigError, compose

    assert compose("rewards.mask_hypothesis=true").rewards.mask_hypothesis is True
    with pytest.raises(ConfigError, match="rewards.mask_hypothesis=true leaves rewards.schedule=final"):
        compose("rewards=final", "rewards.mask_hypothesis=true")


# ------------------------------------------------------------------ rewards.late_stop_penalty (a verified stop)


def verified_episode(stop_at: int, t_max: int = 12) -> tuple[list, list]:
    """The embedded default's setting (critic.kind=scripted, K = 1): every call informative, so every plan scores 1
    and the hypothesis passes the stop threshold (s = 1) from the first reflect on; YES at reflect `stop_at` (0-based),
    or never (-1: a timeout)."""
    steps = build([i == stop_at for i in range(t_max // 3)], t_max=t_max)
    return steps, [1.0 if st.phase.value == "reasoning" else None if st.phase.value == "input" else 1.0 for st in steps]


def test_late_stop_penalty_makes_the_verified_stop_the_optimum():
    """Without it, a plan that pays for its informative call pays going on past a right stop: with the embedded
    default's info_budget 4 over 4 plans, running out of cycles returns more than stopping at the first passed
    threshold. Charged -lambda_h a NO, stopping at once is the best return, and the sooner the better."""
    free = cfg(**DEFAULT, t_max=12, info_budget=4.0)
    charged = replace(free, late_stop_penalty=-2.0)
    returns = {name: [sum(episode_rewards(*verified_episode(k), c)) for k in (0, 1, 2, 3, -1)]
               for name, c in (("free", free), ("charged", charged))}
    call = 2.0 / 24
    # stop at reflect k: k + 1 plans at 1 and calls, the potential's 2, the right stop's +2
    assert returns['free'][:4] == pytest.approx([(k + 1) * (1 + call) + 4 for k in range(4)])
    assert returns['free'][-1] == pytest.approx(4 * (1 + call) + 2 - 1)  # the timeout: -1 over the 4 NOs
    assert returns['free'][-1] > returns['free'][0]  # the uncharged objective pays going on past the right stop
    # charged: each NO with s = 1 costs 2 more
    assert returns['charged'][:4] == pytest.approx([(k + 1) * (1 + call) + 4 - 2 * k for k in range(4)])
    assert returns['charged'][-1] == pytest.approx(returns['free'][-1] - 4 * 2)
    assert returns['charged'] == sorted(returns['charged'], reverse=True)
    # on the turn it is owed: the reflects that went on, none other
    steps, scores = verified_episode(2)
    diff = [a - b for a, b in zip(episode_rewards(steps, scores, charged), episode_rewards(steps, scores, free))]
    assert diff == pytest.approx([0, 0, -2, 0, 0, -2, 0, 0, 0])


def test_late_stop_penalty_charges_only_a_no_past_the_threshold():
    c = cfg(**DEFAULT, late_stop_penalty=-1.5)
    steps = [reasoning(index=0), input_step(index=1, call=OK), reflect(index=2, decision=False),
             reasoning(index=3), input_step(index=4, call=OK), reflect(index=5, decision=False, parse_ok=False),
             reasoning(index=6), input_step(index=7, call=OK), reflect(index=8, decision=True, done=True)]
    for scores, charged in (([0.0, None, 0.7, 0.0, None, 0.7, 0.0, None, 0.9], [0, 0]),  # at the threshold: not past
                            ([0.0, None, 0.8, 0.0, None, 0.8, 0.0, None, 0.9], [-1.5, -1.5]),  # unparsed goes on
                            ([0.0, None, 0.8, 0.0, None, None, 0.0, None, 0.9], [-1.5, 0])):  # no score: no term
        diff = [a - b for a, b in zip(episode_rewards(steps, scores, c), episode_rewards(steps, scores, replace(
            c, late_stop_penalty=0.0)))]
        assert diff == pytest.approx([0, 0, charged[0], 0, 0, charged[1], 0, 0, 0])  # a YES is never charged


def test_late_stop_penalty_gives_up_no_sandbagging():
    """The charge costs P2: a NO whose score is raised past the stop threshold is charged, so with a judged score
    the actor would be paid to write a worse hypothesis before going on. Hence only for a verified score (the
    scripted critic's counts calls; no text is graded), which the config enforces. P3 holds; P1 holds for the
    stop at the first pass (above), while random scores' stopper that passed the threshold earlier is, as meant,
    charged for each NO since."""
    c = cfg(**DEFAULT, late_stop_penalty=-2.0)
    assert p3_credit_where_earned(c) == []
    sandbagged = p2_no_sandbagging(c)
    assert sandbagged and all(lo <= c.stop_threshold < hi for lo, hi, *_ in sandbagged)


def test_late_stop_penalty_is_a_charge_on_a_verified_score():
    from aac.config import ConfigError, compose

    verified = ("critic.kind=scripted", "critic.scripted_k=1")
    assert compose(*verified, "rewards.late_stop_penalty=-2.0").rewards.late_stop_penalty == -2.0
    with pytest.raises(ConfigError, match=r"rewards.late_stop_penalty=0.5 must be <= 0"):
        compose(*verified, "rewards.late_stop_penalty=0.5")
    with pytest.raises(ConfigError, match=r"needs a verified hypothesis score \(critic.kind=scripted or mutants, got llm\)"):
        compose("rewards.late_stop_penalty=-2.0")
    for scores_none in ("rewards=final", "rewards.mask_hypothesis=true"):
        with pytest.raises(ConfigError, match="rewards.schedule=final and rewards.mask_hypothesis=true score none"):
            compose(*verified, scores_none, "rewards.late_stop_penalty=-2.0")
