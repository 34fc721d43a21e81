"""AAC's rewards through SkyRL: "aac-pau-critic" made by `skyrl_gym.make`, scored by a real critic
over HTTP, paying what `aac.train` pays (aac/skyrl/reward_env.py)."""

from __future__ import annotations

import random
from dataclasses import replace
from fractions import Fraction

import pytest
import skyrl_gym
from doubles import GenerateOnly

import aac.skyrl.reward_env  # noqa: F401  (registers "aac-pau-critic")
from aac.env.instance import Instance
from aac.rewards.schedule import episode_rewards
from aac.rewards.terms import judgment_kind
from aac.sandbox.result import CallKind, CallResult
from aac.skyrl.reward_env import ENV_ID

INSTANCE = Instance(
    uid="r/1", source="unit", code="def test_func(arg0):\n    return abs(arg0)\n", description="Absolute value.",
    header="def test_func(arg0):", train_examples=[("(-2,)", 2), ("(3,)", 3)], test_examples=[("(-1,)", 1)],
    all_examples=[("(-2,)", 2, None), ("(3,)", 3, None)])
# two cycles: a plan, a call, NO with a poor hypothesis; a plan, a call, YES with the right one
EPISODE = ["plan: try a positive number", "Input: (5,)", "Decision: NO\nSummary: returns seven",
           "plan: try a negative number", "Input: (-4,)", "Decision: YES\nSummary: absolute value"]


def ratings(body: dict) -> str:
    """The endpoint's grades: plans 6; the hypothesis "absolute value" 9, any other 3."""
    asked = body["messages"][-1]["content"]
    if "Agent's plan for its next call" in asked:
        return "Worth a call.\nRating: 6"
    return "Right.\nRating: 9" if "description of the function:\nabsolute value" in asked else "Wrong.\nRating: 3"


def critic_section(url: str) -> dict:
    return {"backend": "openai", "model": "grader", "openai": {"base_url": url, "max_retries": 0}}


def test_critic_rewards_through_skyrl_gym_make_against_a_local_endpoint(serve_chat):
    with serve_chat(ratings) as (url, calls):
        env = skyrl_gym.make(ENV_ID, env_config={"max_steps": 12, "critic": critic_section(url)},
                             extras={"instance": INSTANCE})
        env.init()
        outs, asked = [], []
        for reply in EPISODE:
            outs.append(env.step(reply))
            asked.append(len(calls))
    # hand-derived aac_potential, T_max = 12: a plan earns info_budget / ceil(12 / 3) * 6/9 = 1/6; a call
    # 2 / (2 * 12) = 1/12; NO at s = 1/3: 2 * (1/3 - 0) = 2/3; YES at s = 1: 2 * (1 - 1/3) + 2 (right stop) = 10/3
    own = [Fraction(1, 6), Fraction(1, 12), Fraction(2, 3), Fraction(1, 6), Fraction(1, 12), Fraction(10, 3)]
    assert outs[-1]["metadata"]["rewards"] == pytest.approx([float(r) for r in own], abs=1e-12)
    assert outs[-1]["metadata"]["scores"] == pytest.approx([6 / 9, None, 1 / 3, 6 / 9, None, 1.0])
    # a plan's judgment waits for the call it led to, and its reward is paid with that call's
    assert asked == [0, 1, 2, 2, 3, 4]
    paid = [0, own[0] + own[1], own[2], 0, own[3] + own[4], own[5]]
    assert [o["reward"] for o in outs] == pytest.approx([float(r) for r in paid], abs=1e-12)
    assert sum(o["reward"] for o in outs) == pytest.approx(4.5, abs=1e-12)
    # the privileged critic's questions went over HTTP to the served model, with the gold description
    assert {c["model"] for c in calls} == {"grader"}
    assert all("Absolute value." in c["messages"][-1]["content"] for c in calls)
    assert env.get_metrics()["return"] == pytest.approx(4.5) and env.get_metrics()["masked_judgments"] == 0.0


