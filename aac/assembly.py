"""The one place that builds a run's pieces from the composed config: `build_run(cfg) -> Run`.

`aac.train`, its held-out evaluation and `aac.eval` build through here (`aac.sft` takes its learner
from `build_learner`), and each piece gets only its own config section plus the collaborators built
for it (torchtune's recipe `setup()` is the model). So a setting either reaches behaviour or fails
here; no piece reads a sibling's section or builds its own collaborator.

- engines: `aac.placement.EngineSet` (shared per model and backend; under Ray each in its own actor);
- the critic's engine: `critic_engine`; the critic itself where its worker lives (`PlacedRolloutWorker`);
- the learner (`build_learner`), in a Ray actor that asks for `learner.num_gpus`, or here;
- rollout workers, each with its own sandbox pool and critic, built in the worker's process;
- the driver's sandbox pool and the scorers (judge, code match, informative calls), on first use;
- the protocols of training and of held-out episodes;
- a critic alone in a process that plays no actor of ours (`standalone_critic`: SkyRL's env workers).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Optional, Protocol, cast

from aac.config import (
    ConfigError,
    CriticConfig,
    EnvConfig,
    EvalConfig,
    LearnerConfig,
    ModelConfig,
    RewardConfig,
    RolloutConfig,
    TrainConfig,
)
from aac.env.domains import open_pool
from aac.env.protocol import ProtocolConfig, sandbox_caller
from aac.placement import (
    EngineSet,
    LearnerRanks,
    Placed,
    check_gpus,
    cluster_gpus,
    critic_engine,
    gpu_asks,
    placement_table,
    start_ray,
)
from aac.rollout.workers import RolloutWorker

if TYPE_CHECKING:
    from aac.critic import Critic
    from aac.critic.coverage import CoverageInformativeness
    from aac.data.mutants import KillRunner
    from aac.engines import Engine
    from aac.learner import LearnerLike
    from aac.sandbox import SandboxPool
    from aac.scorers.codematch import CodeMatcher
    from aac.scorers.judge import Judge, LogprobJudge
    from aac.scorers.servicecall import ServiceCallMatcher

    # typing only (importing the learner costs torch and peft)
    class LearnerHandle(LearnerLike, Protocol):
        """The run's learner as the loop calls it: the learner's methods (`LearnerLike`, each call waiting for
        its answer wherever the learner runs) and its placement's (`Placed`, or `LearnerRanks` for several ranks)."""

        name: str

        def alive(self) -> bool: ...

        def rebuild(self) -> None: ...

        def kill(self) -> None: ...

        def close(self, method: str = "close") -> None: ...

        def members(self) -> list[Placed[Any]]: ...


log = logging.getLogger("aac")


def training_protocol(env: EnvConfig) -> ProtocolConfig:
    """Training episodes: `env.history_window`, `env.max_steps` (T_max), `env.max_calls`."""
    protocol = ProtocolConfig.from_env(env)
    if protocol.constrained_format:
        log.info("env.constrained_format: every turn is decoded inside its phase's grammar (aac/env/grammar.py)")
    return protocol


def eval_protocol(ev: EvalConfig, env: EnvConfig) -> ProtocolConfig:
    """Held-out episodes, in training or in `aac.eval`: the PAU setting (`eval.history_window`, a budget
    of `eval.max_calls` calls), with the environment's prompt and input bounds."""
    return ProtocolConfig.from_eval(ev, env)


class PlacedRolloutWorker(RolloutWorker):
    """A rollout worker whose sandbox pool and critic are built where it is placed: Ray ships config
    sections and engine handles to the worker's process, not processes or pipes."""

    def __init__(self, rollout: RolloutConfig, env: EnvConfig, critic_section: CriticConfig, rewards: RewardConfig,
                 protocol: ProtocolConfig,
                 actor_engine: Engine, critic_engine: Optional[Engine]):
        from aac.critic import make_critic

        pool = open_pool(env)
        # coverage informativeness runs the function in this worker's sandbox, under the same argument rule
        critic = make_critic(critic_engine, critic_section, stop_threshold=rewards.stop_threshold,
                             caller=sandbox_caller(pool, spread_list=env.spread_list_args))
        super().__init__(rollout, rewards, protocol, actor_engine, pool, critic, spread_list=env.spread_list_args)


