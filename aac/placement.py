"""Where the engines, the learner and the rollout workers live: in Ray actors, or in this process.

The loop calls every piece the same way (`piece.method(...)`), wherever it runs; `submit` and
`gather` let several rollout workers run at once. In-process placement keeps tests and
debugging free of Ray; `ray` placement is the default for real runs.

- `EngineSet`: every engine of a run, built on first use and shared per (kind, model, endpoint): the
  critic, the judge and the coder share the actor's engine (adapter off) exactly when they name the
  same model on the same backend, unless `rollout.lora_mode=merged` gives the actor its own engine.
  Under Ray each engine lives in its own actor, which asks Ray for the GPUs its section names
  (`rollout.num_gpus`, `critic.num_gpus`). It sits here, below `aac.assembly`, because the critic's
  report card (`aac.critic.check`) builds engines too and the critic room must not import the build path.
- `critic_engine`: the engine `critic.backend` / `critic.model` / `critic.openai` select.
"""

from __future__ import annotations

import logging
import os
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Generic, Optional, TypeVar

from aac.config import CriticConfig, ModelConfig, OpenAIConfig, RolloutConfig, TrainConfig
from aac.engines import Engine
from aac.engines.cpu_threads import omp_threads
from aac.engines.remote import QUIET_ENV, quiet_env

log = logging.getLogger("aac")


CLOSE_TIMEOUT_S = 60.0  # a piece's own shutdown (`close`) ends within this, or the piece is killed
RECORD_TRIES = 4  # reads of an actor's record before a missing one is taken as alive (3 s of waits between)
WATCH = "watch"  # the concurrency group of every Ray piece that answers `ping` in a thread of its own


def _dead(actor: object) -> bool:
    """Ray's own word that an actor is gone: its record in the GCS (Ray's actor table) says DEAD, as
    it does within milliseconds of its process exiting or being killed, or once its node is lost.
    Asked of the GCS, not of the actor: a busy actor (inside a minutes-long update or rollout, or
    queued behind one) is alive, however long its calls take. The table is read directly because
    `ray.util.state` needs the dashboard, which a run's private Ray does not start. A loaded GCS can answer
    without a record (an empty one, seen under a load of 8 on 2 cores): asked again, and still none is not
    dead (a call to a dead actor fails anyway, and is retried)."""
    from ray._private import state

    for attempt in range(RECORD_TRIES):
        if attempt:
            time.sleep(0.5 * attempt)
        record = state.actors(actor._actor_id.hex())
        if record:
            return record["State"] == "DEAD"
    log.warning("Ray's actor table has no record of actor %s: taken as alive", actor._actor_id.hex()[:8])
    return False


def _where() -> dict[str, Any]:
    """Where this process runs (called inside a piece's actor)."""
    import ray

    ctx = ray.get_runtime_context()
    return {"ip": ray.util.get_node_ip_address(), "node": ctx.get_node_id(),
            "gpus": [str(g) for g in ctx.get_accelerator_ids().get("GPU", [])], "pid": os.getpid()}


T = TypeVar("T", covariant=True)  # a Placed[Learner] is a Placed[object]


