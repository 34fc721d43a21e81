"""Where the engine, the learner and the rollout workers live: in Ray actors, or in this process.

The loop calls every piece the same way (`piece.method(...)`), wherever it runs; `submit` and
`gather` let several rollout workers run at once. In-process placement keeps tests and
debugging free of Ray; `ray` placement is the default for real runs.
"""

from __future__ import annotations

import os
import tempfile
from typing import Any

from aac.engines.cpu_threads import omp_threads
from aac.engines.remote import QUIET_ENV, quiet_env


class Placed:
    """A handle on an object built here or in a Ray actor; attribute calls are synchronous."""

    def __init__(self, cls: type, *args: Any, use_ray: bool, name: str, num_gpus: float = 0.0,
                 env: dict[str, str] | None = None, **kwargs: Any):
        self.name = name
        self._ray = use_ray
        if use_ray:
            import ray

            # a piece asking for GPUs gets them to itself: Ray sets its CUDA_VISIBLE_DEVICES; `env`: what
            # its process must start with (e.g. the learner's allocator settings)
            actor_cls = ray.remote(num_cpus=0, num_gpus=num_gpus, max_restarts=0)(cls)
            options = {"runtime_env": {"env_vars": env}} if env else {}
            self._obj = actor_cls.options(name=None, **options).remote(*args, **kwargs)
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


def start_ray(num_cpus: int | None = None, num_gpus: int | None = None, threads: int | None = None) -> None:
    """Start (or join) a local Ray with a private temp dir and quiet logs (`num_gpus`: Ray's count,
    default what it detects; tests declare fake GPUs with it). Every actor runs `threads` OpenMP/torch
    threads (`rollout.cpu_threads`; None: every core) instead of Ray's 1 for an actor with num_cpus=0."""
    import ray

    if ray.is_initialized():
        return
    quiet_env()
    tmp = os.environ.get("RAY_TMPDIR") or tempfile.mkdtemp(prefix="aac-ray-")
    os.environ["RAY_TMPDIR"] = tmp
    ray.init(
        num_cpus=num_cpus or os.cpu_count(),
        num_gpus=num_gpus,
        include_dashboard=False,
        log_to_driver=True,
        logging_level="WARNING",
        _temp_dir=tmp,
        runtime_env={"env_vars": {**{k: os.environ[k] for k in QUIET_ENV}, "OMP_NUM_THREADS": str(omp_threads(threads))}},
    )