class ReplayActor(GenerateOnly):
    """An actor engine replaying fixed replies, one episode after the other (max_live_episodes=1)."""

    def __init__(self, replies: list[str]):
        self.replies = list(replies)

    def generate(self, requests):
        from aac.engines import GenResult

        return [GenResult(self.replies.pop(0), [0], [1], [0.0], "stop", r.adapter, None) for r in requests]


def test_same_rewards_as_the_rollout_workers_of_aac_train(serve_chat):
    """The same two episodes (one stops, one runs out the clock) played by `aac.train`'s RolloutWorker
    and by the env, with the critic on the same endpoint: the same rewards, step by step."""
    from aac.assembly import PlacedRolloutWorker
    from aac.config import CriticConfig, EnvConfig, OpenAIConfig, RewardConfig, RolloutConfig
    from aac.engines.openai_engine import OpenAIEngine
    from aac.env.protocol import ProtocolConfig
    from aac.rollout.driver import EpisodeSpec

    clock = ["plan: try zero", "Input: (0,)", "Decision: NO\nSummary: returns seven", "plan", "Input: (9,)",
             "Decision: NO\nSummary: returns nine"]
    with serve_chat(ratings) as (url, _):
        critic = CriticConfig(backend="openai", model="grader", openai=OpenAIConfig(base_url=url, max_retries=0))
        env_cfg = EnvConfig(max_steps=6)
        env_cfg.sandbox.workers = 1
        worker = PlacedRolloutWorker(RolloutConfig(max_tokens_per_turn=8, max_live_episodes=1), env_cfg, critic,
                               RewardConfig(t_max=6), ProtocolConfig(max_steps=6), ReplayActor(EPISODE + clock),
                               OpenAIEngine("grader", openai=critic.openai))
        try:
            batch = worker.run([EpisodeSpec(0, INSTANCE), EpisodeSpec(1, INSTANCE)], adapter=None, seed=0)
        finally:
            worker.close()
        for episode, replies in zip(batch.episodes, (EPISODE, clock)):
            env = skyrl_gym.make(ENV_ID, env_config={"max_steps": 6, "critic": critic_section(url)},
                                 extras={"instance": INSTANCE})
            env.init()
            outs = [env.step(r) for r in replies]
            assert outs[-1]["done"] and outs[-1]["metadata"]["rewards"] == [t.reward for t in episode.turns]
            assert outs[-1]["metadata"]["scores"] == [t.score for t in episode.turns]
            assert sum(o["reward"] for o in outs) == pytest.approx(episode.total_reward, abs=1e-12)
    # the clock ran out: the timeout penalty went half to each NO reflect (aac_potential); the first
    # one's half is paid at the end
    timed_out = batch.episodes[1]
    assert timed_out.timed_out and not batch.episodes[0].timed_out and outs[-1]["metadata"]["step"].timed_out
    assert outs[2]["reward"] == pytest.approx(timed_out.turns[2].reward + 0.5)
    assert outs[-1]["reward"] == pytest.approx(timed_out.turns[5].reward - 0.5)


# ---------------------------------------------------------------- property: online pay = episode_rewards


def fixed_caller(source: str, input_str: str, timeout_s: float) -> CallResult:
    """Sandbox double: every call returns 7, except input (0,) which raises."""
    if input_str == "(0,)":
        return CallResult(None, "ValueError: zero", 0.0, "", None, CallKind.RAISED)
    return CallResult(7, None, 0.0, "7", 7)


class RandomCritic:
    """Critic double: a random score, or None (a failed judgment) one time in five; keeps the kinds asked."""

    def __init__(self, rng: random.Random):
        self.rng, self.kinds = rng, []

    def score(self, judgments):
        self.kinds += [j.kind for j in judgments]
        return [None if self.rng.random() < 0.2 else self.rng.random() for _ in judgments]


