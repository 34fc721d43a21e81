"""Typed configuration: one dataclass per Hydra group, composed into `TrainConfig`.

Defaults follow docs/method.md: the paper's constants, with the release's bugs fixed. YAML files in
`conf/` pick values for these schemas; `recipes/` hold whole experiments (`+recipe=NAME`). (`aac/_data/conf`
and `aac/_data/recipes` are links to those two folders, so a wheel carries them: there is one copy.)

How a setting is declared (`setting(default, "range")` beside each field, `@rule` for a check across keys,
`Choice` for a set of values) and checked is aac/settings.py's; this module holds the groups.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from aac.phase import PHASE_NAMES
from aac.sandbox._isolate import MODES as ISOLATION_MODES
from aac.settings import (
    ConfigError,
    check_settings,
    choice,
    named_error,
    rule,
    setting,
)


def _choice(name: str, *values: str) -> Any:
    return choice(name, *values, module=__name__)


# every set of allowed values, defined once: the modules that check a value at run time import these
DType = _choice("DType", "float32", "bfloat16", "float16")
Allocator = _choice("Allocator", "glibc", "jemalloc")
OnBadRow = _choice("OnBadRow", "warn", "raise")
Isolation = _choice("Isolation", "auto", *ISOLATION_MODES)  # the sandbox's own list (stdlib-only)
CriticMode = _choice("CriticMode", "privileged", "symmetric")
CriticKind = _choice("CriticKind", "llm", "scripted", "mutants")
CriticScoring = _choice("CriticScoring", "generate", "logprob")
Informativeness = _choice("Informativeness", "judge", "coverage")
ScriptedRule = _choice("ScriptedRule", "arcs", "coverage")
EngineKind = _choice("EngineKind", "vllm", "hf", "openai")
LoRAMode = _choice("LoRAMode", "adapter", "merged")
Schedule = _choice("Schedule", "aac_potential", "aac", "final", "sym_info", "no_informativeness")
Advantage = _choice("Advantage", "final", "episode", "turn")
Placement = _choice("Placement", "ray", "local")
LearnerBackend = _choice("LearnerBackend", "deepspeed", "torch")
EvalMode = _choice("EvalMode", "interactive", "in_context")
Teacher = _choice("Teacher", "none", "answer_aware")
WandbMode = _choice("WandbMode", "offline", "online", "disabled")
PromptStyle = _choice("PromptStyle", "paper", "compact")
PromptLayout = _choice("PromptLayout", "per_turn", "shared_first")
PreflightShape = _choice("PreflightShape", "typical", "recipe")
DomainName = _choice("DomainName", "pau", "stateful", "library", "web")  # aac/env/domains' registry
# each domain's built-in dataset: the default `env.data` (`${domain_data:${env.domain}}`), which `eval.data` follows
DOMAIN_DATA = {"pau": "builtin:humaneval", "stateful": "builtin:stateful", "library": "builtin:library",
               "web": "builtin:web"}


def _domain_data(domain: str) -> str:
    if str(domain) not in DOMAIN_DATA:
        raise ValueError(f"env.domain={domain!r} is not one of: {', '.join(DOMAIN_DATA)}")
    return DOMAIN_DATA[str(domain)]


def _register_resolvers() -> None:
    """The resolvers the schema's interpolations use, registered where a config is composed or checked
    (`register_configs`, `validate`), not on import: the learner, its memory model and the device check
    import this module on machines without omegaconf (benchmarks/gpu_check.py)."""
    from omegaconf import OmegaConf

    if not OmegaConf.has_resolver("domain_data"):
        OmegaConf.register_new_resolver("domain_data", _domain_data)


MAX_MMAP_THRESHOLD_KB = 32 * 1024  # glibc's ceiling on 64-bit (HEAP_MAX_SIZE / 2)


@dataclass
class ModelConfig:
    # registry key (see aac.models), local folder, or HF hub id
    name: str = "smollm2_135m"
    dtype: DType = DType.float32  # weights' dtype in the engines (the learner has its own, learner.dtype)
    # extra kwargs for tokenizer.apply_chat_template (Qwen3: enable_thinking)
    chat_template_kwargs: dict[str, Any] = field(default_factory=dict)
    # context length of every engine of the run, in tokens: a longer prompt is a failed turn, not a crash
    max_model_len: int = setting(4096, "> 0")


@dataclass
class SandboxConfig:
    workers: int = setting(2, "> 0")  # warm worker processes in the pool
    memory_mb: int = setting(512, "> 0")  # address-space limit per worker
    cpu_time_s: float = setting(30.0, "> 0")  # RLIMIT_CPU per call
    # warm children kept (LRU) follow SandboxPool.keep_warm(n) (live functions; 4 x workers until
    # called); max_warm caps that number (None: no cap), warm_memory_mb the memory they hold alone
    max_warm: Optional[int] = setting(None, "> 0")
    # memory the warm children may hold together, in MB: beyond it the least recently used are ended
    warm_memory_mb: int = setting(2048, "> 0")
    preload: Optional[list[str]] = None  # modules the zygote imports for all children; None: DEFAULT_PRELOAD + the domain's (library: numpy)
    spare_children: int = setting(2, ">= 0")  # children forked and isolated ahead of demand (namespace modes)
    isolation: Isolation = Isolation.auto  # auto: the strongest available
    max_output_chars: int = setting(2000, "> 0")  # repr cap shown to the model
    # longest input (characters) a call may pass; a longer one fails as the model's error
    max_input_chars: int = setting(10000, "> 0")
    # deepest nesting of an input's literal (lists in lists ...); a deeper one fails as the model's error
    max_input_depth: int = setting(50, "> 0")


@dataclass
class EnvConfig:
    # pau: stateless functions (the paper's) | stateful: an object's methods | library: a real
    # library's function under an unseen name | web: an HTTP service, queried by requests (aac/env/domains)
    domain: DomainName = DomainName.pau
    # jsonl / parquet path, HF dataset id, or builtin:NAME (built at set-up); default: the domain's
    # built-in set (pau: builtin:humaneval)
    data: str = "${domain_data:${env.domain}}"
    split: str = "train"  # the split of env.data training reads
    limit: Optional[int] = setting(None, "> 0")  # first N instances of the split (null: all)
    on_bad_row: OnBadRow = OnBadRow.warn  # warn: skip the row with a warning | raise
    spread_list_args: bool = True  # the release's rule: "([1,2])" calls f(1, 2)
    history_window: int = setting(5, "> 0")  # observations shown per prompt (release: 5 train, 10 eval)
    max_steps: int = setting(40, "> 0")  # turns per training episode (T_max)
    max_calls: Optional[int] = setting(None, "> 0")  # function calls per episode (eval: 25)
    call_timeout_s: float = setting(10.0, "> 0")  # release: 10 s train, 30 s eval
    max_observation_chars: int = setting(200, "> 0")  # clip of each input/result shown in prompts
    max_window_chars: int = setting(1600, "> 0")  # budget of the observation window (oldest dropped first)
    # decode each turn inside its phase's answer grammar (aac/env/grammar.py; HF engine): a policy
    # that cannot write the formats (the tiny recipe's random model) can then act at all
    constrained_format: bool = False
    # the literals a constrained input may hold (null: aac/env/grammar.py's LITERALS): an alphabet every
    # row's validator accepts makes each call informative or a repeat, never a rejected call
    input_literals: Optional[list[str]] = None
    # paper: the paper-style prompts (comparable runs) | compact: short prompts with a worked example
    # as chat turns, Summary before Decision (what a 135M model follows; aac/env/compact_prompts.py)
    prompt_style: PromptStyle = PromptStyle.paper
    # per_turn: each turn's prompt laid out on its own (the layout before issue 26) | shared_first: what a
    # cycle's three turns share (context, then the plan, then the latest call) first and each turn's
    # instruction last, so the learner's prefix tree and the engine's prefix cache compute it once
    # (aac/env/protocol.py; benchmarks/RESULTS.md, "Update tokens per generated token")
    prompt_layout: PromptLayout = PromptLayout.per_turn
    # open each input / reflect reply with the style's answer cue (`Input: (`, `Decision:` or
    # `Summary:`), prefilled in the prompt: cheaper and far more parsable replies from small models;
    # off for paper runs, so format-error rates stay comparable
    answer_cues: bool = False
    # the input cue also opens the first argument as the first context example's does (`Input: ([` for a
    # list, `Input: ('` for a string): SmolLM2-135M's calls otherwise copy the worked example's shape, and 85%
    # of them raised a TypeError (wrong arity or type) on held-out functions, 36% with it (benchmarks/RESULTS.md,
    # "What the embedded default learns"). Needs answer_cues
    shaped_input_cue: bool = False
    sandbox: SandboxConfig = field(default_factory=SandboxConfig)


@rule("env.shaped_input_cue", "env.answer_cues")
def _shaped_cue_needs_cues(cfg: TrainConfig) -> None:
    """env.shaped_input_cue=true opens the input cue further: it needs env.answer_cues=true."""
    if cfg.env.shaped_input_cue and not cfg.env.answer_cues:
        raise ConfigError("env.shaped_input_cue=true opens the input cue further: it needs env.answer_cues=true")


@rule("env.constrained_format", "rollout.engine", "env.prompt_style", "env.domain")
def _constrained_format(cfg: TrainConfig) -> None:
    """env.constrained_format=true needs rollout.engine=hf, env.prompt_style=paper and a domain of functions
    (pau, library: a tuple input)."""
    if not cfg.env.constrained_format:
        return
    if cfg.rollout.engine != "hf":
        raise ConfigError(f"env.constrained_format needs rollout.engine=hf (got {cfg.rollout.engine})")
    if cfg.env.prompt_style != "paper":
        raise ConfigError(f"env.constrained_format follows the paper's answer format; it needs env.prompt_style=paper "
                          f"(got {cfg.env.prompt_style})")
    if queries := _QUERIES.get(str(cfg.env.domain)):
        raise ConfigError(f"env.constrained_format decodes a function's tuple input; env.domain={cfg.env.domain} "
                          f"{queries}")


_QUERIES = {"stateful": "queries methods", "web": "sends HTTP requests"}  # the domains whose inputs are not a tuple


@rule("env.domain", "critic.informativeness", "critic.kind")
def _branches_need_functions(cfg: TrainConfig) -> None:
    """env.domain=stateful or web needs critic.informativeness=judge and critic.kind=llm: coverage, the scripted
    and the mutants critic run a plan's query as a function input (and read the branch arcs it reaches, or run
    it on mutants)."""
    if str(cfg.env.domain) in _QUERIES and (cfg.critic.informativeness == "coverage" or cfg.critic.kind != "llm"):
        raise ConfigError(f"critic.informativeness=coverage and critic.kind={cfg.critic.kind} run a function on its "
                          f"inputs; env.domain={cfg.env.domain} needs critic.informativeness=judge and critic.kind=llm")


@rule("env.input_literals")
def _input_literals(cfg: TrainConfig) -> None:
    """env.input_literals: distinct Python literals, at least one."""
    if cfg.env.input_literals is not None:
        try:
            check_literals(cfg.env.input_literals)
        except ValueError as e:
            raise ConfigError(str(e)) from None


@dataclass
class OpenAIConfig:
    base_url: str = "http://127.0.0.1:8000/v1"  # the endpoint's OpenAI-compatible base URL
    model: str = ""  # served model name; empty = the model's name
    # environment variable holding the API key (unset: "EMPTY", what local vLLM servers accept)
    api_key_env: str = "OPENAI_API_KEY"
    timeout_s: float = setting(60.0, "> 0")  # seconds per request before it is retried
    max_retries: int = setting(3, ">= 0")  # retries of a failed or timed-out request (0: none)
    backoff_s: float = setting(0.5, ">= 0")  # first retry's wait, doubled per retry (jittered)
    concurrency: int = setting(16, "> 0")  # requests in flight at once
    return_token_ids: bool = False  # vLLM servers can return token ids; hosted APIs reject the field
    top_logprobs: int = setting(20, "> 0")  # next-token log-probs asked for in log-prob scoring (OpenAI allows <= 20)


@dataclass
class CriticConfig:
    # llm: an LLM grades (the paper's) | scripted: a rule with a known optimum for controlled
    # experiments (aac/critic/scripted.py): no engine; hypothesis quality passes rewards.stop_threshold
    # at the scripted_k-th call that reaches new branch arcs | mutants: information measured exactly over
    # the row's mutants (aac/critic/mutants.py): a plan scores the share of the surviving mutants its call
    # kills, a hypothesis the share of all killed; rows whose mutants were built but none kept fall back to
    # the scripted rule; rows without the mutants column are refused at start
    kind: CriticKind = CriticKind.llm
    # kind=scripted: informative calls to a full hypothesis score (1.0); before, stop_threshold * n / K
    scripted_k: int = setting(3, "> 0")
    # what makes a call informative to the scripted critic, beside a new input: arcs: it reaches branch arcs
    # the earlier inputs did not | coverage: that, or a result not seen before (the coverage score > 0, the
    # rule of aac/eval/informative.py): the one a 135M model's calls can meet (its calls rarely reach arcs
    # beyond the context example's: benchmarks/RESULTS.md, "What the embedded default learns")
    scripted_rule: ScriptedRule = ScriptedRule.arcs
    # symmetric: the SYM-INFO ablation, the critic without the privileged side: the LLM critic's prompts
    # without the gold description and source; the scripted critic's rule without the source (a call is
    # informative when its input and its result, as the actor saw it, are new: aac/critic/scripted.py)
    mode: CriticMode = CriticMode.privileged
    # None: the actor's base model, served by the same engine (adapter off)
    model: Optional[str] = None
    backend: Optional[EngineKind] = None  # None: the actor's backend (rollout.engine)
    openai: OpenAIConfig = field(default_factory=OpenAIConfig)
    max_tokens: int = setting(256, "> 0")  # token budget of one judgment's reply
    temperature: float = setting(0.0, ">= 0")  # sampling temperature of the critic's judgments (0: greedy)
    cache: bool = True  # reuse the score of a judgment asked before with the same prompt
    examples: bool = True  # two worked examples in the prompt: small models need them to write a rating
    # GPUs for the critic's own engine actor (only when it is not the actor's engine)
    num_gpus: float = setting(0.0, ">= 0")
    # generate: reasons then `Rating: n`, parsed (the paper's) | logprob: one forward pass, the digits'
    # probability-weighted mean (G-Eval): ~1 token per judgment, no parse failures, continuous scores
    scoring: CriticScoring = CriticScoring.generate
    # judge: the LLM grades the plan (the paper's) | coverage: the branch arcs and new output the
    # realised call reached, measured in the sandbox (LLM-free; aac/critic/coverage.py)
    informativeness: Informativeness = Informativeness.judge
    coverage_output_weight: float = setting(0.5, "[0, 1]")  # coverage score = (1 - w) * new-arc share + w * new output
    # per call when coverage (or the scripted or mutants critic) runs the function, or a mutant of it
    coverage_call_timeout_s: float = setting(2.0, "> 0")
    card: Optional[str] = None  # the critic's report card (python -m aac.critic.check): logged at start


@dataclass
class RewardConfig:
    # aac_potential (default: docs/method.md §7.1's properties) | aac (the paper's table) | final |
    # sym_info | no_informativeness
    schedule: Schedule = Schedule.aac_potential
    lambda_h: float = setting(2.0, ">= 0")  # weight of the hypothesis terms and of the stop bonus/penalty (b_term)
    # format penalty: a reply that did not parse or an input whose call failed gets -p_parse
    p_parse: float = setting(0.5, ">= 0")
    tau_reason: int = setting(100, "> 0")  # words of a reasoning (plan) reply before the length penalty starts
    tau_input: int = setting(30, "> 0")  # words of an input reply before the length penalty starts
    tau_reflect: int = setting(100, "> 0")  # words of a reflect reply before the length penalty starts
    stop_threshold: float = setting(0.7, "[0, 1)")  # b_term: done and s > this -> +1
    continue_threshold: float = setting(0.3, "[0, 1]")  # b_term: not done and s < this -> +1
    timeout_penalty: float = setting(-1.0, "<= 0")  # reward of the step that hits T_max
    # reward of a reflect that goes on (NO, or no decision parsed) when the hypothesis it leaves scores above
    # stop_threshold: a right stop missed, charged as b_term charges a premature one. 0: the paper's (its b_term
    # pays such a NO 0). For a critic whose score is verified (critic.kind=scripted or mutants), where the threshold is
    # passed exactly when the stop is right; with a noisy critic it would teach stopping on noise
    late_stop_penalty: float = setting(0.0, "<= 0 (0: none)")
    t_max: int = setting("${env.max_steps}", "> 0")  # T_max in lambda_h / (2 T_max): env.max_steps
    info_budget: float = setting(1.0, ">= 0")  # aac_potential: the most an episode's plans earn for informativeness, in all
    # leave out every term that reads the critic's hypothesis score (the hypothesis term and the stop
    # bonus/penalty; the critic is not asked): for a critic whose report card is at chance, whose
    # scores would only add noise to the terms the sandbox verifies (format, calls, coverage
    # informativeness under critic.informativeness=coverage, length, timeout). Off in the paper's setting
    mask_hypothesis: bool = False
    # false: a format penalty (-p_parse: a reply that did not parse, an input whose call failed) counts in
    # its own turn's step advantage only, not in the episode return the episode advantage is computed
    # from: a reply's format is credited to that reply, and an episode is not paid for ending before its
    # next error (which, summed, pays stopping early). Needs advantage=turn. The paper's setting: true
    format_in_return: bool = True
    # final: one advantage per episode from its final reward | episode: from its return | turn: the episode advantage plus each turn's step advantage (docs/method.md)
    advantage: Advantage = Advantage.turn
    w_step: float = setting(1.0, ">= 0")  # weight of the per-phase step advantage (turn)
    eps: float = setting(1e-6, "> 0")  # added to the group's std in advantage normalisation


@rule("rewards.late_stop_penalty", "critic.kind")
def _late_stop_needs_verified_score(cfg: TrainConfig) -> None:
    """rewards.late_stop_penalty != 0 needs critic.kind=scripted or mutants (a verified hypothesis score)."""
    if cfg.rewards.late_stop_penalty and cfg.critic.kind == "llm":
        raise ConfigError(f"rewards.late_stop_penalty={cfg.rewards.late_stop_penalty!r} needs a verified hypothesis "
                          f"score (critic.kind=scripted or mutants, got {cfg.critic.kind}): a judged one would pay a NO for a worse "
                          "hypothesis (docs/method.md §7.5)")


@rule("rewards.late_stop_penalty", "rewards.schedule", "rewards.mask_hypothesis")
def _late_stop_needs_hypothesis(cfg: TrainConfig) -> None:
    """rewards.late_stop_penalty != 0 needs a schedule that scores reflect turns (not final, not
    rewards.mask_hypothesis=true)."""
    if cfg.rewards.late_stop_penalty and (cfg.rewards.schedule == "final" or cfg.rewards.mask_hypothesis):
        raise ConfigError(f"rewards.late_stop_penalty={cfg.rewards.late_stop_penalty!r} charges a reflect turn by its "
                          "hypothesis score: rewards.schedule=final and rewards.mask_hypothesis=true score none")


@rule("rewards.mask_hypothesis", "rewards.schedule")
def _mask_needs_terms(cfg: TrainConfig) -> None:
    """rewards.mask_hypothesis=true needs a schedule other than final."""
    if cfg.rewards.mask_hypothesis and cfg.rewards.schedule == "final":
        raise ConfigError("rewards.mask_hypothesis=true leaves rewards.schedule=final only its timeout penalty: "
                          "pick another schedule or rewards.mask_hypothesis=false")


@rule("rewards.format_in_return", "rewards.advantage", "rewards.schedule")
def _format_credit(cfg: TrainConfig) -> None:
    """rewards.format_in_return=false needs rewards.advantage=turn and a schedule other than final."""
    if not cfg.rewards.format_in_return and cfg.rewards.advantage != "turn":
        raise ConfigError(f"rewards.format_in_return=false credits format penalties by the step advantage alone: "
                          f"it needs rewards.advantage=turn (got {cfg.rewards.advantage})")
    if not cfg.rewards.format_in_return and cfg.rewards.schedule == "final":
        raise ConfigError("rewards.format_in_return=false: rewards.schedule=final pays no format penalty to credit")


@rule("critic.kind", "critic.mode")
def _mutants_are_privileged(cfg: TrainConfig) -> None:
    """critic.kind=mutants needs critic.mode=privileged (the mutants are the row's privileged side)."""
    if cfg.critic.kind == "mutants" and cfg.critic.mode != "privileged":
        raise ConfigError("critic.kind=mutants reads the row's mutants, its privileged side: critic.mode=symmetric "
                          "(SYM-INFO) goes with critic.kind=scripted or llm")


@rule("rewards.schedule", "critic.mode")
def _sym_info_needs_symmetric(cfg: TrainConfig) -> None:
    """rewards.schedule=sym_info needs critic.mode=symmetric."""
    if cfg.rewards.schedule == "sym_info" and cfg.critic.mode != "symmetric":
        raise ConfigError("rewards.schedule=sym_info needs critic.mode=symmetric (use rewards=sym_info)")


@dataclass
class RolloutConfig:
    # the actor's inference backend: vllm | hf (transformers, any model) | openai (an endpoint, rollout.openai)
    engine: EngineKind = EngineKind.vllm
    functions_per_step: int = setting(8, "> 0")  # functions (instances) per training step
    group_size: int = setting(8, "> 0")  # episodes per function in a step (the GRPO group)
    temperature: float = setting(1.0, ">= 0")  # the actor's sampling temperature
    top_p: float = setting(1.0, "(0, 1]")  # the actor's nucleus sampling mass (1: off)
    max_tokens_per_turn: int = setting(1024, "> 0")  # token budget of each actor reply
    # per-phase budgets replacing max_tokens_per_turn, e.g. {input: 24, reflect: 64}: an input needs a
    # few tokens, and every generated token costs rollout and update time
    max_tokens_per_phase: dict[str, int] = field(default_factory=dict)
    # per-phase stop strings kept in the reply, e.g. {input: ["\n"]}: the engine ends a reply once its
    # answer is written instead of running on to the budget (none by default: paper runs unchanged)
    stop_per_phase: dict[str, list[str]] = field(default_factory=dict)
    # 0: lockstep (rollout, then update); 1: step t+1's rollout runs while step t updates (one adapter
    # version behind, corrected by the truncated importance weight; docs/method.md §13). GPU recipes: 1
    max_off_policy_steps: int = setting(0, "one of 0, 1")
    # judge each episode as it ends, while the worker's others still play (one critic thread per worker)
    critic_overlap: bool = False
    num_workers: int = setting(1, "> 0")  # rollout workers (each holds a sandbox pool and a critic)
    # episodes in flight per worker (continuous batching: a finished one's slot is refilled at once);
    # None: all of the worker's episodes at once. Lower it to bound the engine's batch (KV cache)
    max_live_episodes: Optional[int] = setting(None, "> 0")
    # GPUs Ray gives each engine replica (per tensor-parallel shard; qwen3_8b: 1)
    num_gpus: float = setting(0.0, ">= 0")
    # engine replicas of the actor's model, each a Ray actor with GPUs of its own: a new episode goes to
    # the replica with the fewest outstanding tokens and its turns stay there (its prefix cache), every
    # adapter version is loaded into every replica before the next rollout, and a critic on the actor's
    # model uses them too. More replicas: more generation throughput, for GPUs the learner leaves idle
    num_engines: int = setting(1, "> 0")
    # vLLM tensor parallelism: each replica's weights sharded over this many GPUs (a model larger than one
    # GPU), all held by the replica's one Ray actor, on one node; costs an all-reduce per layer
    tensor_parallel_size: int = setting(1, "> 0")
    placement: Placement = Placement.ray  # ray: engine, learner, workers in Ray actors | local: one process
    # OpenMP/torch threads of each Ray actor (the learner's update) and of each vLLM CPU engine (in its
    # process; a worker process of its own binds the first N cores); None: every allowed core. The pieces take turns (generation,
    # critic, update), so each should use every core while it works; left alone, Ray gives a num_cpus=0
    # actor 1 thread and vLLM's auto-bind keeps one core for its engine process (1 of 2 cores here)
    cpu_threads: Optional[int] = setting(None, "> 0")
    # the vLLM engine core and its worker inside the engine's own process (VLLM_ENABLE_V1_MULTIPROCESSING=0)
    # instead of two more processes; None: on for the CPU build (half the start-up CPU, ~10% faster
    # decode steps, no shared-memory polling), off on GPU
    vllm_in_process: Optional[bool] = None
    # vLLM: the share of a GPU's memory its engine takes (0.45 leaves room on a GPU shared with nothing else)
    gpu_memory_utilization: float = setting(0.45, "(0, 1]")
    kv_cache_gb: int = setting(2, "> 0")  # CPU build: VLLM_CPU_KVCACHE_SPACE
    max_loras: int = setting(2, "> 0")  # adapters an engine holds at once
    max_lora_rank: int = setting(16, "> 0")  # largest LoRA rank the engine can load (learner.lora_r must fit)
    # vLLM without CUDA graphs; None: on for the CPU build (which has none), off on GPU, where graphs
    # make decode steps 20-50% faster
    enforce_eager: Optional[bool] = None
    # each turn's seed (aac/rollout/driver.py, turn_seed) handed to vLLM: a replayed rollout samples the
    # same tokens, at the cost of vLLM's per-request sampling path (a seeded request draws from its own
    # generator). None: on for the CPU build (fp32, batch-invariant: replays are exact there), off on GPU,
    # where the batched sampler runs and bf16 batches are not batch-invariant anyway (a replay differs
    # wherever its batches did, seeds or not). The HF engine always seeds its turns
    per_request_seeds: Optional[bool] = None
    # base-only batches (critic, judge) with LoRA off instead of the identity adapter; None: on for
    # the vLLM CPU build (its LoRA ops cost every token of a LoRA batch ~5x), off on GPU
    plain_base_batches: Optional[bool] = None
    # how a vLLM engine serves the actor's LoRA: adapter (vLLM LoRA, one engine for actor and critic;
    # adapter-only sync) | merged (a second engine with LoRA off whose weights are base + LoRA, merged
    # in place at each sync; the critic keeps the base engine). The CPU build's LoRA ops make
    # adapter generation ~10x slower than the base model's (benchmarks/RESULTS.md, Actor generation)
    lora_mode: LoRAMode = LoRAMode.adapter
    openai: OpenAIConfig = field(default_factory=OpenAIConfig)


def _check_phase_budgets(cfg: TrainConfig, key: str) -> None:
    """The token budgets at `key` name phases and are > 0."""
    from omegaconf import OmegaConf

    budgets = OmegaConf.select(cfg, key) or {}
    bad = {k: v for k, v in budgets.items() if k not in PHASE_NAMES or v is None or v <= 0}
    if bad:
        raise ConfigError(f"{key}: {dict(bad)} needs phases of {', '.join(PHASE_NAMES)} with budgets > 0")


@rule("preflight.typical_reply_tokens")
def _typical_replies(cfg: TrainConfig) -> None:
    """preflight.typical_reply_tokens: keys are phases, budgets > 0."""
    _check_phase_budgets(cfg, "preflight.typical_reply_tokens")


def _check_phase_settings(cfg: TrainConfig, section: str) -> None:
    """`SECTION.max_tokens_per_phase` and `SECTION.stop_per_phase` name phases and hold budgets > 0 and
    non-empty stop strings."""
    from omegaconf import OmegaConf

    _check_phase_budgets(cfg, f"{section}.max_tokens_per_phase")
    key = f"{section}.stop_per_phase"
    stops = OmegaConf.select(cfg, key) or {}
    bad = {k: v for k, v in stops.items() if k not in PHASE_NAMES or not v or not all(isinstance(s, str) and s for s in v)}
    if bad:
        raise ConfigError(f"{key}: {dict(bad)} needs phases of {', '.join(PHASE_NAMES)}, each with non-empty strings")


@rule("rollout.max_tokens_per_phase", "rollout.stop_per_phase")
def _rollout_phases(cfg: TrainConfig) -> None:
    """rollout.max_tokens_per_phase and rollout.stop_per_phase: keys are phases (plan, input, reflect, ...),
    budgets > 0, stop strings non-empty."""
    _check_phase_settings(cfg, "rollout")


@rule("rollout.num_engines", "rollout.tensor_parallel_size", "learner.num_workers", "rollout.placement")
def _scaled_pieces_need_ray(cfg: TrainConfig) -> None:
    """rollout.num_engines, rollout.tensor_parallel_size or learner.num_workers > 1 needs rollout.placement=ray."""
    r = cfg.rollout
    scaled = {"rollout.num_engines": r.num_engines, "rollout.tensor_parallel_size": r.tensor_parallel_size,
              "learner.num_workers": cfg.learner.num_workers}
    for key, value in scaled.items():
        if value > 1 and r.placement != "ray":
            raise ConfigError(f"{key}={value} places pieces in Ray actors: it needs rollout.placement=ray")


@rule("rollout.num_engines", "rollout.engine")
def _replicas_need_a_served_model(cfg: TrainConfig) -> None:
    """rollout.num_engines > 1 needs an engine this run serves (not rollout.engine=openai)."""
    if cfg.rollout.num_engines > 1 and cfg.rollout.engine == "openai":
        raise ConfigError("rollout.num_engines > 1 replicates a model this run serves; an endpoint "
                          "(rollout.engine=openai) is one engine: scale it behind its URL")


@rule("rollout.tensor_parallel_size", "rollout.engine", "rollout.num_gpus")
def _tensor_parallel(cfg: TrainConfig) -> None:
    """rollout.tensor_parallel_size > 1 needs rollout.engine=vllm and rollout.num_gpus=1 (per shard)."""
    r = cfg.rollout
    if r.tensor_parallel_size > 1 and r.engine != "vllm":
        raise ConfigError(f"rollout.tensor_parallel_size={r.tensor_parallel_size} needs rollout.engine=vllm "
                          f"(got {r.engine})")
    if r.tensor_parallel_size > 1 and r.num_gpus != 1:
        raise ConfigError(f"rollout.tensor_parallel_size={r.tensor_parallel_size} shards the model over whole "
                          f"GPUs: rollout.num_gpus (per shard) must be 1, got {r.num_gpus}")


@rule("rollout.lora_mode", "rollout.engine")
def _merged_needs_vllm(cfg: TrainConfig) -> None:
    """rollout.lora_mode=merged needs rollout.engine=vllm."""
    if cfg.rollout.lora_mode == "merged" and cfg.rollout.engine != "vllm":
        raise ConfigError(f"rollout.lora_mode=merged needs rollout.engine=vllm, got {cfg.rollout.engine}")


@dataclass
class LearnerConfig:
    # deepspeed | torch (plain torch optimizer; the one that runs several ranks)
    backend: LearnerBackend = LearnerBackend.deepspeed
    num_gpus: float = setting(0.0, ">= 0")  # GPUs Ray gives each learner rank; it trains on the one it is given
    # learner ranks: Ray actors forming one torch.distributed group (gloo on CPU, NCCL on GPU). Each
    # mini-batch's samples are split across them by token count and their gradients summed: the same
    # update as one rank's, in less time; rank 0 writes the adapter. backend=torch only for now
    num_workers: int = setting(1, "> 0")
    # DeepSpeed ZeRO stage: 0, 1 or 2 (stage 3 would shard the frozen base the reference pass reads)
    zero_stage: int = setting(0, "one of 0, 1, 2")
    lora_r: int = setting(16, "> 0")  # LoRA rank
    lora_alpha: int = setting(16, "> 0")  # LoRA scaling numerator (scale = lora_alpha / lora_r)
    lora_dropout: float = setting(0.0, "[0, 1)")  # dropout on the LoRA input
    target_modules: Any = "all-linear"  # the modules LoRA wraps: "all-linear" or a list of module-name suffixes
    lr: float = setting(1e-6, "> 0")  # AdamW learning rate (the paper's: 1e-6)
    betas: list[float] = field(default_factory=lambda: [0.9, 0.999])  # AdamW betas
    weight_decay: float = setting(0.01, ">= 0")  # AdamW weight decay
    max_grad_norm: float = setting(1.0, ">= 0 (0: no clipping)")  # gradient clipping norm
    clip_eps: float = setting(0.2, "> 0")  # PPO ratio clip: the ratio is kept in [1 - clip_eps, 1 + clip_eps]
    # weight of the KL penalty to the base model (the reference pass: adapter off)
    kl_coef: float = setting(0.001, ">= 0")
    epochs: int = setting(5, "> 0")  # passes over the data when max_steps is null (steps = epochs x steps per epoch)
    micro_batch_tokens: int = setting(4096, "> 0")  # token budget per micro-batch: lower it to save memory
    # a peft adapter folder (e.g. aac.sft's) to start from instead of B = 0
    init_adapter: Optional[str] = setting(None, "exists")
    gradient_checkpointing: bool = False  # saves activation memory, costs ~30% speed
    # with gradient_checkpointing, only the first N decoder layers recompute (null: all): the rest keep
    # their activations, so N trades memory for speed a layer at a time
    checkpoint_layers: Optional[int] = setting(None, ">= 0 (0: none)")
    # SwiGLU MLPs' activation and down projection as one autograd op that keeps only the gate and up
    # projections (the rest recomputed elementwise in backward): ~24% less activation memory, same
    # gradients (aac.learner.fused_mlp); needs lora_dropout=0
    fused_mlp: bool = False
    dtype: DType = DType.float32  # the learner's weights and compute dtype
    # truncated importance weight min(pi_learner / pi_engine, tis_cap) on each token's loss, for the
    # engine's numeric gap (bf16 kernels); null: weight 1 (the statistics are still logged)
    tis_cap: Optional[float] = setting(2.0, "> 0")
    ppo_minibatches: int = setting(1, "> 0")  # optimizer steps per rollout batch: > 1 makes the clip a trust region
    # a micro-batch's samples as one row of unique tokens: the prompt prefixes the turns of a group
    # share are computed once (same loss and gradients; micro_batch_tokens then counts unique tokens)
    prefix_sharing: bool = True
    # log-probs from the lm_head this many positions at a time, each chunk's float32 logits recomputed
    # in backward: memory of one chunk instead of [tokens x vocab]; 0: all at once (no recompute)
    logprob_chunk: int = setting(256, ">= 0 (0: all at once)")
    # CPU only: glibc's mmap threshold fixed at this many KiB, so freed activations go back to the system
    # (SmolLM2 ckpt update at 4096 tokens: peak RSS 4.66 -> 1.39 GB) at the cost of fresh zeroed pages for
    # every new block (the same update ran ~1.9x longer, at a different load: benchmarks/RESULTS.md);
    # 0: glibc's dynamic threshold (faster, a fragmented heap). 1024 with gradient_checkpointing and
    # huge_pages for memory (1.38 GB at 4096, most of the fault cost gone)
    malloc_mmap_threshold_kb: int = setting(0, f"[0, {MAX_MMAP_THRESHOLD_KB}] (0: glibc's dynamic threshold)")
    # CPU only: tensors of >= 2 MB on transparent huge pages (torch's THP_MEM_ALLOC_ENABLE), so a mapped
    # block faults in 2 MB at a time, not 4 KB: read when the learner's process starts, so its launcher
    # sets it (`aac.learner.allocator.learner_env`)
    huge_pages: bool = False
    # CPU only: glibc | jemalloc (the libjemalloc Ray ships, preloaded into the learner's process with
    # its page purging off): freed activations are reused without a fragmented heap or fresh pages
    # (SmolLM2 ckpt update at 4096 tokens: 1.50 GB peak, 0.64x the padded path's time: RESULTS.md)
    allocator: Allocator = Allocator.glibc


@rule("learner.lora_r", "rollout.max_lora_rank")
def _rank_fits_the_engine(cfg: TrainConfig) -> None:
    """learner.lora_r <= rollout.max_lora_rank: the engine must be able to load the adapter."""
    if cfg.learner.lora_r > cfg.rollout.max_lora_rank:
        raise ConfigError(f"learner.lora_r={cfg.learner.lora_r} exceeds rollout.max_lora_rank="
                          f"{cfg.rollout.max_lora_rank}: the engine could not load the adapter")


@rule("learner.num_workers", "learner.backend")
def _ranks_need_torch(cfg: TrainConfig) -> None:
    """learner.num_workers > 1 needs learner.backend=torch."""
    if cfg.learner.num_workers > 1 and cfg.learner.backend != "torch":
        raise ConfigError(f"learner.num_workers={cfg.learner.num_workers} needs learner.backend=torch (DeepSpeed runs "
                          f"one rank; got {cfg.learner.backend})")


@dataclass
class EvalConfig:
    # interactive: the actor queries the function (the PAU protocol) | in_context: it describes from given examples only
    mode: EvalMode = EvalMode.interactive
    data: str = "${env.data}"  # default: the data training reads (its test split)
    split: str = "test"  # the split of eval.data evaluated
    limit: Optional[int] = setting(None, "> 0")  # first N instances of the split (null: all)
    # a peft adapter folder, a training checkpoint (step_N/), or a run's out_dir (its newest intact checkpoint)
    checkpoint: Optional[str] = None
    # a training run's folder whose protocol the eval plays (model, prompts, per-turn token budgets and stop
    # strings, from its saved config: aac/eval/run_protocol.py), e.g. the base model under a tuned run's;
    # None: the run that `checkpoint` lies in, if any. Keys set on the command line win (warned)
    protocol_from: Optional[str] = None
    engine: Optional[EngineKind] = None  # None: rollout.engine
    # none: the ordinary actor (DISTILL's teacher is any model played so) | answer_aware: the gold
    # description and source in every prompt (the CodeARC-SFT teacher, aac/env/teacher.py); its
    # records say so, and its scores are an oracle's, not a benchmark result
    teacher: Teacher = Teacher.none
    history_window: int = setting(10, "> 0")  # observations shown per prompt in eval episodes (the release: 10)
    max_calls: int = setting(25, "> 0")  # paper: 25 function calls (the release used 20 cycles)
    call_timeout_s: float = setting(30.0, "> 0")  # seconds per function call in eval episodes (the release: 30)
    codematch_timeout_s: float = setting(0.5, "> 0")  # seconds per test call when code match runs the coder's code
    # web: one virtual-execution call of a coder's service-call function (a fresh sandbox child's first
    # call loads the transport, the service and the HTTP clients: ~0.1 s)
    service_call_timeout_s: float = setting(5.0, "> 0")
    max_tokens_per_turn: int = setting(1024, "> 0")  # token budget of each actor reply in eval episodes
    max_tokens_per_phase: dict[str, int] = field(default_factory=dict)  # as rollout.max_tokens_per_phase
    stop_per_phase: dict[str, list[str]] = field(default_factory=dict)  # as rollout.stop_per_phase
    temperature: float = setting(0.0, ">= 0")  # greedy by default (docs/method.md §8)
    batch_size: int = setting(16, "> 0")  # episodes in flight: more is faster until the engine saturates
    judge_model: Optional[str] = None  # None: the actor's base model (sharing its engine)
    coder_model: Optional[str] = None  # None: the actor's base model
    judge_engine: Optional[EngineKind] = None  # engine kind of judge and coder; None: the actor's
    judge_max_tokens: int = setting(256, "> 0")  # token budget of a judge's reply
    judge_scoring: CriticScoring = CriticScoring.generate  # logprob: the expected 1-5 from one forward pass
    coder_max_tokens: int = setting(512, "> 0")  # token budget of the coder's program
    # also code-match from the gold description: the per-instance upper bound (web: always, beside the
    # intent-only row)
    gold: bool = False
    # false: no coder and no code match (scores hold the judge's rating and informative calls only): the
    # coder's decode is most of the scoring time, and make demo's closing table does not show it
    code_match: bool = True
    score: bool = True  # false: only play the episodes (score later by rerunning with true)
    name: Optional[str] = None  # label of the run in reports and comparisons
    bootstrap_resamples: int = setting(10000, "> 0")  # bootstrap resamples behind each reported confidence interval


@rule("eval.max_tokens_per_phase", "eval.stop_per_phase")
def _eval_phases(cfg: TrainConfig) -> None:
    """eval.max_tokens_per_phase and eval.stop_per_phase: as rollout's."""
    _check_phase_settings(cfg, "eval")


@rule("eval.gold", "eval.code_match")
def _gold_needs_code_match(cfg: TrainConfig) -> None:
    """eval.gold=true needs eval.code_match=true."""
    if cfg.eval.gold and not cfg.eval.code_match:
        raise ConfigError("eval.gold=true code-matches the gold description: it needs eval.code_match=true")


@dataclass
class SFTConfig:
    """`python -m aac.sft`: supervised warm start of the actor on the episodes of `aac.eval` runs."""

    data: str = ""  # eval run directories (episodes.jsonl + scores.jsonl), comma-separated
    min_score: float = setting(4.0, "[0, 5]")  # keep episodes whose judged description score (1-5) is >= this
    epochs: int = setting(2, "> 0")  # passes over the kept turns
    batch_turns: int = setting(8, "> 0")  # turns (chat samples) per optimizer step
    lr: Optional[float] = setting(None, "> 0")  # None: learner.lr (the paper's RL lr, 1e-6, is far too small for SFT)


@dataclass
class DescribeConfig:
    """`python -m aac.describe`: the actor (a checkpoint's, else the base model) on functions or services of
    the user's own, one Markdown file per function (aac/describe.py)."""

    # what to describe: module:PKG.func | module:PKG.Class (a stateful object) | module:PKG (its public functions
    # and classes) | openapi:SPEC (one service) | jsonl:FILE (PAU rows, or the builder's {code, entry_point}
    # records); "" is refused
    target: str = ""


@dataclass
class PreflightConfig:
    """`python -m aac.preflight`: a few real steps of a recipe, measured, and its full run projected."""

    steps: int = setting(3, "> 0")  # training steps run and timed (the first includes the engines' warm-up)
    # a batch whose every advantage is 0 (random replies all score alike: model=qwen3_8b_random) would skip
    # its update, so the learner is never timed: true gives each episode of such a batch a synthetic
    # advantage (+1, -1 alternating within its group) so the update runs at learner.micro_batch_tokens and
    # its time and peak memory are measured (aac/preflight/synthetic.py). Preflight only; false: as aac.train
    synthetic_advantages: bool = True
    eval: bool = True  # also time one held-out evaluation when the recipe evaluates (eval_every > 0)
    json: Optional[str] = None  # where the measurements go; None: OUT_DIR/preflight.json
    # typical: episodes capped at typical_turns turns and each phase's reply at typical_reply_tokens, the
    # flagship's typical lengths (docs/gpu.md), so a model whose replies never end (model=qwen3_8b_random: every
    # turn runs to its token cap, every episode to env.max_steps) measures a typical step in minutes, and the
    # recipe's worst case (its own caps) is scaled from it beside it | recipe: the recipe's caps as they are
    shape: PreflightShape = PreflightShape.typical
    typical_turns: int = setting(12, "> 0")  # four cycles (plan, input, reflect)
    # an 8B model's plan of 50-80 words, one input line, a summary of 20-50 words (benchmarks/update_tokens.py)
    typical_reply_tokens: dict[str, int] = field(default_factory=lambda: {"reasoning": 90, "input": 20, "reflect": 60})


@dataclass
class LoggingConfig:
    wandb_mode: WandbMode = WandbMode.offline  # offline: wandb files in the run dir | online | disabled
    project: str = "aac"  # the wandb project
    run_name: Optional[str] = None  # the wandb run's name (null: the run dir's name)
    progress: bool = True  # a progress bar on the terminal
    # episodes of each training step kept in OUT/episodes/step_NNNNNN.jsonl.gz (docs/viewer.md): a seeded
    # sample of this many; 0: none kept; -1: every episode of the step
    episodes_per_step: int = setting(4, ">= -1 (0: none, -1: all)")
    # with wandb on, a Table of the kept episodes every this many steps (0: never)
    table_every: int = setting(10, ">= 0 (0: never)")


@dataclass
class RayConfig:
    # the Ray cluster a run joins: its head's HOST:PORT (`ray start --head` prints it) or "auto"; null:
    # $RAY_ADDRESS when set, else a private local Ray started for the run (and stopped with it)
    address: Optional[str] = None


@dataclass
class WatchdogConfig:
    # a phase of a step (the rollout, the update, the adapter sync, ...) that has waited on the run's pieces
    # longer than stall_factor x its slowest so far, and longer than min_stall_s, is logged with the pieces
    # that do not answer and the calls it waits on; at twice that those pieces are treated as dead: killed,
    # rebuilt and the phase retried (rollout.placement=ray; aac/training/watchdog.py). Lower: a hung piece
    # costs less time, a slow phase risks being taken for a hung one
    stall_factor: float = setting(5.0, "> 1")
    min_stall_s: float = setting(600.0, "> 0")  # seconds no phase is called stalled within, however fast its past


@rule("ray.address", "rollout.placement")
def _cluster_needs_ray(cfg: TrainConfig) -> None:
    """ray.address needs rollout.placement=ray."""
    from omegaconf import OmegaConf

    if OmegaConf.select(cfg, "ray.address") and cfg.rollout.placement != "ray":
        raise ConfigError("ray.address joins a Ray cluster: it needs rollout.placement=ray")


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
    describe: DescribeConfig = field(default_factory=DescribeConfig)
    preflight: PreflightConfig = field(default_factory=PreflightConfig)
    logging: LoggingConfig = field(default_factory=LoggingConfig)
    ray: RayConfig = field(default_factory=RayConfig)
    watchdog: WatchdogConfig = field(default_factory=WatchdogConfig)
    seed: int = setting(0, ">= 0")  # seeds data order, sampling and the LoRA's init
    max_steps: Optional[int] = setting(None, "> 0 (null: learner.epochs over the data)")  # optimizer steps; 0 is no sentinel
    # wall-clock seconds for training, from the Trainer's start (its pieces' start-up included); null: none.
    # Checked between steps: once time_budget_min_steps steps ran, the run ends (its last step checkpointed) before a
    # step that, as slow as its slowest so far, would end past it. make demo's recipe sets it (docs/demo.md)
    time_budget_s: Optional[float] = setting(None, "> 0")
    time_budget_min_steps: int = setting(3, "> 0")  # steps a time budget always lets run (max_steps still caps them)
    out_dir: str = "runs/${now:%Y%m%d-%H%M%S}"  # the run dir: metrics, adapters, checkpoints, the composed config
    save_every: int = setting(10, ">= 0 (0: never)")  # 0: no periodic checkpoint (the last step's is always written)
    eval_every: int = setting(0, ">= 0 (0: never)")  # 0: no periodic evaluation
    eval_limit: int = setting(8, "> 0")  # held-out instances of each periodic evaluation (eval_every)
    resume: Any = False  # false | true (the newest intact checkpoint in out_dir) | PATH
    # newest checkpoints kept in out_dir/checkpoints; at least 2 stay whatever this says: the one before the
    # newest is the fallback when the newest is damaged (aac/checkpoint.py)
    keep_checkpoints: int = setting(3, "> 0")
    sync_adapter: bool = True  # load each new adapter into the engine (off only to test the check)
    check_sync: bool = True  # compare engine vs learner log-probs on a probe after a sync (sync_check_every)
    # the weights check runs after the syncs of adapter v1 and of every version divisible by this (versions, which
    # tell a stale adapter, are checked every step). Higher: less time in each step's serial tail (two learner
    # passes and one engine pass over the probe), a wrong-weights engine found later (a systematic one: at step 1)
    sync_check_every: int = setting(10, "> 0")
    # the bound of the sync check's weights part: a mean |logp_engine - logp_learner| per probe token above
    # it fails (staleness is caught by adapter versions, whatever the lr: aac/training/sync.py). null: 0.05
    # when engine and learner both run float32, else 0.5, above the gap a correct bf16 engine shows
    # (benchmarks/RESULTS.md, "PPO ratio and the sync tolerance")
    sync_tolerance: Optional[float] = setting(None, "> 0")
    # generated tokens the sync check scores (turns of the step, longest first)
    sync_probe_tokens: int = setting(128, "> 0")
    keep_adapters: int = setting(2, "> 0")  # newest adapters/vN folders kept (checkpoints hold their own copies)
    # pieces (engines, learner, rollout workers) rebuilt after their process died, in all, before the run
    # stops with a checkpoint of its last complete step (rollout.placement=ray; aac/training/supervisor.py)
    max_actor_restarts: int = setting(10, ">= 0 (0: never)")
    recipe_name: str = "none"  # the recipe's name (set by each recipe), logged with the run


@rule("resume")
def _resume_names_a_run(cfg: TrainConfig) -> None:
    """resume=PATH names a run dir or checkpoint that exists (resume=true goes on in out_dir)."""
    resume = str(cfg.resume)
    if resume.lower() not in ("true", "false", "none", "") and not Path(resume).expanduser().exists():
        raise ConfigError(f"resume={resume}: no such run dir or checkpoint (resume=true goes on in out_dir)")


# ---------------------------------------------------------------- registration with Hydra


def resource_dir(name: str) -> Path:
    """`conf/` or `recipes/`, reached through `aac/_data/` so an installed wheel carries them."""
    path = Path(__file__).resolve().parent / "_data" / name
    if not path.is_dir():
        raise FileNotFoundError(f"aac: the {name}/ config folder is missing at {path}")
    return path


@functools.cache
def register_configs() -> None:
    """Store the schema and every recipe in Hydra's ConfigStore, once per process (a third of a compose's time).

    Recipes live in the top-level `recipes/` folder but are selected as the config group
    `recipe` (`+recipe=NAME`), so they are registered here rather than found on disk.
    """
    from hydra.core.config_store import ConfigStore
    from omegaconf import OmegaConf

    _register_resolvers()
    cs = ConfigStore.instance()
    cs.store(name="base_config", node=TrainConfig)
    for path in sorted(resource_dir("recipes").glob("*.yaml")):
        node = OmegaConf.load(path)
        cs.store(group="recipe", name=path.stem, node=node, package="_global_")


def check_literals(literals: Sequence[str]) -> tuple[str, ...]:
    """`literals` as an input alphabet: distinct Python literals (what a call's tuple may hold)."""
    from aac.sandbox.values import InputParseError, parse_literal

    out = tuple(str(lit) for lit in literals)
    if not out or len(set(out)) != len(out):
        raise ValueError(f"env.input_literals must be distinct and non-empty, got {list(out)}")
    for lit in out:
        try:
            parse_literal(lit)  # the parser every input the actor writes goes through
        except InputParseError:
            raise ValueError(f"env.input_literals: {lit!r} is not a Python literal") from None
    return out


def validate(cfg: TrainConfig) -> None:
    """Every setting's range, then every cross-key rule; the first broken one as a one-line `ConfigError`."""
    _register_resolvers()
    check_settings(cfg, TrainConfig)


def compose(*overrides: str, config_name: str = "config") -> Any:
    """The composed, validated config for these overrides (for notebooks and tests)."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    register_configs()
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(str(resource_dir("conf")), version_base=None):
            cfg = hydra_compose(config_name, overrides=list(overrides))
    except Exception as e:
        raise (named_error(e) or e) from None
    validate(cfg)
    return cfg