class Placed(Generic[T]):
    """A handle on a `T` built here or in a Ray actor; attribute calls are synchronous. `T` names what it
    holds; `aac.assembly.build_run` hands a piece out typed as the protocol of its calls (`LearnerHandle`)
    so that a caller's `learner.update(...)` resolves to the learner's method.

    Under Ray a piece can die (its process killed, its node lost): `alive()` tells, and `rebuild()`
    builds a new actor from the same arguments (the caller restores its state). Ray's own actor
    restarts stay off: a restarted actor would come back without the state the run gave it, silently."""

    def __init__(self, cls: type[T], *args: Any, use_ray: bool, name: str, num_gpus: float = 0.0,
                 tensor_parallel: int = 1, env: dict[str, str] | None = None, **kwargs: Any):
        self.name = name
        self._ray = use_ray
        self._build = (cls, args, kwargs, num_gpus, tensor_parallel, env)
        self._calls: list[tuple[str, float, Any]] = []  # (method, started, future) sent by this process
        self._obj = self._make()

    def _make(self) -> Any:
        cls, args, kwargs, num_gpus, tensor_parallel, env = self._build
        if not self._ray:
            return cls(*args, **kwargs)
        import ray

        # a piece asking for GPUs gets them to itself: Ray sets its CUDA_VISIBLE_DEVICES; `env`: what
        # its process must start with (e.g. the learner's allocator settings)
        options: dict[str, Any] = {"runtime_env": {"env_vars": env}} if env else {}
        # a tensor-parallel piece holds every shard's GPU, on one node (Ray never splits an actor's
        # GPUs across nodes): it sees them all, and the shard processes it starts inherit them;
        # `max_concurrency`: calls a piece serves at once (an engine host: the critic's beside the actor's)
        actor_cls = ray.remote(num_cpus=0, num_gpus=num_gpus * tensor_parallel, max_restarts=0,
                               max_concurrency=getattr(cls, "max_concurrency", 1), concurrency_groups={WATCH: 1})(cls)
        actor = actor_cls.options(name=None, **options).remote(*args, **kwargs)
        self._pid = actor.__ray_call__.options(concurrency_group=WATCH).remote(_pid)  # known before any hang
        return actor

    def alive(self) -> bool:
        """Whether the piece's actor lives (always, in-process): busy is not dead (`_dead`)."""
        return not (self._ray and _dead(self._obj))

    def pid(self) -> int:
        """The process the piece runs in."""
        if not self._ray:
            return os.getpid()
        import ray

        return ray.get(self.ping())

    def ping(self) -> Any:
        """A future the piece fulfils from a thread of its own, busy or not (its process id): one that does
        not answer is stopped or wedged (`aac.training.watchdog`). Ray pieces only."""
        return self._obj.__ray_call__.options(concurrency_group=WATCH).remote(_pid)

    def known_pid(self) -> Optional[int]:
        """The piece's process id as it reported it once started (None: not yet, or in-process)."""
        import ray

        if not self._ray or not ray.wait([self._pid], timeout=0)[0]:
            return None
        try:
            return ray.get(self._pid)
        except Exception:  # the piece died before it answered
            return None

    def in_flight(self) -> list[tuple[str, float]]:
        """The calls this process sent the piece that have not returned: (method, seconds since sent)."""
        if not self._calls:
            return []
        import ray

        futures = [f for _, _, f in self._calls]
        done = set(ray.wait(futures, num_returns=len(futures), timeout=0)[0])
        self._calls = [c for c in self._calls if c[2] not in done]
        now = time.monotonic()
        return [(method, now - started) for method, started, _ in self._calls]

    def where(self) -> dict[str, Any]:
        """Where the piece runs: node address and id, the GPU ids Ray gave it, its process."""
        if not self._ray:
            return {"ip": "local", "node": "-", "gpus": [], "pid": os.getpid()}
        import ray

        return ray.get(self._obj.__ray_call__.remote(lambda _: _where()))

    def members(self) -> list[Placed[T]]:
        """The actors this piece runs in (one; a group of learner ranks: each)."""
        return [self]

    def rebuild(self) -> None:
        """A new actor from the same arguments, in place of a dead one (whose remains are killed)."""
        self.kill()
        self._calls = []
        self._obj = self._make()

    @property
    def actor(self) -> Any:
        """The Ray actor handle (or the local object), to pass to other pieces."""
        return self._obj

    def submit(self, method: str, *args: Any, **kwargs: Any) -> Any:
        if self._ray:
            future = getattr(self._obj, method).remote(*args, **kwargs)
            if len(self._calls) > 32:
                self.in_flight()  # drop the calls that returned
            self._calls.append((method, time.monotonic(), future))
            return future
        return getattr(self._obj, method)(*args, **kwargs)

    def gather(self, futures: list[object]) -> list[Any]:
        if self._ray:
            import ray

            return ray.get(futures)
        return futures

    def kill(self) -> None:
        """End the Ray actor (its processes and what it holds); no-op in-process."""
        if self._ray:
            import ray

            ray.kill(self._obj)

    def close(self, method: str = "close") -> None:
        """Call `method` (the piece's own shutdown) and wait for it, then end the actor: a vLLM engine's
        own processes go with its `close`, not with the actor. A dead or hung piece is only killed."""
        try:
            if self._ray:
                import ray

                ray.get(self.submit(method), timeout=CLOSE_TIMEOUT_S)
            else:
                getattr(self._obj, method)()
        except Exception as e:  # closing must go on for the other pieces
            log.warning("%s: %s did not finish (%s); killing it", self.name, method, type(e).__name__)
        self.kill()

    def __getattr__(self, method: str):
        if method.startswith("_"):
            raise AttributeError(method)

        def call(*args: Any, **kwargs: Any) -> Any:
            return self.gather([self.submit(method, *args, **kwargs)])[0]

        return call