REPLIES = {
    "reasoning": ["plan", "", "plan " + "word " * 150],
    "input": ["Input: (5,)", "Input: (0,)", "Input: nothing", "Input: (" + "1, " * 40 + ")"],
    "reflect": ["Decision: NO\nSummary: h", "Decision: YES\nSummary: h", "garbled", "Decision: NO\nSummary: h2"],
}


@pytest.mark.parametrize("schedule", ["aac_potential", "aac", "final", "no_informativeness"])
def test_online_rewards_pay_exactly_what_episode_rewards_gives(schedule):
    rng = random.Random(schedule)
    for _ in range(30):  # a few step limits: each distinct env_config is composed once (~0.1 s)
        env = skyrl_gym.make(ENV_ID, env_config={"max_steps": rng.choice([1, 2, 5, 9, 16]), "critic": None,
                                                 "rewards": {"schedule": schedule}},
                             extras={"instance": INSTANCE}, caller=fixed_caller)
        env.critic = RandomCritic(rng)
        env.init()
        outs = [env.step(rng.choice(REPLIES[env.episode.phase.value]))]
        while not outs[-1]["done"]:
            outs.append(env.step(rng.choice(REPLIES[env.episode.phase.value])))
        steps = [o["metadata"]["step"] for o in outs]
        scores = outs[-1]["metadata"]["scores"]
        full = episode_rewards(steps, scores, env.rewards)
        assert outs[-1]["metadata"]["rewards"] == full
        # the critic was asked exactly what aac.train asks (and nothing for unjudged steps)
        kinds = [judgment_kind(s, env.rewards) for s in steps]
        assert env.critic.kinds == [k for k in kinds if k is not None]
        assert all(score is None for score, k in zip(scores, kinds) if k is None)
        paid = [o["reward"] for o in outs]
        assert sum(paid) == pytest.approx(sum(full), abs=1e-9)
        # before the last step, a step pays its own reward as it stood then (before a timeout at the
        # end spread its penalty), a judged plan pays 0 and its reward comes with the next step's
        then = episode_rewards(steps[:-1] + [replace(steps[-1], timed_out=False)], scores, env.rewards)
        waits = [k == "informativeness" for k in kinds]
        for t in range(len(steps) - 1):
            expected = 0.0 if waits[t] else then[t] + (then[t - 1] if t and waits[t - 1] else 0.0)
            assert paid[t] == pytest.approx(expected, abs=1e-12)


# ---------------------------------------------------------------- config


def test_no_critic_pays_the_schedules_unjudged_terms():
    env = skyrl_gym.make(ENV_ID, env_config={"critic": None, "rewards": {"p_parse": 0.25}},
                         extras={"instance": INSTANCE}, caller=fixed_caller)
    env.init()
    replies = ["plan", "Input: (5,)", "Decision: NO\nSummary: s", "plan", "Input: (0,)", "garbled", "",
               "Input: nothing", "Decision: YES\nSummary: absolute value"]
    outs = [env.step(r) for r in replies]
    # calls 2 / (2 * 40) = 0.025; a failed call, a garbled reflect, an empty plan and an unreadable
    # input -p_parse; every judged term masked (no critic), so the YES earns no stop bonus
    assert [o["reward"] for o in outs] == pytest.approx([0, 0.025, 0, 0, -0.25, -0.25, -0.25, -0.25, 0])
    assert outs[-1]["metadata"]["masked"] == ["informativeness", None, "hypothesis", "informativeness", None,
                                              "hypothesis", None, None, "hypothesis"]
    assert env.get_metrics()["masked_judgments"] == 5.0


