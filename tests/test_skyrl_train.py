"""AAC under SkyRL's trainer (aac/skyrl/): the launcher's SkyRL config, our estimator in SkyRL's registry
and trainer, and SkyRL's own generator driving "aac-pau-critic" through an aac engine on CPU.

Needs SkyRL, which lives in its own environment (`make test` builds .venv-skyrl and runs this file
there; docs/skyrl.md, "Running it"): in the main environment every test here is skipped."""

from __future__ import annotations

import asyncio
import random
import zlib
from dataclasses import replace

import pytest

pytest.importorskip("skyrl.train", reason="SkyRL lives in .venv-skyrl (make test runs this file there)")

from doubles import GenerateOnly  # noqa: E402
from omegaconf import OmegaConf  # noqa: E402

import aac.skyrl._skyrl  # noqa: E402, F401  (SkyRL's modules load through it on Python 3.11)
from aac.config import compose  # noqa: E402
from aac.engines import GenResult  # noqa: E402
from aac.env.instance import Instance  # noqa: E402
from aac.env.protocol import phase_of_turn  # noqa: E402
from aac.rewards.advantages import step_advantages  # noqa: E402

ABS = Instance(
    uid="r/1", source="unit", code="def test_func(arg0):\n    return abs(arg0)\n", description="Absolute value.",
    header="def test_func(arg0):", train_examples=[("(-2,)", 2), ("(3,)", 3)], test_examples=[("(-1,)", 1)],
    all_examples=[("(-2,)", 2, None), ("(3,)", 3, None)])
SQUARE = replace(ABS, uid="r/2", code="def test_func(arg0):\n    return arg0 * arg0\n", description="Square.",
                 train_examples=[("(2,)", 4)], test_examples=[("(3,)", 9)], all_examples=[("(2,)", 4, None)])


# ---------------------------------------------------------------- the launcher's config