class LearnerRanks:
    """`learner.num_workers` learners in Ray actors forming one torch.distributed group (`Learner.join`),
    used as one `Placed` learner: an update goes to every rank (each trains on its token share of each
    mini-batch and steps on the summed gradients), as does loading a state; everything else (saving
    the adapter or the state, scoring a probe) to rank 0, whose weights every rank shares. A dead rank
    breaks the group: `rebuild` builds and joins them all anew (the trainer then restores the state)."""

    COLLECTIVE = ("update", "load_state", "load_state_dict")

    def __init__(self, cls: type, *args: Any, num_workers: int, name: str, num_gpus: float = 0.0,
                 env: dict[str, str] | None = None, **kwargs: Any):
        self.name = name
        self.ranks = [Placed(cls, *args, use_ray=True, name=f"{name}#{i}", num_gpus=num_gpus, env=env, **kwargs)
                      for i in range(num_workers)]
        self._join()

    def _join(self) -> None:
        """Rank 0's node hosts the group's rendezvous, on a port free there."""
        import ray

        lead = self.ranks[0]
        address = lead.where()["ip"]
        port = ray.get(lead.actor.__ray_call__.remote(_free_port))
        lead.gather([r.submit("join", address, port, i, len(self.ranks)) for i, r in enumerate(self.ranks)])

    def members(self) -> list[Placed[Any]]:
        return list(self.ranks)

    def alive(self) -> bool:
        """Whether every rank lives (a live one may be blocked in a collective, waiting for a dead one)."""
        return all(r.alive() for r in self.ranks)

    def pid(self) -> int:
        return self.ranks[0].pid()

    def rebuild(self) -> None:
        for r in self.ranks:
            r.rebuild()
        self._join()

    def kill(self) -> None:
        for r in self.ranks:
            r.kill()

    def close(self, method: str = "close") -> None:
        for r in self.ranks:
            r.close(method)

    def __getattr__(self, method: str):
        if method.startswith("_"):
            raise AttributeError(method)
        lead = self.ranks[0]

        def call(*args: Any, **kwargs: Any) -> Any:
            if method in self.COLLECTIVE:
                return _first_error([r.submit(method, *args, **kwargs) for r in self.ranks])[0]
            return getattr(lead, method)(*args, **kwargs)

        return call


def _pid(_: object) -> int:
    return os.getpid()


def _first_error(futures: list[object]) -> list[Any]:
    """The results of `futures`, or the first one's error as soon as it is known: the others of a
    collective would wait for the failed rank until their own timeout."""
    import ray

    pending = list(futures)
    while pending:
        ready, pending = ray.wait(pending, num_returns=1)
        ray.get(ready)  # raises the piece's error
    return ray.get(futures)


def _free_port(_: object) -> int:
    """A port free on the node of the actor this runs in."""
    from aac.learner.backends import free_port

    return free_port()


def start_ray(num_cpus: int | None = None, num_gpus: int | None = None, threads: int | None = None,
              address: str | None = None) -> None:
    """Join the Ray cluster at `address` (`ray.address`; default $RAY_ADDRESS), or start a private local
    Ray with a private temp dir (`num_gpus`: Ray's count, default what it detects; tests declare fake
    GPUs with it). A joined cluster is left running when the run ends; a private one ends with it.
    Every actor runs `threads` OpenMP/torch threads (`rollout.cpu_threads`; None: every core) instead
    of Ray's 1 for an actor with num_cpus=0."""
    import ray

    if ray.is_initialized():
        return
    quiet_env()
    runtime_env = {"env_vars": {**{k: os.environ[k] for k in QUIET_ENV}, "OMP_NUM_THREADS": str(omp_threads(threads))}}
    address = address or os.environ.get("RAY_ADDRESS")
    if address:
        ray.init(address=address, log_to_driver=True, logging_level="WARNING", runtime_env=runtime_env)
        res = ray.cluster_resources()
        log.info("ray: joined the cluster at %s (%d node(s), %g CPUs, %g GPUs)", address,
                 sum(n["Alive"] for n in ray.nodes()), res.get("CPU", 0), res.get("GPU", 0))
        return
    tmp = os.environ.get("RAY_TMPDIR") or tempfile.mkdtemp(prefix="aac-ray-")
    os.environ["RAY_TMPDIR"] = tmp
    ray.init(
        num_cpus=num_cpus or os.cpu_count(),
        num_gpus=num_gpus,
        include_dashboard=False,
        log_to_driver=True,
        logging_level="WARNING",
        _temp_dir=tmp,
        runtime_env=runtime_env,
    )


