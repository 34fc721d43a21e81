"""Our composed config (`TrainConfig`) as SkyRL's config overrides: a plain nested dict, no SkyRL needed.

What maps where (docs/skyrl.md has the table): the model and its LoRA (r, alpha, dropout, targets), the
optimizer, PPO's clip and KL, the group size (`generator.n_samples_per_prompt`), functions per step
(`trainer.train_batch_size`), turns (`generator.max_turns` = `env.max_steps`), sampling, and the env
`aac-pau-critic` with the protocol, `critic` and `rewards` sections. SkyRL runs step-wise (one training
row per turn) and its advantage estimator is ours ("aac", aac/skyrl/estimator.py).

The critic: with `critic.backend` unset (aac.train: "the actor's engine") the frozen critic is the base
model on SkyRL's own vLLM servers, reached over their OpenAI-compatible endpoint (`POLICY_SERVERS`,
replaced by their URL when the generator starts); the policy is a LoRA adapter there, so the base is
the unmodified model. `critic.backend=openai` with a `critic.openai.base_url`: a separate server;
`vllm` / `hf`: an engine inside the generator's process.

Settings SkyRL has no place for are refused with a one-line error naming the key (they would be
silently dropped otherwise): answer cues (SkyRL opens a new assistant turn, it cannot continue a
prefill), constrained decoding, per-phase token budgets and stops.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aac.config import ConfigError

if TYPE_CHECKING:
    from aac.config import TrainConfig

ENV_CLASS = "aac-pau-critic"
ENV_FIELD = "aac_pau_critic"  # SkyRL reads an env's settings as an attribute of its gym config
ESTIMATOR = "aac"
POLICY_SERVERS = "skyrl://policy"  # critic.openai.base_url: the policy's own servers (URL known at start)
DATA_FILE = "skyrl_data/train.parquet"


def _refuse_untranslatable(cfg: TrainConfig) -> None:
    if cfg.env.answer_cues:
        raise ConfigError("env.answer_cues=true needs the engine to continue a prefilled reply; SkyRL's generator "
                          "opens a new assistant turn: set env.answer_cues=false")
    if cfg.env.constrained_format:
        raise ConfigError("env.constrained_format=true decodes inside our grammar (hf engine); SkyRL's vLLM "
                          "servers do not: set env.constrained_format=false")
    if not cfg.rewards.format_in_return:
        raise ConfigError("rewards.format_in_return=false needs each turn's format penalty apart from its reward; "
                          "SkyRL's estimator sees one reward a turn: set rewards.format_in_return=true")
    for key in ("max_tokens_per_phase", "stop_per_phase"):
        if cfg.rollout[key]:
            raise ConfigError(f"rollout.{key} is per phase; SkyRL samples every turn alike: unset it "
                              "(rollout.max_tokens_per_turn holds for every turn)")
    if cfg.learner.lora_r <= 0:
        raise ConfigError("learner.lora_r must be > 0: the frozen critic and the reference policy are the base "
                          "model under the trained adapter")


def critic_section(cfg: TrainConfig) -> dict[str, Any]:
    """The env's `critic` section: ours, with an unset backend meaning the policy's own servers."""
    from omegaconf import OmegaConf

    critic = OmegaConf.to_container(cfg.critic, resolve=True, enum_to_str=True)
    if critic["kind"] != "llm" or critic["backend"] is not None:
        return critic
    if critic["model"] not in (None, cfg.model.name):
        raise ConfigError(f"critic.model={critic['model']} is not the actor's model ({cfg.model.name}): the policy's "
                          "servers serve only that base; serve the critic apart (critic.backend=openai "
                          "critic.openai.base_url=URL)")
    critic.update(backend="openai", model=model_path(cfg.model.name))
    critic["openai"]["base_url"] = POLICY_SERVERS
    return critic


def env_config(cfg: TrainConfig) -> dict[str, Any]:
    """`aac-pau-critic`'s env_config: the protocol's settings, the domain, and `critic` / `rewards`."""
    from omegaconf import OmegaConf

    from aac.env.protocol import ProtocolConfig

    protocol = asdict(ProtocolConfig.from_env(cfg.env))
    if protocol["input_literals"] is not None:
        protocol["input_literals"] = list(protocol["input_literals"])
    return {**protocol, "domain": str(cfg.env.domain), "critic": critic_section(cfg),
            "rewards": OmegaConf.to_container(cfg.rewards, resolve=True, enum_to_str=True)}


def model_path(name: str) -> str:
    """What SkyRL loads: a hub id, or the local folder of an embedded model (built once)."""
    from aac.models import resolve_model

    return resolve_model(name)


def skyrl_overrides(cfg: TrainConfig, out_dir: str | Path) -> dict[str, Any]:
    """SkyRL's config for our run, as nested overrides of its defaults (the rest stay SkyRL's)."""
    _refuse_untranslatable(cfg)
    r, learner, out = cfg.rollout, cfg.learner, Path(out_dir)
    max_input = cfg.model.max_model_len - r.max_tokens_per_turn
    if max_input <= 0:
        raise ConfigError(f"model.max_model_len={cfg.model.max_model_len} leaves no prompt room after "
                          f"rollout.max_tokens_per_turn={r.max_tokens_per_turn}")
    if r.functions_per_step % learner.ppo_minibatches:
        raise ConfigError(f"learner.ppo_minibatches={learner.ppo_minibatches} must divide "
                          f"rollout.functions_per_step={r.functions_per_step}")
    return {
        "data": {"train_data": [str(out / DATA_FILE)], "val_data": []},
        "trainer": _trainer(cfg, out, max_input),
        "generator": _generator(cfg, max_input),
        "environment": {"env_class": ENV_CLASS, "skyrl_gym": {ENV_FIELD: env_config(cfg)}},
    }


def _trainer(cfg: TrainConfig, out: Path, max_input: int) -> dict[str, Any]:
    """SkyRL's `trainer` section: the LoRA policy, its optimizer, GRPO's loss, placement, batch and checkpoints."""
    r, learner = cfg.rollout, cfg.learner
    # our recipes give the engine and the learner a GPU each; without GPUs named, SkyRL colocates them
    apart = learner.num_gpus >= 1 and r.num_gpus >= 1
    targets = learner.target_modules
    return {
        "strategy": "fsdp",
        "policy": {
            "model": {"path": model_path(cfg.model.name),
                      "lora": {"rank": learner.lora_r, "alpha": learner.lora_alpha, "dropout": learner.lora_dropout,
                               "target_modules": targets if isinstance(targets, str) else list(targets)}},
            "optimizer_config": {"lr": learner.lr, "adam_betas": list(learner.betas),
                                 "weight_decay": learner.weight_decay, "max_grad_norm": learner.max_grad_norm},
        },
        "algorithm": {"advantage_estimator": ESTIMATOR, "policy_loss_type": "regular",
                      "eps_clip_low": learner.clip_eps, "eps_clip_high": learner.clip_eps,
                      "use_kl_loss": learner.kl_coef > 0, "kl_loss_coef": learner.kl_coef},
        "placement": {"colocate_all": not apart, "policy_num_gpus_per_node": max(1, int(learner.num_gpus))},
        "gradient_checkpointing": learner.gradient_checkpointing,
        "max_tokens_per_microbatch": learner.micro_batch_tokens,
        "seed": cfg.seed,
        "epochs": learner.epochs,
        "max_training_steps": cfg.max_steps,
        "train_batch_size": r.functions_per_step,
        "policy_mini_batch_size": r.functions_per_step // learner.ppo_minibatches,
        "max_prompt_length": max_input,
        "ckpt_path": str(out / "checkpoints"),
        "export_path": str(out / "exports"),
        "log_path": str(out / "logs"),
        "ckpt_interval": cfg.save_every if cfg.save_every > 0 else -1,
        "max_ckpts_to_keep": cfg.keep_checkpoints,
        "eval_interval": -1,  # evaluation is aac.eval's, on the saved adapters
        "eval_before_train": False,
        "project_name": cfg.logging.project,
        "run_name": cfg.logging.run_name or f"aac-{cfg.recipe_name}",
        # SkyRL's wandb logger needs WANDB_API_KEY (no offline runs): offline and disabled log to the console
        "logger": "wandb" if cfg.logging.wandb_mode == "online" else "console",
    }


def _generator(cfg: TrainConfig, max_input: int) -> dict[str, Any]:
    """SkyRL's `generator` section: turns per episode, one trajectory row per turn, sampling and the engines."""
    from aac.models import chat_template_kwargs

    r = cfg.rollout
    return {
        "n_samples_per_prompt": r.group_size,
        "max_turns": cfg.env.max_steps,
        "max_input_length": max_input,
        "step_wise_trajectories": True,  # one row per turn: each turn gets its own advantage
        "use_conversation_multi_turn": True,
        "batched": False,
        "chat_template_kwargs": chat_template_kwargs(cfg.model.name, dict(cfg.model.chat_template_kwargs)),
        "sampling_params": {"temperature": r.temperature, "top_p": r.top_p,
                            "max_generate_length": r.max_tokens_per_turn},
        "inference_engine": {"model_dtype": str(cfg.model.dtype), "num_engines": max(1, int(r.num_gpus)),
                             "gpu_memory_utilization": r.gpu_memory_utilization},
    }