def test_cfg_job_prints_the_composed_skyrl_config(run_module):
    import yaml

    proc = run_module("aac.skyrl", "--cfg", "job", "+recipe=qwen3_8b", timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    c = yaml.safe_load(proc.stdout)
    policy = c["trainer"]["policy"]
    assert policy["model"]["path"] == "Qwen/Qwen3-8B"
    assert {"rank": 16, "alpha": 16, "target_modules": "all-linear"}.items() <= policy["model"]["lora"].items()
    assert policy["optimizer_config"]["lr"] == 1e-6 and c["trainer"]["epochs"] == 5
    assert c["trainer"]["algorithm"]["advantage_estimator"] == "aac"
    assert c["trainer"]["train_batch_size"] == 8 and c["generator"]["n_samples_per_prompt"] == 8
    assert c["generator"]["max_turns"] == 40 and c["generator"]["step_wise_trajectories"] is True
    assert c["generator"]["chat_template_kwargs"] == {"enable_thinking": False}
    # 2 GPUs: the policy's servers on one, the FSDP learner on the other
    assert c["trainer"]["placement"]["colocate_all"] is False
    assert c["environment"]["env_class"] == "aac-pau-critic"
    env = c["environment"]["skyrl_gym"]["aac_pau_critic"]
    assert env["max_steps"] == 40 and env["history_window"] == 5 and env["domain"] == "pau"
    # the frozen critic: the base model on the policy's own servers
    assert env["critic"]["backend"] == "openai" and env["critic"]["openai"]["base_url"] == "skyrl://policy"
    assert env["critic"]["model"] == "Qwen/Qwen3-8B" and env["critic"]["mode"] == "privileged"
    assert env["rewards"]["schedule"] == "aac_potential" and env["rewards"]["t_max"] == 40


def job(*argv: str, capsys) -> dict:
    import yaml

    from aac.skyrl.__main__ import main

    main(["--cfg", "job", *argv])
    return yaml.safe_load(capsys.readouterr().out)


def test_overrides_reach_the_skyrl_config(capsys):
    c = job("+recipe=qwen3_8b", "rollout.group_size=4", "learner.lora_r=8", "env.max_steps=12",
            "critic.backend=openai", "critic.openai.base_url=http://critic:8000/v1", "rewards.lambda_h=1.5",
            "skyrl.trainer.fully_async.enabled=true", "skyrl.trainer.strategy=fsdp2", capsys=capsys)
    assert c["generator"]["n_samples_per_prompt"] == 4 and c["trainer"]["policy"]["model"]["lora"]["rank"] == 8
    assert c["generator"]["max_turns"] == 12 and c["trainer"]["fully_async"]["enabled"] is True
    assert c["trainer"]["strategy"] == "fsdp2"
    env = c["environment"]["skyrl_gym"]["aac_pau_critic"]
    assert env["critic"]["openai"]["base_url"] == "http://critic:8000/v1"  # a separate server
    assert env["rewards"]["lambda_h"] == 1.5 and env["rewards"]["t_max"] == 12


@pytest.mark.parametrize("argv, message", [
    (["skyrl.trainer.nope=1"], r"skyrl: Invalid fields \{'nope'\} for TrainerConfig"),
    (["env.answer_cues=true"], "env.answer_cues=true needs the engine to continue a prefilled reply"),
    (["+rollout.max_tokens_per_phase.input=64"], "rollout.max_tokens_per_phase is per phase"),
    (["critic.model=tiny_qwen3"], "critic.model=tiny_qwen3 is not the actor's model"),
    (["learner.ppo_minibatches=3"], "learner.ppo_minibatches=3 must divide rollout.functions_per_step=8"),
    (["rewards.format_in_return=false"], "rewards.format_in_return=false needs each turn.s format penalty"),
    (["rollout.group_size=0"], r"rollout.group_size=0 must be > 0"),
])
def test_bad_settings_are_one_line_errors(argv, message, capsys):
    with pytest.raises(SystemExit, match=message) as e:
        job("+recipe=qwen3_8b", *argv, capsys=capsys)
    assert "\n" not in str(e.value.code)


@pytest.mark.parametrize("skyrl", [(), ("trainer.fully_async.enabled=true",
                                         "trainer.fully_async.num_parallel_generation_workers=16")])
def test_the_paper_recipe_passes_skyrl_checks(tmp_path, skyrl):
    """SkyRL's own validation (batch sizes, placement, estimator registered, step-wise rules), as the
    launcher runs it before starting the trainer; the wandb logger only for online runs (SkyRL's needs a key)."""
    from aac.skyrl._skyrl import validate_cfg
    from aac.skyrl.config import skyrl_config
    from aac.skyrl.estimator import register_estimator

    cfg = compose("+recipe=qwen3_8b", f"out_dir={tmp_path}")
    skyrl_cfg = skyrl_config(cfg, str(tmp_path), list(skyrl))
    register_estimator("turn", 1.0, 1e-6)
    validate_cfg(skyrl_cfg)
    assert skyrl_cfg.trainer.logger == "console" and skyrl_cfg.trainer.fully_async.enabled == bool(skyrl)
    skyrl_cfg.trainer.algorithm.advantage_estimator = "reinforce++"  # a per-token estimator: refused step-wise
    with pytest.raises(ValueError, match="not supported with step_wise_trajectories=True"):
        validate_cfg(skyrl_cfg)


# ---------------------------------------------------------------- our estimator in SkyRL


def step_rows(groups: list[list[list[float]]], width: int = 5, seed: int = 0):
    """SkyRL's step-wise rows for `groups[g][episode][step] = reward`: each reward on one token of its
    row, a response mask, the uids and is_last_step (plus one pad row, as SkyRL pads a batch)."""
    import torch

    rng = random.Random(seed)
    rewards, masks, uids, last = [], [], [], []
    for g, episodes in enumerate(groups):
        for episode in episodes:
            for t, r in enumerate(episode):
                length = rng.randint(1, width)
                row = [0.0] * width
                row[rng.randrange(length)] = r
                rewards.append(row)
                masks.append([1] * length + [0] * (width - length))
                uids.append(f"u{g}")
                last.append(t == len(episode) - 1)
    rewards.append([0.0] * width)
    masks.append([1] + [0] * (width - 1))
    uids.append("pad0")
    last.append(True)
    return torch.tensor(rewards), torch.tensor(masks), uids, last


def random_groups(rng: random.Random) -> list[list[list[float]]]:
    return [[[rng.choice([-0.5, 0.0, 0.1, 1.0, rng.random()]) for _ in range(rng.randint(1, 9))]
             for _ in range(rng.randint(1, 4))] for _ in range(3)]


@pytest.mark.parametrize("advantage", ["turn", "episode", "final"])
def test_registered_estimator_gives_aac_rewards_advantages(advantage):
    import numpy as np

    from aac.skyrl._skyrl import AdvantageEstimatorRegistry
    from aac.skyrl.estimator import register_estimator

    register_estimator(advantage, 0.7, 1e-6)
    estimator = AdvantageEstimatorRegistry.get("aac")
    rng = random.Random(advantage)
    for trial in range(10):
        groups = random_groups(rng)
        rewards, mask, uids, last = step_rows(groups, seed=trial)
        adv, returns = estimator(token_level_rewards=rewards, response_mask=mask, index=np.array(uids),
                                 is_last_step=last, config=None, gamma=1.0)
        assert adv.shape == rewards.shape and (adv * (1 - mask) == 0).all() and (returns == adv).all()
        row = 0
        for episodes in groups:
            expected = step_advantages([[(phase_of_turn(t), r) for t, r in enumerate(e)] for e in episodes],
                                       advantage, 0.7, 1e-6)
            for e_adv in expected:
                for a in e_adv:
                    assert adv[row][mask[row].bool()].tolist() == pytest.approx([a] * int(mask[row].sum()), abs=1e-6)
                    row += 1
        assert adv[row].abs().sum() == 0  # the pad row: a group of one


def test_estimator_setting_changes_the_advantages():
    """turn credits each step apart; episode gives every step its episode's advantage."""
    import numpy as np

    from aac.skyrl.estimator import step_credit

    rewards, mask, uids, last = step_rows([[[1.0, 0.0, 0.0], [0.0, 0.0, 0.5]]])
    per = {a: step_credit(rewards, mask, np.array(uids), last, advantage=a, w_step=1.0, eps=1e-6)[0][:, 0].tolist()
           for a in ("turn", "episode")}
    assert per["episode"][:3] == pytest.approx([1.0] * 3, abs=1e-5) and per["episode"][3:6] == pytest.approx([-1.0] * 3, abs=1e-5)
    # reasoning steps 1.0 vs 0.0 -> +-1; reflect steps 0.0 vs 0.5 -> -+1: added to the episode's
    assert per["turn"][:6] == pytest.approx([2.0, 1.0, 0.0, -2.0, -1.0, 0.0], abs=1e-5)
    with pytest.raises(ValueError, match="it needs the step-wise rows and is_last_step"):
        step_credit(rewards, mask, np.array(uids), advantage="turn", w_step=1.0, eps=1e-6)


def tiny_skyrl_config(tmp_path, *overrides: str, skyrl: tuple[str, ...] = ()):
    from aac.skyrl.config import skyrl_config

    cfg = compose("+recipe=tiny", f"out_dir={tmp_path}", *overrides)
    return cfg, skyrl_config(cfg, str(tmp_path), list(skyrl))


def test_trainer_gives_every_step_its_own_advantage(tmp_path):
    """SkyRL's step-wise branch broadcasts one advantage per trajectory; ours gives each turn its own."""
    import numpy as np

    from aac.skyrl._skyrl import TrainingInputBatch
    from aac.skyrl.estimator import register_estimator
    from aac.skyrl.trainer import StepCreditTrainer

    _, skyrl_cfg = tiny_skyrl_config(tmp_path)
    register_estimator("turn", 1.0, 1e-6)
    groups = [[[1.0, 0.0, 0.0], [0.0, 0.0, 0.5]], [[0.2, 0.1], [0.4]]]
    rewards, mask, uids, last = step_rows(groups)

    def advantages(estimator: str) -> list[float]:
        trainer = object.__new__(StepCreditTrainer)  # the compute step alone: no models, no Ray
        trainer.cfg, trainer.all_metrics = skyrl_cfg, {}
        trainer.cfg.trainer.algorithm.advantage_estimator = estimator
        data = TrainingInputBatch({"rewards": rewards.clone(), "response_mask": mask, "values": None})
        data.metadata = {"uids": list(uids), "is_last_step": list(last), "pad_size": 1, "avg_response_length": 3.0}
        out = trainer.compute_advantages_and_returns(data)
        assert set(out.metadata["metrics"]) >= {"avg_final_rewards", "avg_advantages"}
        return [a[m.bool()][0].item() for a, m in zip(out["advantages"], mask)]

    ours, grpo = advantages("aac"), advantages("grpo")
    expected = [a for episodes in groups for e in step_advantages(
        [[(phase_of_turn(t), r) for t, r in enumerate(e)] for e in episodes], "turn", 1.0, 1e-6) for a in e]
    assert ours[:-1] == pytest.approx(expected, abs=1e-5)
    ends = np.flatnonzero(last[:-1])
    starts = [0, *(ends[:-1] + 1)]
    assert all(len(set(np.round(grpo[s:e + 1], 6))) == 1 for s, e in zip(starts, ends))  # broadcast
    assert len(set(np.round(ours[:3], 6))) == 3  # one episode, three advantages


# ---------------------------------------------------------------- SkyRL's generator on CPU


REPLIES = {
    "reasoning": ["plan: try a number", "plan: try a negative one", ""],
    "input": ["Input: (5,)", "Input: (-3,)", "Input: (0,)", "Input: nothing"],
    "reflect": ["Decision: YES\nSummary: absolute value", "Decision: NO\nSummary: returns seven", "garbled"],
}


def ratings(messages: list[dict]) -> str:
    """The critic's grades: plans 6; the hypothesis "absolute value" 9, any other 3."""
    asked = messages[-1]["content"]
    if "Agent's plan for its next call" in asked:
        return "Worth a call.\nRating: 6"
    return "Right.\nRating: 9" if "description of the function:\nabsolute value" in asked else "Wrong.\nRating: 3"


class ScriptedPolicy(GenerateOnly):
    """The policy's engine, scripted. Actor turns (token in, from SkyRL): the reply for the turn's phase
    that a hash of the prompt picks; critic questions (chat messages, over the endpoint): `ratings`."""

    kind = "scripted"

    def __init__(self, tokenizer):
        super().__init__()
        self.tokenizer = tokenizer

    def generate(self, requests):
        out = []
        for r in requests:
            if r.prompt_ids is None:
                text, ids = ratings(r.messages), []
            else:
                prompt = self.tokenizer.decode(r.prompt_ids)
                options = REPLIES[phase_of_turn(prompt.count("<|im_start|>assistant") - 1).value]
                text = options[zlib.crc32(prompt.encode()) % len(options)]
                ids = self.tokenizer.encode(text, add_special_tokens=False) + [self.tokenizer.eos_token_id]
            out.append(GenResult(text, list(r.prompt_ids or []), ids, None, "stop", r.adapter, None))
        return out


def run_generator(tmp_path, engine, generator_cls=None, max_steps: int = 9):
    """SkyRL's data and generation path with our pieces: our prompts file read by SkyRL's PromptDataset,
    `prepare_generator_input`, and the generator over an `EngineClient` of `engine`. Returns the
    generator's output split into episodes, (instance, replies, per-step rewards), and the rewards
    `aac.train` gives the same replies (its critic on the same endpoint)."""
    from skyrl.backends.skyrl_train.inference_servers.engine_utils import get_sampling_params_for_backend
    from skyrl.train.dataset import PromptDataset
    from skyrl.train.generators.utils import prepare_generator_input
    from transformers import AutoTokenizer

    from aac.env.rows import write_instances
    from aac.skyrl.__main__ import write_prompts
    from aac.skyrl.client import EngineClient
    from aac.skyrl.generator import AACGymGenerator, with_policy_critic

    data = write_instances(tmp_path / "functions.jsonl", [ABS, SQUARE])
    cfg, skyrl_cfg = tiny_skyrl_config(tmp_path, f"env.data={data}", "env.split=all", f"env.max_steps={max_steps}",
                                       skyrl=("generator.n_samples_per_prompt=3",))
    write_prompts(cfg, skyrl_cfg.data.train_data[0])
    tokenizer = AutoTokenizer.from_pretrained(skyrl_cfg.trainer.policy.model.path)
    dataset = PromptDataset(skyrl_cfg.data.train_data, tokenizer, skyrl_cfg.trainer.max_prompt_length, num_workers=1)
    sampling = get_sampling_params_for_backend("vllm", skyrl_cfg.generator.sampling_params)
    batch, _ = prepare_generator_input(dataset.collate_fn([dataset[i] for i in range(len(dataset))]), 3,
                                       sampling, "aac-pau-critic", "train", 0)
    client = EngineClient(engine(tokenizer) if callable(engine) else engine, skyrl_cfg.trainer.policy.model.path,
                          sampling)
    try:
        if generator_cls is None:
            generator = AACGymGenerator(skyrl_cfg.generator, skyrl_cfg.environment.skyrl_gym, client, tokenizer)
        else:  # SkyRL's own generator, given the same critic
            generator = generator_cls(skyrl_cfg.generator, with_policy_critic(skyrl_cfg.environment.skyrl_gym, client),
                                      client, tokenizer)
        critic_url = getattr(generator.skyrl_gym_cfg, "aac-pau-critic")["critic"]["openai"]["base_url"]
        assert critic_url == client.get_endpoint_url() + "/v1"  # the critic asks the policy's servers
        out = asyncio.run(generator.generate(batch, disable_tqdm=True))
        episodes, current = [], []
        for row, is_last in enumerate(out["is_last_step"]):
            trained = [t for t, m in zip(out["response_ids"][row], out["loss_masks"][row]) if m]
            current.append((tokenizer.decode(trained, skip_special_tokens=True), sum(out["rewards"][row])))
            if is_last:
                instance = {"0": ABS, "1": SQUARE}[out["trajectory_ids"][row].instance_id]
                episodes.append((instance, [c[0] for c in current], [c[1] for c in current]))
                current = []
        return episodes, aac_train_rewards(cfg, critic_url, episodes)
    finally:
        asyncio.run(client.teardown())


def aac_train_rewards(cfg, critic_url, episodes) -> list[list[float]]:
    """`aac.train`'s rollout worker plays the same replies, its critic on the same endpoint."""
    from test_skyrl_reward import ReplayActor

    from aac.assembly import PlacedRolloutWorker
    from aac.engines.openai_engine import OpenAIEngine
    from aac.env.protocol import ProtocolConfig
    from aac.models import resolve_model
    from aac.rollout.driver import EpisodeSpec

    critic = OmegaConf.to_object(cfg.critic)
    critic.backend, critic.openai.base_url, critic.openai.model = "openai", critic_url, resolve_model(cfg.model.name)
    rollout = replace(OmegaConf.to_object(cfg.rollout), max_live_episodes=1)
    actor = ReplayActor([reply for _, replies, _ in episodes for reply in replies])
    worker = PlacedRolloutWorker(rollout, OmegaConf.to_object(cfg.env), critic, OmegaConf.to_object(cfg.rewards),
                                 ProtocolConfig.from_env(cfg.env), actor, OpenAIEngine("critic", openai=critic.openai))
    try:
        batch = worker.run([EpisodeSpec(k, inst) for k, (inst, _, _) in enumerate(episodes)], adapter=None, seed=0)
    finally:
        worker.close()
    return [[t.reward for t in e.turns] for e in batch.episodes]


@pytest.mark.parametrize("max_steps", [4, 9])
def test_skyrl_generator_pays_each_step_what_aac_train_pays(tmp_path, max_steps):
    """Square's episodes run plan, (0,), NO, ...: at 4 steps they run out the clock (aac_potential
    moves the timeout penalty onto the NO reflect at the end); at 9 they end on a YES."""
    episodes, expected = run_generator(tmp_path, ScriptedPolicy, max_steps=max_steps)
    assert len(episodes) == 6 and all(len(replies) <= max_steps for _, replies, _ in episodes)
    square = [replies for instance, replies, _ in episodes if instance is SQUARE]
    assert all(len(r) == 4 for r in square) if max_steps == 4 else all(r[-1].startswith("Decision: YES") for r in square)
    for (_, _, rewards), own in zip(episodes, expected):
        assert rewards == pytest.approx(own, abs=1e-9)


def test_skyrl_own_generator_keeps_the_envs_online_pay(tmp_path):
    """The same returns, but a judged plan's reward arrives with the next step and the timeout's
    shares at the end: what our generator restamps."""
    from aac.skyrl._skyrl import SkyRLGymGenerator

    episodes, expected = run_generator(tmp_path, ScriptedPolicy, SkyRLGymGenerator, max_steps=4)
    for (_, _, paid), own in zip(episodes, expected):
        assert sum(paid) == pytest.approx(sum(own), abs=1e-9)
        assert paid[0] == 0.0 and own[0] > 0  # the first plan, judged: paid with its call
        assert paid[1] == pytest.approx(own[0] + own[1], abs=1e-9)


@pytest.mark.slow
def test_hf_engine_drives_skyrl_generator_with_the_critic_on_its_endpoint(tmp_path, tiny_model_path):
    """The real thing on CPU: the HF engine (tiny Qwen3) serves the policy to SkyRL's generator, token
    in, token out, and the frozen critic over HTTP (the base model, on the same engine)."""
    from aac.engines import make_engine

    engine = make_engine("hf", tiny_model_path, max_model_len=2048, seed=0)
    episodes, expected = run_generator(tmp_path, engine, max_steps=6)
    assert len(episodes) == 6 and engine.stats.requests > sum(len(r) for _, r, _ in episodes)  # critic asked too
    for (_, _, rewards), own in zip(episodes, expected):
        assert rewards == pytest.approx(own, abs=1e-9)
