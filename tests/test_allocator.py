"""learner.malloc_mmap_threshold_kb: freed activation-sized tensors go back to the system."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from aac.config import LearnerConfig
from aac.learner.allocator import check_process_env, learner_env

# An 8 MB free raises glibc's dynamic threshold; then 2 MB tensors (activation-sized) are allocated and
# all but the last freed: in the heap they stay resident behind it, mapped one by one they are returned.
PROBE = """
import sys, torch
from aac.learner.allocator import set_mmap_threshold
def rss():
    return next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmRSS")) / 1024
print(set_mmap_threshold(int(sys.argv[1])))
big = torch.ones(2 * 2**20); del big
before = rss()
held = [torch.ones(2**19) for _ in range(100)]
del held[:-1]
print(rss() - before)
"""


def _retained_mb(kb: int) -> tuple[bool, float]:
    out = subprocess.run([sys.executable, "-c", PROBE, str(kb)], capture_output=True, text=True, check=True)
    applied, retained = out.stdout.split()
    return applied == "True", float(retained)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc mallopt")
def test_fixed_mmap_threshold_returns_freed_tensors():
    applied, fixed = _retained_mb(1024)
    dynamic_applied, dynamic = _retained_mb(0)
    assert applied and not dynamic_applied
    assert dynamic > 150 and fixed < 20  # ~200 MB kept in the heap vs one 2 MB tensor


HUGE = """
import torch
held = torch.ones(8 * 2**20)  # 32 MB
print(sum(int(l.split()[1]) for l in open("/proc/self/smaps") if l.startswith("AnonHugePages")))
"""


def _thp_available() -> bool:
    try:
        return "[never]" not in open("/sys/kernel/mm/transparent_hugepage/enabled").read()
    except OSError:
        return False


@pytest.mark.skipif(not _thp_available(), reason="no transparent huge pages on this machine")
def test_huge_pages_come_from_the_learner_env(monkeypatch):
    def huge_kb(huge_pages: bool) -> int:
        env = {k: v for k, v in os.environ.items() if k != "THP_MEM_ALLOC_ENABLE"}
        env.update(learner_env(LearnerConfig(huge_pages=huge_pages)))
        return int(subprocess.run([sys.executable, "-c", HUGE], env=env, capture_output=True, text=True,
                                  check=True).stdout)

    assert huge_kb(False) == 0 and huge_kb(True) >= 16 * 1024  # most of the 32 MB on 2 MB pages
    monkeypatch.delenv("THP_MEM_ALLOC_ENABLE", raising=False)
    assert check_process_env(LearnerConfig(huge_pages=False))
    assert not check_process_env(LearnerConfig(huge_pages=True))  # started without it: a warning


# which malloc the process runs and whether it purges freed pages: jemalloc answers mallctl, glibc has none
DECAY = """
import ctypes
lib = ctypes.CDLL(None)
if not hasattr(lib, "mallctl"):
    print("glibc")
else:
    value, size = ctypes.c_ssize_t(), ctypes.c_size_t(8)
    assert lib.mallctl(b"opt.dirty_decay_ms", ctypes.byref(value), ctypes.byref(size), None, 0) == 0
    print(value.value)
"""


def test_jemalloc_comes_from_the_learner_env_with_purging_off(monkeypatch):
    def malloc(allocator: str) -> str:
        env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "MALLOC_CONF")}
        env.update(learner_env(LearnerConfig(allocator=allocator)))
        return subprocess.run([sys.executable, "-c", DECAY], env=env, capture_output=True, text=True,
                              check=True).stdout.strip()

    assert malloc("glibc") == "glibc"
    assert malloc("jemalloc") == "-1"  # freed pages kept for reuse: no page fault per 4 KB on the next block
    monkeypatch.delenv("LD_PRELOAD", raising=False)
    assert not check_process_env(LearnerConfig(allocator="jemalloc"))  # started without it: a warning
