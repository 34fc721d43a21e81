"""Typed configuration: one dataclass per Hydra group, composed into `TrainConfig`.

Defaults follow SPEC: the paper's constants, with the release's bugs fixed. YAML files in
`conf/` pick values for these schemas; `recipes/` hold whole experiments (`+recipe=NAME`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional


@dataclass
class ModelConfig:
    # registry key (see aac.models), local folder, or HF hub id
    name: str = "smollm2_135m"
    dtype: str = "float32"  # float32 | bfloat16 | float16
    # extra kwargs for tokenizer.apply_chat_template (Qwen3: enable_thinking)
    chat_template_kwargs: dict[str, Any] = field(default_factory=dict)
    max_model_len: int = 4096


@dataclass
class SandboxConfig:
    workers: int = 2  # warm worker processes in the pool
    memory_mb: int = 512  # address-space limit per worker
    cpu_time_s: float = 30.0  # RLIMIT_CPU per call
    max_warm: Optional[int] = None  # warm worker processes kept (LRU); None: 4 x workers
    isolation: str = "auto"  # auto (strongest available) | namespaces | userns | landlock | rlimits
    max_output_chars: int = 2000  # repr cap shown to the model
    max_input_chars: int = 10000
    max_input_depth: int = 50


@dataclass
class EnvConfig:
    # jsonl / parquet path, HF dataset id, or builtin:humaneval (built at set-up)
    data: str = "builtin:humaneval"
    split: str = "train"
    limit: Optional[int] = None
    on_bad_row: str = "warn"  # warn: skip the row with a warning | raise
    spread_list_args: bool = True  # the release's rule: "([1,2])" calls f(1, 2)
    history_window: int = 5  # observations shown per prompt (release: 5 train, 10 eval)
    max_steps: int = 40  # turns per training episode (T_max)
    max_calls: Optional[int] = None  # function calls per episode (eval: 25)
    call_timeout_s: float = 10.0  # release: 10 s train, 30 s eval
    max_observation_chars: int = 200  # clip of each input/result shown in prompts
    max_window_chars: int = 1600  # budget of the observation window (oldest dropped first)
    sandbox: SandboxConfig = field(default_factory=SandboxConfig)


@dataclass
class OpenAIConfig:
    base_url: str = "http://127.0.0.1:8000/v1"
    model: str = ""  # served model name; empty = the model's name
    api_key_env: str = "OPENAI_API_KEY"
    timeout_s: float = 60.0
    max_retries: int = 3
    backoff_s: float = 0.5
    concurrency: int = 16
    return_token_ids: bool = False  # vLLM servers can return token ids; hosted APIs reject the field


@dataclass
class CriticConfig:
    mode: str = "privileged"  # privileged | symmetric (the SYM-INFO ablation)
    # None: the actor's base model, served by the same engine (adapter off)
    model: Optional[str] = None
    backend: Optional[str] = None  # None: the rollout engine; else vllm | hf | openai
    openai: OpenAIConfig = field(default_factory=OpenAIConfig)
    max_tokens: int = 256
    temperature: float = 0.0
    cache: bool = True
    fallback_score: float = 0.0  # score of a judgment that got no reply (counted in critic health)
    examples: bool = True  # two worked examples in the prompt: small models need them to write a rating


@dataclass
class RewardConfig:
    schedule: str = "aac"  # aac | final | sym_info | no_informativeness
    lambda_h: float = 2.0
    p_parse: float = 0.5
    tau_reason: int = 100
    tau_input: int = 30
    tau_reflect: int = 100
    stop_threshold: float = 0.7  # b_term: done and s > this -> +1
    continue_threshold: float = 0.3  # b_term: not done and s < this -> +1
    timeout_penalty: float = -1.0  # reward of the step that hits T_max
    t_max: int = "${env.max_steps}"  # type: ignore[assignment]  # in lambda_h / (2 T_max)
    advantage: str = "turn"  # final | episode | turn
    w_step: float = 1.0  # weight of the per-phase step advantage (turn)
    eps: float = 1e-6


@dataclass
class RolloutConfig:
    engine: str = "vllm"  # vllm | hf | openai
    functions_per_step: int = 8
    group_size: int = 8
    temperature: float = 1.0
    top_p: float = 1.0
    max_tokens_per_turn: int = 1024
    num_workers: int = 1  # rollout workers (each holds a sandbox pool and a critic)
    placement: str = "ray"  # ray: engine, learner, workers in Ray actors | local: one process
    # vLLM engine knobs
    gpu_memory_utilization: float = 0.45  # leaves room on a GPU shared with nothing else
    kv_cache_gb: int = 2  # CPU build: VLLM_CPU_KVCACHE_SPACE
    max_loras: int = 2
    max_lora_rank: int = 16
    enforce_eager: bool = True
    # base-only batches (critic, judge) with LoRA off instead of the identity adapter; None: on for
    # the vLLM CPU build (its LoRA ops cost every token of a LoRA batch ~5x), off on GPU
    plain_base_batches: Optional[bool] = None
    openai: OpenAIConfig = field(default_factory=OpenAIConfig)


@dataclass
class LearnerConfig:
    backend: str = "deepspeed"  # deepspeed | torch
    zero_stage: int = 0
    lora_r: int = 16
    lora_alpha: int = 16
    lora_dropout: float = 0.0
    target_modules: Any = "all-linear"
    lr: float = 1e-6
    betas: list[float] = field(default_factory=lambda: [0.9, 0.999])
    weight_decay: float = 0.01
    max_grad_norm: float = 1.0
    clip_eps: float = 0.2
    kl_coef: float = 0.001
    epochs: int = 5
    micro_batch_tokens: int = 4096  # token budget per micro-batch: lower it to save memory
    init_adapter: Optional[str] = None  # a peft adapter (e.g. aac.sft's) to start from instead of B = 0
    gradient_checkpointing: bool = False  # saves activation memory, costs ~30% speed
    dtype: str = "float32"


@dataclass
class EvalConfig:
    mode: str = "interactive"  # interactive | in_context
    data: str = "builtin:humaneval"
    split: str = "test"
    limit: Optional[int] = None
    # a peft adapter folder, a training checkpoint (step_N/), or a run's out_dir (its latest checkpoint)
    checkpoint: Optional[str] = None
    engine: Optional[str] = None  # vllm | hf | openai; None: rollout.engine
    history_window: int = 10
    max_calls: int = 25  # paper: 25 function calls (the release used 20 cycles)
    call_timeout_s: float = 30.0
    codematch_timeout_s: float = 0.5
    max_tokens_per_turn: int = 1024
    temperature: float = 0.0  # greedy by default (SPEC §8)
    batch_size: int = 16  # episodes in flight: more is faster until the engine saturates
    judge_model: Optional[str] = None  # None: the actor's base model (sharing its engine)
    coder_model: Optional[str] = None  # None: the actor's base model
    judge_engine: Optional[str] = None  # engine kind of judge and coder; None: the actor's
    judge_max_tokens: int = 256
    coder_max_tokens: int = 512
    gold: bool = False  # also code-match from the gold description: the per-instance upper bound
    score: bool = True  # false: only play the episodes (score later by rerunning with true)
    name: Optional[str] = None  # label of the run in reports and comparisons
    bootstrap_resamples: int = 10000


@dataclass
class SFTConfig:
    """`python -m aac.sft`: supervised warm start of the actor on the episodes of `aac.eval` runs."""

    data: str = ""  # eval run directories (episodes.jsonl + scores.jsonl), comma-separated
    min_score: float = 4.0  # keep episodes whose judged description score (1-5) is >= this
    epochs: int = 2  # passes over the kept turns
    batch_turns: int = 8  # turns (chat samples) per optimizer step
    lr: Optional[float] = None  # None: learner.lr (the paper's RL lr, 1e-6, is far too small for SFT)


@dataclass
class LoggingConfig:
    wandb_mode: str = "offline"  # offline | online | disabled
    project: str = "aac"
    run_name: Optional[str] = None
    progress: bool = True


@dataclass
class TrainConfig:
    model: ModelConfig = field(default_factory=ModelConfig)
    env: EnvConfig = field(default_factory=EnvConfig)
    critic: CriticConfig = field(default_factory=CriticConfig)
    rewards: RewardConfig = field(default_factory=RewardConfig)
    rollout: RolloutConfig = field(default_factory=RolloutConfig)
    learner: LearnerConfig = field(default_factory=LearnerConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)
    sft: SFTConfig = field(default_factory=SFTConfig)
    logging: LoggingConfig = field(default_factory=LoggingConfig)
    seed: int = 0
    max_steps: Optional[int] = None  # optimizer steps; None: epochs over the data
    out_dir: str = "runs/${now:%Y%m%d-%H%M%S}"
    save_every: int = 10
    eval_every: int = 0  # 0: no periodic evaluation
    eval_limit: int = 8
    resume: Any = False  # false | true (latest in out_dir) | PATH
    keep_checkpoints: int = 3
    sync_adapter: bool = True  # load each new adapter into the engine (off only to test the check)
    check_sync: bool = True  # compare engine vs learner log-probs on a probe after each sync
    sync_tolerance: float = 0.05  # max mean |logp_engine - logp_learner| per token (fp32 CPU: ~1e-4)
    recipe_name: str = "none"


# ---------------------------------------------------------------- registration with Hydra


def resource_dir(name: str) -> Path:
    """`conf/` or `recipes/`, reached through `aac/_data/` so an installed wheel carries them."""
    path = Path(__file__).resolve().parent / "_data" / name
    if not path.is_dir():
        raise FileNotFoundError(f"aac: the {name}/ config folder is missing at {path}")
    return path


def register_configs() -> None:
    """Store the schema and every recipe in Hydra's ConfigStore.

    Recipes live in the top-level `recipes/` folder but are selected as the config group
    `recipe` (`+recipe=NAME`), so they are registered here rather than found on disk.
    """
    from hydra.core.config_store import ConfigStore
    from omegaconf import OmegaConf

    cs = ConfigStore.instance()
    cs.store(name="base_config", node=TrainConfig)
    for path in sorted(resource_dir("recipes").glob("*.yaml")):
        node = OmegaConf.load(path)
        cs.store(group="recipe", name=path.stem, node=node, package="_global_")


# Fields whose value must be one of a fixed set; checked after composition.
CHOICES: dict[str, tuple[str, ...]] = {
    "model.dtype": ("float32", "bfloat16", "float16"),
    "env.on_bad_row": ("warn", "raise"),
    "env.sandbox.isolation": ("auto", "namespaces", "userns", "landlock", "rlimits"),
    "critic.mode": ("privileged", "symmetric"),
    "critic.backend": ("vllm", "hf", "openai"),
    "rewards.schedule": ("aac", "final", "sym_info", "no_informativeness"),
    "rewards.advantage": ("final", "episode", "turn"),
    "rollout.engine": ("vllm", "hf", "openai"),
    "rollout.placement": ("ray", "local"),
    "learner.backend": ("deepspeed", "torch"),
    "learner.dtype": ("float32", "bfloat16", "float16"),
    "eval.mode": ("interactive", "in_context"),
    "eval.engine": ("vllm", "hf", "openai"),
    "eval.judge_engine": ("vllm", "hf", "openai"),
    "logging.wandb_mode": ("offline", "online", "disabled"),
}
POSITIVE = ("rollout.group_size", "rollout.functions_per_step", "rollout.max_tokens_per_turn",
            "env.max_steps", "env.history_window", "eval.batch_size", "eval.max_calls",
            "eval.history_window", "eval.max_tokens_per_turn", "eval.judge_max_tokens", "eval.coder_max_tokens",
            "eval.bootstrap_resamples", "eval.limit", "rewards.tau_reason", "rewards.tau_input",
            "rewards.tau_reflect", "learner.lora_r", "learner.epochs", "learner.micro_batch_tokens",
            "sft.epochs", "sft.batch_turns")


class ConfigError(ValueError):
    """A bad key or value, reported as one line naming the key."""


def validate(cfg: Any) -> None:
    from omegaconf import OmegaConf

    for key, allowed in CHOICES.items():
        value = OmegaConf.select(cfg, key)
        if value is not None and value not in allowed:
            raise ConfigError(f"{key}={value!r} is not one of: {', '.join(allowed)}")
    for key in POSITIVE:
        value = OmegaConf.select(cfg, key)
        if value is not None and value <= 0:
            raise ConfigError(f"{key}={value!r} must be > 0")
    if cfg.learner.lora_r > cfg.rollout.max_lora_rank:
        raise ConfigError(f"learner.lora_r={cfg.learner.lora_r} exceeds rollout.max_lora_rank="
                          f"{cfg.rollout.max_lora_rank}: the engine could not load the adapter")
    if cfg.rewards.schedule == "sym_info" and cfg.critic.mode != "symmetric":
        raise ConfigError("rewards.schedule=sym_info needs critic.mode=symmetric (use rewards=sym_info)")


def compose(*overrides: str, config_name: str = "config") -> Any:
    """The composed, validated config for these overrides (for notebooks and tests)."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    register_configs()
    GlobalHydra.instance().clear()
    with initialize_config_dir(str(resource_dir("conf")), version_base=None):
        cfg = hydra_compose(config_name, overrides=list(overrides))
    validate(cfg)
    return cfg
