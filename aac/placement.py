"""Where the engine, the learner and the rollout workers live: in Ray actors, or in this process.

The loop calls every piece the same way (`piece.method(...)`), wherever it runs; `submit` and
`gather` let several rollout workers run at once. In-process placement keeps tests and
debugging free of Ray; `ray` placement is the default for real runs.
"""

from __future__ import annotations

import os
import tempfile
from typing import Any

from aac.rollout.engine import Engine


class Placed:
    """A handle on an object built here or in a Ray actor; attribute calls are synchronous."""

    def __init__(self, cls: type, *args: Any, use_ray: bool, name: str, **kwargs: Any):
        self.name = name
        self._ray = use_ray
        if use_ray:
            import ray

            actor_cls = ray.remote(num_cpus=0, max_restarts=0)(cls)
            self._obj = actor_cls.options(name=None).remote(*args, **kwargs)
        else:
            self._obj = cls(*args, **kwargs)

    @property
    def actor(self) -> Any:
        """The Ray actor handle (or the local object), to pass to other pieces."""
        return self._obj

    def submit(self, method: str, *args: Any, **kwargs: Any) -> Any:
        if self._ray:
            return getattr(self._obj, method).remote(*args, **kwargs)
        return getattr(self._obj, method)(*args, **kwargs)

    def gather(self, futures: list[Any]) -> list[Any]:
        if self._ray:
            import ray

            return ray.get(futures)
        return futures

    def kill(self) -> None:
        """End the Ray actor (its processes and what it holds); no-op in-process."""
        if self._ray:
            import ray

            ray.kill(self._obj)

    def __getattr__(self, method: str):
        if method.startswith("_"):
            raise AttributeError(method)

        def call(*args: Any, **kwargs: Any) -> Any:
            return self.gather([self.submit(method, *args, **kwargs)])[0]

        return call


class RemoteEngine(Engine):
    """An `Engine` whose work happens in an engine actor: rollout workers and the critic use it
    exactly like a local engine, so one engine serves actor and critic for every worker."""

    def __init__(self, actor: Any):
        self._actor = actor

    def _call(self, method: str, *args: Any) -> Any:
        import ray

        return ray.get(getattr(self._actor, method).remote(*args))

    def generate(self, requests):
        return self._call("generate", requests)

    def load_adapter(self, name, path, version):
        return self._call("load_adapter", name, path, version)

    def adapter_version(self, name):
        return self._call("adapter_version", name)

    def score(self, prompt_ids, completion_ids, adapter):
        return self._call("score", prompt_ids, completion_ids, adapter)

    def close(self):
        return None  # the engine actor's owner closes it


# concise console logs by default (each can be overridden from the environment)
QUIET_ENV = {"TOKENIZERS_PARALLELISM": "false", "VLLM_LOGGING_LEVEL": "WARNING", "OMP_WAIT_POLICY": "PASSIVE"}


def quiet_env() -> None:
    for key, value in QUIET_ENV.items():
        os.environ.setdefault(key, value)


def start_ray(num_cpus: int | None = None) -> None:
    """Start (or join) a local Ray with a private temp dir and quiet logs."""
    import ray

    if ray.is_initialized():
        return
    quiet_env()
    tmp = os.environ.get("RAY_TMPDIR") or tempfile.mkdtemp(prefix="aac-ray-")
    os.environ["RAY_TMPDIR"] = tmp
    ray.init(
        num_cpus=num_cpus or os.cpu_count(),
        include_dashboard=False,
        log_to_driver=True,
        logging_level="WARNING",
        _temp_dir=tmp,
        runtime_env={"env_vars": {k: os.environ[k] for k in QUIET_ENV}},
    )


class EngineHost:
    """Builds the generation engine where it is placed (a Ray actor, or here) and serves it."""

    def __init__(self, model_cfg: Any, rollout_cfg: Any, seed: int, **overrides: Any):
        quiet_env()
        from aac.rollout.engine import engine_from_config

        self.engine = engine_from_config(model_cfg, rollout_cfg, seed, **overrides)

    def generate(self, requests):
        return self.engine.generate(requests)

    def load_adapter(self, name, path, version):
        return self.engine.load_adapter(name, path, version)

    def adapter_version(self, name):
        return self.engine.adapter_version(name)

    def score(self, prompt_ids, completion_ids, adapter):
        return self.engine.score(prompt_ids, completion_ids, adapter)

    def close(self):
        return self.engine.close()