@dataclass(frozen=True)
class GpuAsk:
    """The GPUs one piece asks Ray for: `gpus` per shard, `shards` of them reserved together on one node."""

    name: str
    gpus: float
    shards: int = 1

    @property
    def total(self) -> float:
        return self.gpus * self.shards


def gpu_asks(cfg: TrainConfig) -> list[GpuAsk]:
    """What a training run's pieces ask for: each engine replica, the critic's own engine, each learner rank."""
    r = cfg.rollout
    asks = [GpuAsk(f"engine replica {i}", r.num_gpus, r.tensor_parallel_size) for i in range(r.num_engines)]
    learners = [GpuAsk(f"learner rank {i}", cfg.learner.num_gpus) for i in range(cfg.learner.num_workers)]
    return [*asks, GpuAsk("critic engine", cfg.critic.num_gpus), *learners]


def check_gpus(asks: list[GpuAsk], node_gpus: list[float]) -> None:
    """One line naming the keys when the asks cannot all be placed on nodes with `node_gpus` GPUs each
    (Ray would otherwise wait for them forever)."""
    from aac.config import ConfigError

    wanted, have = sum(a.total for a in asks), sum(node_gpus)
    if wanted > have:
        parts = ", ".join(f"{a.name} {a.total:g}" for a in asks if a.total)
        raise ConfigError(f"the run asks for {wanted:g} GPUs ({parts}; rollout.num_engines x "
                          f"rollout.tensor_parallel_size x rollout.num_gpus, critic.num_gpus, learner.num_workers x learner.num_gpus) "
                          f"but the Ray cluster has {have:g}")
    packed = max((a for a in asks if a.shards > 1), key=lambda a: a.total, default=None)
    if packed is not None and packed.total > max(node_gpus):
        raise ConfigError(f"rollout.tensor_parallel_size={packed.shards} reserves {packed.total:g} GPUs on one node "
                          f"but the largest node of the Ray cluster has {max(node_gpus):g}")


def cluster_gpus() -> list[float]:
    """The GPUs of each live node of the Ray cluster this process is connected to."""
    import ray

    return [n["Resources"].get("GPU", 0.0) for n in ray.nodes() if n["Alive"]]


def placement_table(pieces: Sequence[Placed[object]]) -> list[str]:
    """One line per piece: the node (address and id) and the GPUs it runs on, and its process."""
    rows = [(p.name, p.where()) for p in pieces]
    return [f"{name:<24} node {w['ip']} ({w['node'][:8]}) GPUs {','.join(w['gpus']) or '-'} pid {w['pid']}"
            for name, w in rows]


