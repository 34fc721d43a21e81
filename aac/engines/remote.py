"""An engine served from another process (a Ray actor): `EngineHost` builds and serves it where it is
placed; `RemoteEngine` is the `Engine` the other pieces hold, so one engine serves the actor and the
critic of every rollout worker."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from aac.engines.base import Engine

if TYPE_CHECKING:
    from aac.config import ModelConfig, RolloutConfig

# concise console logs by default (each can be overridden from the environment)
QUIET_ENV = {"TOKENIZERS_PARALLELISM": "false", "VLLM_LOGGING_LEVEL": "WARNING", "OMP_WAIT_POLICY": "PASSIVE"}


def quiet_env() -> None:
    for key, value in QUIET_ENV.items():
        os.environ.setdefault(key, value)



class RemoteEngine(Engine):
    """An `Engine` whose work happens in an engine actor: rollout workers and the critic use it
    exactly like a local engine, so one engine serves actor and critic for every worker."""

    def __init__(self, actor: Any):
        self._actor = actor

    def rebind(self, actor: Any) -> None:
        """Reach a rebuilt engine actor from now on (the driver's proxy keeps its identity)."""
        self._actor = actor

    def _call(self, method: str, *args: Any) -> Any:
        import ray

        return ray.get(getattr(self._actor, method).remote(*args))

    def generate(self, requests):
        return self._call("generate", requests)

    def submit(self, requests):
        return self._call("submit", requests)

    def collect(self, tickets):
        return self._call("collect", tickets)

    def load_adapter(self, name, path, version):
        return self._call("load_adapter", name, path, version)

    def adapter_version(self, name):
        return self._call("adapter_version", name)

    def score(self, prompt_ids, completion_ids, adapter):
        return self._call("score", prompt_ids, completion_ids, adapter)

    def next_token_logprobs(self, requests, candidates):
        return self._call("next_token_logprobs", requests, candidates)

    def close(self):
        return None  # the engine actor's owner closes it


class EngineHost:
    """Builds the generation engine where it is placed (a Ray actor, or here) and serves it, up to
    `max_concurrency` calls at once (the actor's threads): a critic's judgment and the actor's turns
    share a vLLM engine's steps; an engine that cannot serve threads at once takes them in turn."""

    max_concurrency = 64  # calls in flight: each worker's collect, submit and critic call, for many workers

    def __init__(self, model_cfg: ModelConfig, rollout_cfg: RolloutConfig, seed: int, **overrides: Any):
        quiet_env()
        from aac.engines.factory import engine_from_config
        from aac.engines.serialized import shared

        self.engine = shared(engine_from_config(model_cfg, rollout_cfg, seed, **overrides))

    def generate(self, requests):
        return self.engine.generate(requests)

    def submit(self, requests):
        return self.engine.submit(requests)

    def collect(self, tickets):
        return self.engine.collect(tickets)

    def load_adapter(self, name, path, version):
        return self.engine.load_adapter(name, path, version)

    def adapter_version(self, name):
        return self.engine.adapter_version(name)

    def score(self, prompt_ids, completion_ids, adapter):
        return self.engine.score(prompt_ids, completion_ids, adapter)

    def next_token_logprobs(self, requests, candidates):
        return self.engine.next_token_logprobs(requests, candidates)

    def close(self):
        return self.engine.close()
