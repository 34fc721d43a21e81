"""The one place that builds a run's pieces from the composed config.

`aac.train`, `Trainer.evaluate` and `aac.eval` build through here, and each piece gets only its own
config section plus the collaborators built for it (torchtune's recipe `setup()` is the model). So a
setting either reaches behaviour or fails here; no piece reads a sibling's section or builds its own
collaborator.

- `EngineSet`: every engine of a run, built on first use and shared per (kind, model, endpoint): the
  critic, the judge and the coder share the actor's engine (adapter off) exactly when they name the
  same model on the same backend, unless `rollout.lora_mode=merged` gives the actor its own engine. Under Ray each engine lives in its own actor, which asks Ray for
  the GPUs its section names (`rollout.num_gpus`, `critic.num_gpus`).
- `critic_engine`: the engine `critic.backend` / `critic.model` / `critic.openai` select.
- `training_protocol` / `eval_protocol`: the protocol of training episodes and of held-out ones.
"""

from __future__ import annotations

import logging
from typing import Any, Optional

from aac.config import ModelConfig
from aac.engines import Engine
from aac.env.protocol import ProtocolConfig
from aac.placement import Placed

log = logging.getLogger("aac")


def training_protocol(env: Any) -> ProtocolConfig:
    """Training episodes: `env.history_window`, `env.max_steps` (T_max), `env.max_calls`."""
    protocol = ProtocolConfig.from_env(env)
    if protocol.constrained_format:
        log.info("env.constrained_format: every turn is decoded inside its phase's grammar (aac/env/grammar.py)")
    return protocol


def eval_protocol(ev: Any, env: Any) -> ProtocolConfig:
    """Held-out episodes, in training or in `aac.eval`: the PAU setting (`eval.history_window`, a budget
    of `eval.max_calls` calls), with the environment's prompt and input bounds."""
    return ProtocolConfig.from_eval(ev, env)


class EngineSet:
    """The engines of a run. `model` and `rollout` are the actor's sections; another model (a critic,
    judge or coder) keeps the actor's dtype and context length but not its chat-template overrides."""

    def __init__(self, model: Any, rollout: Any, seed: int, *, use_ray: bool):
        self.model, self.rollout, self.seed, self.use_ray = model, rollout, seed, use_ray
        self._made: dict[tuple, Engine] = {}
        self._placed: list[Placed] = []

    def _key(self, kind: str, model: str, openai: Any) -> tuple:
        return (kind, model, openai.base_url if kind == "openai" else None)

    def actor(self, *, kind: Optional[str] = None, lora_rank: Optional[int] = None) -> Engine:
        """The actor's engine (`rollout.engine` unless `kind`), with LoRA slots for `lora_rank`."""
        kind = kind or self.rollout.engine
        return self.get(kind, self.model.name, lora_rank=lora_rank if kind != "openai" else None,
                        num_gpus=self.rollout.num_gpus)

    def get(self, kind: str, model: str, *, openai: Any = None, lora_rank: Optional[int] = None,
            num_gpus: float = 0.0) -> Engine:
        """The engine serving `model` on backend `kind` (an endpoint: `openai`, default `rollout.openai`)."""
        explicit = openai is not None
        openai = openai if explicit else self.rollout.openai
        # rollout.lora_mode=merged: the adapter lives in its own engine's weights, apart from the base's
        merged = kind == "vllm" and lora_rank is not None and self.rollout.lora_mode == "merged"
        key = self._key(kind, model, openai) + (("merged",) if merged else ())
        if key in self._made:
            return self._made[key]
        model_cfg = self.model if model == self.model.name else ModelConfig(
            name=model, dtype=self.model.dtype, max_model_len=self.model.max_model_len)
        overrides: dict[str, Any] = {"kind": kind}
        if kind == "openai":
            # rollout.openai.model names the actor's served model, not another model's
            overrides["openai"] = openai if explicit or model == self.model.name else _with_model(openai, "")
        else:
            overrides["enable_lora"] = lora_rank is not None
            if lora_rank is not None:
                overrides["max_lora_rank"] = max(self.rollout.max_lora_rank, lora_rank)
        log.info("engine: %s serving %s%s%s", kind, model, " with the LoRA merged" if merged else "",
                 f" on {num_gpus:g} GPU(s)" if num_gpus else "")
        if self.use_ray:
            from aac.engines.remote import EngineHost, RemoteEngine

            host = Placed(EngineHost, model_cfg, self.rollout, self.seed, use_ray=True, name=f"engine:{model}",
                          num_gpus=num_gpus, **overrides)
            self._placed.append(host)
            engine: Engine = RemoteEngine(host.actor)
        else:
            from aac.engines import engine_from_config

            engine = engine_from_config(model_cfg, self.rollout, self.seed, **overrides)
        self._made[key] = engine
        return engine

    def close(self) -> None:
        for engine in self._made.values():
            engine.close()
        for host in self._placed:
            host.submit("close")
            host.kill()
        self._made.clear()
        self._placed.clear()


def _with_model(openai: Any, served: str) -> Any:
    from omegaconf import OmegaConf

    return OmegaConf.merge(openai, {"model": served})


def critic_engine(engines: EngineSet, critic: Any) -> Optional[Engine]:
    """The critic's engine: `critic.backend` (default: the actor's backend) serving `critic.model`
    (default: the actor's base model) — the actor's own engine, adapter off, when both are defaults.
    None for `critic.kind=scripted`, which needs none."""
    if critic.kind == "scripted":
        log.info("critic: scripted (K = %d informative calls), no engine", critic.scripted_k)
        return None
    kind = critic.backend or engines.rollout.engine
    model = critic.model or engines.model.name
    openai = critic.openai if critic.backend == "openai" else None
    return engines.get(kind, model, openai=openai, num_gpus=critic.num_gpus)