def build_learner(cfg: TrainConfig, *, use_ray: bool, learner: Optional[LearnerConfig] = None) -> LearnerHandle:
    """The learner of `cfg.model` with `learner` (default `cfg.learner`), in a Ray actor asking for
    `learner.num_gpus` (its process started with the allocator settings it needs) or here; with
    `learner.num_workers` > 1, that many such actors in one torch.distributed group."""
    from aac.learner import Learner
    from aac.learner.allocator import learner_env
    from aac.models import local_model

    section = learner if learner is not None else cfg.learner
    if section.num_workers > 1:
        if not use_ray:
            raise ConfigError(f"learner.num_workers={section.num_workers} places learner ranks in Ray actors; this "
                              "learner runs in one process (aac.sft): set learner.num_workers=1")
        return cast("LearnerHandle", LearnerRanks(Learner, section, local_model(cfg.model.name), cfg.seed,
                                                num_workers=section.num_workers, name="learner",
                                                num_gpus=section.num_gpus, env=learner_env(section)))
    return cast("LearnerHandle", Placed(Learner, section, local_model(cfg.model.name), cfg.seed, use_ray=use_ray,
                                      name="learner", num_gpus=section.num_gpus, env=learner_env(section)))


@dataclass
class Run:
    """Every piece of a training or eval run. Engines are built on first use (`engines`); the driver's
    sandbox pool and the scorers too. `close()` ends them all."""

    cfg: TrainConfig
    engines: EngineSet
    use_ray: bool
    actor: Optional[Engine] = None  # training: the actor's engine, serving the LoRA
    critic: Optional[Engine] = None  # training: the critic's engine (None: scripted)
    learner: Optional[LearnerHandle] = None
    workers: list[Placed[PlacedRolloutWorker]] = field(default_factory=list)
    _pool: Optional[SandboxPool] = None
    _scorers: Optional[tuple[Judge | LogprobJudge, CodeMatcher]] = None
    _coverage: Optional[CoverageInformativeness] = None
    _mutants: Optional[KillRunner] = None

    @property
    def pool(self) -> SandboxPool:
        """The driver's sandbox pool (eval episodes, code match)."""
        if self._pool is None:
            self._pool = open_pool(self.cfg.env)
        return self._pool

    def scorers(self) -> tuple[Judge | LogprobJudge, CodeMatcher | ServiceCallMatcher]:
        """The judge and the code matcher of `eval.*` (the same for `aac.eval` and held-out eval); the web
        domain's matcher scores service calls (aac/scorers/servicecall.py)."""
        if self._scorers is None:
            from aac.env.domains import get_domain
            from aac.scorers.codematch import CodeMatcher
            from aac.scorers.judge import make_judge
            from aac.scorers.lm import EngineCompleter
            from aac.scorers.servicecall import ServiceCallMatcher

            cfg, e = self.cfg, self.cfg.eval
            kind = e.judge_engine or e.engine or cfg.rollout.engine
            judge = make_judge(self.engines.get(kind, e.judge_model or cfg.model.name), e.judge_scoring,
                               e.judge_max_tokens, subject=get_domain(cfg.env.domain).subject)
            coder = EngineCompleter(self.engines.get(kind, e.coder_model or cfg.model.name), e.coder_max_tokens)
            matcher: CodeMatcher | ServiceCallMatcher = (
                ServiceCallMatcher(coder, self.pool, timeout_s=e.service_call_timeout_s) if cfg.env.domain == "web"
                else CodeMatcher(coder, self.pool, timeout_s=e.codematch_timeout_s, spread_list=cfg.env.spread_list_args))
            self._scorers = judge, matcher
        return self._scorers

    def pieces(self) -> list[Placed[Any]]:
        """Every placed piece: the engine hosts, the learner, the rollout workers."""
        return [*self.engines.hosts(), *(self.learner.members() if self.learner is not None else []), *self.workers]

    def informative_calls(self) -> CoverageInformativeness:
        """The coverage critic's rule on the driver's pool: what counts an eval episode's informative calls
        (aac/eval/informative.py), measured as `critic.informativeness=coverage` measures plans."""
        if self._coverage is None:
            from aac.critic.coverage import CoverageInformativeness

            c = self.cfg.critic
            self._coverage = CoverageInformativeness(sandbox_caller(self.pool, spread_list=self.cfg.env.spread_list_args),
                                                     output_weight=c.coverage_output_weight,
                                                     call_timeout_s=c.coverage_call_timeout_s)
        return self._coverage

    def mutant_kills(self) -> KillRunner:
        """Runs eval episodes' queries on their rows' mutants in the driver's pool, as `critic.kind=mutants` runs
        plans' calls (aac/eval/query_efficiency.py)."""
        if self._mutants is None:
            from aac.data.mutants import KillRunner

            self._mutants = KillRunner(sandbox_caller(self.pool, spread_list=self.cfg.env.spread_list_args),
                                       timeout_s=self.cfg.critic.coverage_call_timeout_s)
        return self._mutants

    def rebuild_dead(self) -> list[str]:
        """Rebuild every piece whose Ray actor died (none in-process); the names of those rebuilt. A
        rebuilt engine takes every rollout worker with it: a worker holds a copy of the engine's proxy."""
        if not self.use_ray:
            return []
        engines = self.engines.hosts()
        rebuilt = [host.name for host in engines if not host.alive()]
        self.engines.rebuild_dead()
        pieces = [*self.workers, *([self.learner] if self.learner is not None else [])]
        engine_rebuilt = bool(rebuilt)
        for piece in pieces:
            alive = piece.alive()
            if alive and engine_rebuilt and piece in self.workers:
                log.warning("%s: rebuilt with the engine whose proxy it holds", piece.name)
                piece.close()  # its pool and critic, before the new worker starts its own
            elif alive:
                continue
            piece.rebuild()
            rebuilt.append(piece.name)
        return rebuilt

    def close(self) -> None:
        for w in self.workers:
            w.close()
        if self._coverage is not None:
            self._coverage.close()
        if self._mutants is not None:
            self._mutants.close()
        if self._pool is not None:
            self._pool.close()
        if self.learner is not None:
            self.learner.kill()
        self.engines.close()