class EngineSet:
    """The engines of a run. `model` and `rollout` are the actor's sections; another model (a critic,
    judge or coder) keeps the actor's dtype and context length but not its chat-template overrides."""

    def __init__(self, model: ModelConfig, rollout: RolloutConfig, seed: int, *, use_ray: bool):
        self.model, self.rollout, self.seed, self.use_ray = model, rollout, seed, use_ray
        self._made: dict[tuple, Engine] = {}
        self._placed: dict[tuple, list[Placed[Any]]] = {}  # under Ray: the hosts (replicas) of each engine in `_made`

    def _key(self, kind: str, model: str, openai: OpenAIConfig) -> tuple:
        return (kind, model, openai.base_url if kind == "openai" else None)

    def actor(self, *, kind: Optional[str] = None, lora_rank: Optional[int] = None) -> Engine:
        """The actor's engine (`rollout.engine` unless `kind`), with LoRA slots for `lora_rank`."""
        kind = kind or self.rollout.engine
        return self.get(kind, self.model.name, lora_rank=lora_rank if kind != "openai" else None,
                        num_gpus=self.rollout.num_gpus, tensor_parallel=self.rollout.tensor_parallel_size,
                        replicas=self.rollout.num_engines)

    def get(self, kind: str, model: str, *, openai: Optional[OpenAIConfig] = None, lora_rank: Optional[int] = None,
            num_gpus: float = 0.0, tensor_parallel: int = 1, replicas: int = 1) -> Engine:
        """The engine serving `model` on backend `kind` (an endpoint: `openai`, default `rollout.openai`);
        under Ray, `replicas` copies of it behind one proxy (aac/engines/replicas.py)."""
        explicit = openai is not None
        openai = openai if explicit else self.rollout.openai
        # rollout.lora_mode=merged: the adapter lives in its own engine's weights, apart from the base's
        merged = kind == "vllm" and lora_rank is not None and self.rollout.lora_mode == "merged"
        base = self._key(kind, model, openai)
        lora = lora_rank is not None and kind != "openai"
        key = base + (("merged",) if merged else ("lora",) if lora else ())
        # an engine with LoRA slots also serves the base model (no adapter); one without them serves no adapter
        for have in (key,) if lora else (key, base + ("lora",)):
            if have in self._made:
                return self._made[have]
        model_cfg = self.model if model == self.model.name else ModelConfig(
            name=model, dtype=self.model.dtype, max_model_len=self.model.max_model_len)
        overrides: dict[str, Any] = {"kind": kind}
        if kind != "openai":  # resolved here, once: the engine's host loads this folder and downloads nothing
            from aac.models import local_model

            overrides["model_path"] = local_model(model)
        if kind == "openai":
            # rollout.openai.model names the actor's served model, not another model's
            overrides["openai"] = openai if explicit or model == self.model.name else _with_model(openai, "")
        else:
            overrides["enable_lora"] = lora_rank is not None
            if lora_rank is not None:
                overrides["max_lora_rank"] = max(self.rollout.max_lora_rank, lora_rank)
        if tensor_parallel > 1:
            overrides["tensor_parallel_size"] = tensor_parallel
        log.info("engine: %s serving %s%s%s%s", kind, model, " with the LoRA merged" if merged else "",
                 f" on {num_gpus * tensor_parallel:g} GPU(s)" if num_gpus else "",
                 f" x {replicas} replicas" if replicas > 1 else "")
        if self.use_ray:
            from aac.engines.remote import EngineHost, RemoteEngine
            from aac.engines.replicas import EngineReplicas

            hosts = [Placed(EngineHost, model_cfg, self.rollout, self.seed, use_ray=True,
                            name=f"engine:{model}" + (f"#{i}" if replicas > 1 else ""), num_gpus=num_gpus,
                            tensor_parallel=tensor_parallel, **overrides) for i in range(replicas)]
            self._placed[key] = hosts
            proxies: list[Engine] = [RemoteEngine(h.actor) for h in hosts]
            engine: Engine = proxies[0] if replicas == 1 else EngineReplicas(proxies)
        else:
            from aac.engines import engine_from_config

            engine = engine_from_config(model_cfg, self.rollout, self.seed, **overrides)
        self._made[key] = engine
        return engine

    def rebuild_dead(self) -> list[Engine]:
        """Rebuild every engine whose actor died; the driver's proxies then reach the new ones (pieces
        holding a copy of a proxy, e.g. rollout workers, need rebuilding). Returns the rebuilt engines."""
        rebuilt = []
        for key, hosts in self._placed.items():
            for host, proxy in zip(hosts, self._made[key].replicas()):
                if not host.alive():
                    host.rebuild()
                    proxy.rebind(host.actor)  # type: ignore[attr-defined]
                    rebuilt.append(proxy)
        return rebuilt

    def hosts(self) -> list[Placed[Any]]:
        return [host for hosts in self._placed.values() for host in hosts]

    def close(self) -> None:
        for key, engine in self._made.items():
            if key not in self._placed:
                engine.close()
        for host in self.hosts():
            host.close()
        self._made.clear()
        self._placed.clear()


def _with_model(openai: OpenAIConfig, served: str) -> OpenAIConfig:
    from omegaconf import OmegaConf

    return OmegaConf.merge(openai, {"model": served})


def critic_engine(engines: EngineSet, critic: CriticConfig) -> Optional[Engine]:
    """The critic's engine: `critic.backend` (default: the actor's backend) serving `critic.model`
    (default: the actor's base model) — the actor's own engine, adapter off, when both are defaults.
    None for `critic.kind=scripted` or `mutants`, which need none."""
    if critic.kind == "scripted":
        log.info("critic: scripted (K = %d informative calls%s), no engine", critic.scripted_k,
                 "; symmetric: a new result, nothing privileged read" if critic.mode == "symmetric" else "")
        return None
    if critic.kind == "mutants":
        log.info("critic: mutants (share of the row's mutants killed; the scripted rule, K = %d, where a row kept "
                 "none), no engine", critic.scripted_k)
        return None
    kind = critic.backend or engines.rollout.engine
    model = critic.model or engines.model.name
    openai = critic.openai if critic.backend == "openai" else None
    return engines.get(kind, model, openai=openai, num_gpus=critic.num_gpus)
