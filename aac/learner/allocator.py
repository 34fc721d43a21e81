"""The CPU learner's heap: glibc serves allocations below its mmap threshold from a heap it keeps
for reuse, and after the first free of a mapped block it raises that threshold to the block's size
(up to 32 MB). The activations of a forward/backward (tensors of a few to tens of MB, allocated and
freed interleaved) then live in a fragmented heap the process never gives back: a SmolLM2 update's
peak RSS was several times its live tensors (benchmarks/RESULTS.md). A fixed threshold serves
every block above it from its own mapping, returned to the system when the tensor is freed; on
transparent huge pages (`learner.huge_pages`) a fresh mapping costs 1/512 of the page faults.
jemalloc (`learner.allocator=jemalloc`, preloaded when the process starts) sizes its runs by class,
so the same blocks are reused without that fragmentation; with its purging off they are also reused
without fresh pages (SmolLM2 ckpt update: 1.50 GB peak, 1.1 s of system time against 29-66 s)."""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import importlib.util
import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from aac.config import LearnerConfig

M_MMAP_THRESHOLD = -3  # glibc's mallopt parameter; fixing it also turns the dynamic raise off
THP_ENV = "THP_MEM_ALLOC_ENABLE"  # torch's CPU allocator: madvise(MADV_HUGEPAGE) blocks >= 2 MB
# keep freed pages for reuse: purging them back costs a page fault per 4 KB on the next block
JEMALLOC_CONF = "dirty_decay_ms:-1,muzzy_decay_ms:-1"

log = logging.getLogger(__name__)


@functools.lru_cache(maxsize=1)
def _libc() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("c")
    lib = ctypes.CDLL(name) if name else None
    return lib if lib is not None and hasattr(lib, "mallopt") else None


def set_mmap_threshold(kb: int) -> bool:
    """Fix glibc's mmap threshold at `kb` KiB for this process (0: leave glibc's dynamic one).
    False where there is no glibc `mallopt` (another libc: nothing to do)."""
    lib = _libc()
    if not kb or lib is None:
        return False
    return bool(lib.mallopt(M_MMAP_THRESHOLD, kb * 1024))


def jemalloc_path() -> str:
    """The libjemalloc that Ray ships (ray/core/libjemalloc.so; Ray is a dependency of aac)."""
    spec = importlib.util.find_spec("ray")
    lib = Path(spec.origin).parent / "core" / "libjemalloc.so" if spec and spec.origin else None
    if lib is None or not lib.is_file():
        raise FileNotFoundError(f"learner.allocator=jemalloc: no libjemalloc.so in the installed ray ({lib}); "
                                "use learner.allocator=glibc")
    return str(lib)


def learner_env(cfg: LearnerConfig) -> dict[str, str]:
    """Environment the learner's process must start with for `cfg` (torch reads THP at its first
    allocation; the loader reads LD_PRELOAD at exec): for a Ray actor's runtime_env, or a subprocess."""
    env = {THP_ENV: "1"} if cfg.huge_pages else {}
    if str(cfg.allocator) == "jemalloc":
        lib, preload = jemalloc_path(), os.environ.get("LD_PRELOAD", "")
        env.update(LD_PRELOAD=preload if lib in preload.split(":") else ":".join(p for p in (lib, preload) if p),
                   MALLOC_CONF=JEMALLOC_CONF)
    return env


def jemalloc_loaded() -> bool:
    """Whether this process runs on jemalloc (preloaded at its start)."""
    maps = Path("/proc/self/maps")
    return maps.exists() and "libjemalloc" in maps.read_text()


def check_process_env(cfg: LearnerConfig) -> bool:
    """Whether this process runs with `learner_env(cfg)`; warns where it does not (then the setting
    has no effect here: the process started without it)."""
    ok = True
    if cfg.huge_pages and os.environ.get(THP_ENV) != "1":
        log.warning("learner.huge_pages=true but this process started without %s=1: tensors stay on 4 KB pages "
                    "(start it with aac.learner.allocator.learner_env(cfg))", THP_ENV)
        ok = False
    if str(cfg.allocator) == "jemalloc" and not jemalloc_loaded():
        log.warning("learner.allocator=jemalloc but this process started without it preloaded: glibc's heap "
                    "serves the tensors (start it with aac.learner.allocator.learner_env(cfg))")
        ok = False
    return ok