def build_run(cfg: TrainConfig, *, train: bool = True) -> Run:
    """The pieces of a training run (`train`: engines, critic, learner, rollout workers, placed as
    `rollout.placement` says) or of an eval run (engines on first use, in this process)."""
    use_ray = train and cfg.rollout.placement == "ray"
    if train:  # an embedded model (qwen3_8b_random: 16 GB) built, or a hub model downloaded, once, here, before
        from aac.models import local_model  # any piece loads it: each is handed this folder

        log.info("model %s: %s", cfg.model.name, local_model(cfg.model.name))
    if use_ray:
        start_ray(threads=cfg.rollout.cpu_threads, address=cfg.ray.address)
        check_gpus(gpu_asks(cfg), cluster_gpus())
    run = Run(cfg, EngineSet(cfg.model, cfg.rollout, cfg.seed, use_ray=use_ray), use_ray)
    if not train:
        return run
    try:
        r = cfg.rollout
        run.actor = run.engines.actor(lora_rank=cfg.learner.lora_r)
        run.critic = critic_engine(run.engines, cfg.critic)
        if run.critic is not None and run.critic is not run.actor:
            log.info("critic: its own engine (%s serving %s)", cfg.critic.backend or r.engine,
                     cfg.critic.model or cfg.model.name)
        if r.critic_overlap and not use_ray:  # the driver and the critic's thread share in-process engines
            from aac.engines.serialized import shared

            same = run.critic is run.actor
            run.actor = shared(run.actor)
            run.critic = run.actor if same else run.critic and shared(run.critic)
        run.learner = build_learner(cfg, use_ray=use_ray)
        protocol = training_protocol(cfg.env)
        run.workers = [Placed(PlacedRolloutWorker, r, cfg.env, cfg.critic, cfg.rewards, protocol, run.actor, run.critic,
                              use_ray=use_ray, name=f"rollout{i}") for i in range(r.num_workers)]
        if use_ray:  # which piece runs where, as Ray placed them on the cluster's nodes
            log.info("placement:\n  %s", "\n  ".join(placement_table(run.pieces())))
    except BaseException:
        run.close()
        raise
    return run


_PROCESS_ENGINES: list[EngineSet] = []  # a standalone critic's engines: one set per process, built on first use


def standalone_critic(critic: CriticConfig, *, stop_threshold: float, spread_list: bool) -> Critic:
    """A critic for a process that plays no actor of ours (SkyRL's env workers, aac/skyrl/reward_env.py):
    its engine is `critic.backend` serving `critic.model` from this process's own engines (none for
    `critic.kind=scripted` or `mutants`); coverage runs the calls in the process's shared sandbox pool."""
    from aac.critic import make_critic

    engine = None
    if critic.kind == "llm":
        if not _PROCESS_ENGINES:
            _PROCESS_ENGINES.append(EngineSet(ModelConfig(), RolloutConfig(), 0, use_ray=False))
        engine = critic_engine(_PROCESS_ENGINES[0], critic)
    return make_critic(engine, critic, stop_threshold=stop_threshold, caller=sandbox_caller(None, spread_list=spread_list))