@pytest.mark.parametrize("env_config, message", [
    ({"critic": {"kindd": "llm"}}, "aac-pau-critic: unknown env_config key critic.kindd$"),
    ({"critic": {"openai": {"url": "x"}}}, "unknown env_config key critic.openai.url$"),
    ({"rewards": {"lambda": 1.0}}, "unknown env_config key rewards.lambda$"),
    ({"critic": None, "reward": {}}, "aac-pau-critic: unknown env_config keys: reward$"),
    ({"critic": {"kind": "oracle"}}, "critic.kind: Invalid value 'oracle'"),
    ({"critic": None, "rewards": {"tau_reason": 0}}, "rewards.tau_reason=0 must be > 0"),
    ({"critic": None, "rewards": {"schedule": "sym_info"}}, "sym_info needs critic.mode=symmetric"),
    ({"critic": "openai"}, "env_config.critic must be a mapping"),
    ({}, "critic.backend must be set"),
    ({"critic": {"backend": "hf"}}, "critic.model must name the critic's model$"),
])
def test_bad_config_is_one_clear_line(env_config, message):
    with pytest.raises(ValueError, match=message) as e:
        skyrl_gym.make(ENV_ID, env_config=env_config, extras={"instance": INSTANCE}, caller=fixed_caller)
    assert "\n" not in str(e.value)


def test_a_stateful_episode_refuses_critics_that_run_a_functions_branches():
    """As `aac.train` refuses them: coverage and the scripted critic run a query as a function input."""
    counter = replace(INSTANCE, code="class Obj:\n    def m0(self):\n        return 1\n", header="class Obj: new(); m0()",
                      train_examples=[("(('new', ()), ('m0', ()))", [None, 1])], test_examples=[],
                      all_examples=[("(('new', ()), ('m0', ()))", [None, 1], None)], domain="stateful")
    for critic in ({"kind": "scripted"}, {"informativeness": "coverage", "backend": "hf", "model": "m"}):
        with pytest.raises(ValueError, match="env.domain=stateful needs critic.informativeness=judge"):
            skyrl_gym.make(ENV_ID, env_config={"domain": "stateful", "critic": critic}, extras={"instance": counter},
                           caller=fixed_caller)
    assert skyrl_gym.make(ENV_ID, env_config={"domain": "stateful", "critic": None}, extras={"instance": counter},
                          caller=fixed_caller).critic is None


def test_env_config_from_omegaconf_and_one_critic_per_process():
    """SkyRL hands env_config as a DictConfig and makes one env per episode: they share one critic,
    whose engine is the endpoint the section names (nothing is asked until a turn is judged)."""
    from omegaconf import OmegaConf

    url = "http://127.0.0.1:9/v1"
    cfg = OmegaConf.create({"max_steps": 6, "critic": critic_section(url), "rewards": {"lambda_h": 1.0}})
    a, b = (skyrl_gym.make(ENV_ID, env_config=cfg, extras={"instance": INSTANCE}) for _ in range(2))
    assert a.critic is b.critic and a.rewards.lambda_h == 1.0 and a.rewards.t_max == 6
    assert a.critic.engine.kind == "openai" and a.critic.engine.cfg.base_url == url and a.critic.engine.model == "grader"
    c = skyrl_gym.make(ENV_ID, env_config={"max_steps": 6, "critic": {**critic_section(url), "mode": "symmetric"}},
                       extras={"instance": INSTANCE})
    assert c.critic is not a.critic and c.critic.mode == "symmetric"


@pytest.mark.slow
def test_in_process_critic_engine(tiny_model_path):
    """critic.backend=hf: the critic's engine is built in this process (aac.placement.EngineSet)."""
    env = skyrl_gym.make(ENV_ID, extras={"instance": INSTANCE}, caller=fixed_caller,
                         env_config={"max_steps": 3, "critic": {"backend": "hf", "model": "tiny_qwen3",
                                                                "max_tokens": 4}})
    env.init()
    outs = [env.step(r) for r in EPISODE[:3]]
    assert outs[-1]["done"] and env.critic.engine.kind == "hf" and env.critic.health["requests"] >= 2
    steps = [o["metadata"]["step"] for o in outs]
    assert outs[-1]["metadata"]["rewards"] == episode_rewards(steps, outs[-1]["metadata"]["scores"], env.rewards)
