"""This machine's CPU speed, printed beside a run's timings so a reader can scale them to their own machine
(what a run asks of the GPUs is checked apart, in aac/hardware.py).

Per-core fp32 GFLOP/s: a 1024x1024 @ 1024x1024 float32 matmul (2 * 1024^3 FLOP) on one torch thread, the best
of a few runs after a warm-up (the best is the least disturbed by other jobs on a shared machine); with the core
count and the 1-minute load average, which say how much of that speed a run could use.
"""

from __future__ import annotations

import os
import time

from aac.errors import UserError

N = 1024
# the speed as measured once by whoever starts many runs (the test suite): a run logs it instead of measuring (a
# measurement is a process of its own that loads torch: ~2 s of CPU)
GIVEN = "AAC_CPU_GFLOPS"


def per_core_gflops(repeats: int = 10) -> float:
    """Best single-thread fp32 GFLOP/s of an N x N matmul over `repeats` runs, measured in a process of its own:
    changing this process's torch thread count, even restored, changed a resumed run's update numerics. Where
    $AAC_CPU_GFLOPS is set, that number."""
    import subprocess
    import sys

    given = os.environ.get(GIVEN)
    if given:
        try:
            return float(given)
        except ValueError:
            raise UserError(f"{GIVEN}={given!r} is not a number (GFLOP/s per core; unset it to measure)") from None
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    try:  # a number for the log only: a failed measurement must not stop a run
        out = subprocess.run([sys.executable, "-c", f"from aac.cpu_speed import measure; print(measure({int(repeats)}))"],
                             env=env, capture_output=True, text=True, check=True)
        return float(out.stdout.strip().splitlines()[-1])
    except (OSError, subprocess.CalledProcessError, ValueError, IndexError):
        return float("nan")


def measure(repeats: int) -> float:
    """Best single-thread fp32 GFLOP/s of an N x N matmul over `repeats` runs, in this process."""
    import torch

    torch.set_num_threads(1)
    gen = torch.Generator().manual_seed(0)
    a, b = torch.randn(N, N, generator=gen), torch.randn(N, N, generator=gen)
    torch.mm(a, b)  # warm-up: the first call picks kernels and touches the pages
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        torch.mm(a, b)
        best = min(best, time.perf_counter() - t0)
    return 2 * N**3 / best / 1e9


def speed_line(gflops: float) -> str:
    """One line: per-core GFLOP/s, cores, load average (what `aac.train` logs at its start and end)."""
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return f"{gflops:.1f} GFLOP/s fp32 per core (1024x1024 matmul, 1 thread), {os.cpu_count()} cores, load {load:.1f}"

