"""This machine's speed, so a reader can scale the timings in README.md and RESULTS.md to their own.

Prints per-core fp32 GFLOP/s (a 1024x1024 float32 matmul on one thread, the best of `--repeats`; aac/cpu_speed.py),
the core count and the 1-minute load average. `python -m aac.train` logs the same line at its start and end.

    python benchmarks/machine_speed.py [--repeats 20]
"""

from __future__ import annotations

import argparse

from aac.cpu_speed import per_core_gflops, speed_line


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=20)
    print(speed_line(per_core_gflops(ap.parse_args().repeats)))


if __name__ == "__main__":
    main()
