"""The CPU learner's heap: glibc serves allocations below its mmap threshold from a heap it keeps
for reuse, and after the first free of a mapped block it raises that threshold to the block's size
(up to 32 MB). The activations of a forward/backward (tensors of a few to tens of MB, allocated and
freed interleaved) then live in a fragmented heap the process never gives back: a SmolLM2 update's
peak RSS was several times its live tensors (benchmarks/RESULTS.md). A fixed threshold serves
every block above it from its own mapping, returned to the system when the tensor is freed."""

from __future__ import annotations

import ctypes
import ctypes.util
import functools

M_MMAP_THRESHOLD = -3  # glibc's mallopt parameter; fixing it also turns the dynamic raise off
MAX_THRESHOLD_KB = 32 * 1024  # glibc's ceiling on 64-bit (HEAP_MAX_SIZE / 2)


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
