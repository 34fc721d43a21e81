"""How many OpenMP/torch threads a process of a CPU run uses, and which cores a vLLM CPU worker binds.

The pieces of an embedded run take turns (the actor's generation, the critic, the update), so each
should use every core while it works, and sleep (OMP_WAIT_POLICY=PASSIVE) while another does. Left
alone they do not: Ray sets OMP_NUM_THREADS=1 in an actor that asks for no CPUs, and vLLM's auto-bind
keeps one core for its engine process, so on 2 cores the learner and each engine ran one thread.
"""

from __future__ import annotations

import os
from typing import Optional


def allowed_cores() -> list[int]:
    """The cores this process may run on, in order."""
    return sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else list(range(os.cpu_count() or 1))


def omp_threads(threads: Optional[int] = None) -> int:
    """`threads`, or every allowed core when None."""
    if threads is not None and threads < 1:
        raise ValueError(f"cpu_threads must be >= 1 or None (every core), got {threads}")
    return threads or len(allowed_cores())


def vllm_cpu_bind(threads: Optional[int] = None) -> str:
    """VLLM_CPU_OMP_THREADS_BIND for `threads` threads: the first ones of the allowed cores."""
    return ",".join(str(c) for c in allowed_cores()[: omp_threads(threads)])
