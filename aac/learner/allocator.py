"""The CPU learner's heap: glibc serves allocations below its mmap threshold from a heap it keeps
for reuse, and after the first free of a mapped block it raises that threshold to the block's size
(up to 32 MB). The activations of a forward/backward (tensors of a few to tens of MB, allocated and
freed interleaved) then live in a fragmented heap the process never gives back: a SmolLM2 update's
peak RSS was several times its live tensors (benchmarks/RESULTS.md). A fixed threshold serves
every block above it from its own mapping, returned to the system when the tensor is freed; on
transparent huge pages (`learner.huge_pages`) a fresh mapping costs 1/512 of the page faults."""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import logging
import os
from typing import Any

M_MMAP_THRESHOLD = -3  # glibc's mallopt parameter; fixing it also turns the dynamic raise off
MAX_THRESHOLD_KB = 32 * 1024  # glibc's ceiling on 64-bit (HEAP_MAX_SIZE / 2)
THP_ENV = "THP_MEM_ALLOC_ENABLE"  # torch's CPU allocator: madvise(MADV_HUGEPAGE) blocks >= 2 MB

log = logging.getLogger(__name__)


@functools.lru_cache(maxsize=1)
def _libc() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("c")
    lib = ctypes.CDLL(name) if name else None
    return lib if lib is not None and hasattr(lib, "mallopt") else None


def set_mmap_threshold(kb: int) -> bool:
    """Fix glibc's mmap threshold at `kb` KiB for this process (0: leave glibc's dynamic one).
    False where there is no glibc `mallopt` (another libc: nothing to do)."""
    if not 0 <= kb <= MAX_THRESHOLD_KB:
        raise ValueError(f"learner.malloc_mmap_threshold_kb must be in [0, {MAX_THRESHOLD_KB}], got {kb}")
    lib = _libc()
    if not kb or lib is None:
        return False
    return bool(lib.mallopt(M_MMAP_THRESHOLD, kb * 1024))


def learner_env(cfg: Any) -> dict[str, str]:
    """Environment the learner's process must start with for `cfg` (torch reads it at its first
    allocation): for a Ray actor's runtime_env, or a subprocess."""
    return {THP_ENV: "1"} if cfg.huge_pages else {}


def check_process_env(cfg: Any) -> bool:
    """Whether this process runs with `learner_env(cfg)`; warns where it does not (then the setting
    has no effect here: the process started without it)."""
    missing = {k: v for k, v in learner_env(cfg).items() if os.environ.get(k) != v}
    if missing:
        log.warning("learner.huge_pages=true but this process started without %s: tensors stay on 4 KB pages "
                    "(start it with aac.learner.allocator.learner_env(cfg))", ", ".join(f"{k}={v}" for k, v in missing.items()))
    return not missing
