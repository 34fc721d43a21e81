"""Where a command's CPU goes, by kind of process: runs COMMAND, reads /proc every second, and prints the CPU
seconds (user + system, each process's own) of every process that appeared while it ran, grouped by what it is
(pytest workers, Ray actors, vLLM, pip, sandbox workers, `python -m aac.X` commands, ...), beside the CPU the
machine had (wall x cores). A process that lives less than a second, or the last second of one, is missed:
the sampled total says how much was caught. Standard library only (Linux).

    python benchmarks/cpu_by_process.py [--every 1.0] [--json FILE] -- make test
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time

TICK = os.sysconf("SC_CLK_TCK")
KINDS = (  # (pattern in the command line, kind): the first that matches
    (r"exec\(eval\(sys\.stdin\.readline|^\[pytest-xdist", "pytest-xdist worker"),
    (r"-m (aac[\w.]*)", "python -m {0}"), (r"-m pytest .*-n \d", "pytest controller"),
    (r"-m pytest", "pytest (SkyRL's run)"), (r"^ray::(?!IDLE)(\w+)", "Ray actor {0}"),
    (r"^ray::IDLE|default_worker\.py", "Ray worker (no actor yet)"),
    (r"raylet|gcs_server|log_monitor\.py|dashboard\.py|monitor\.py", "Ray's own processes"),
    (r"VLLM::|vllm", "vLLM"), (r"_worker\.py", "sandbox (zygote and children)"), (r"-m pip", "pip"),
    (r"chrom", "chromium"))


def kind(cmd: str) -> str:
    for pattern, name in KINDS:
        m = re.search(pattern, cmd)
        if m:
            return name.format(*m.groups())
    return (cmd.split() or ["?"])[0].rsplit("/", 1)[-1][:40]


def sample(seen: dict, base: dict, first: bool) -> None:
    """Update `seen` ((pid, start time) -> [command line, CPU s]) from /proc."""
    for d in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{d}/stat") as f:
                stat = f.read()
            fields = stat[stat.rindex(")") + 2:].split()
            key, cpu = (int(d), fields[19]), (int(fields[11]) + int(fields[12])) / TICK
            with open(f"/proc/{d}/cmdline", "rb") as f:  # read again each time: Ray's and vLLM's name themselves
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
            seen[key] = [cmd or stat[stat.index("(") + 1: stat.rindex(")")], cpu]
            if first:
                base[key] = cpu  # running before the command: only what it uses from now counts
        except (OSError, ValueError, IndexError):  # ended between the listing and the read
            pass


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--every", type=float, default=1.0, help="seconds between samples")
    ap.add_argument("--json", help="also write every process (command line, CPU s) here")
    ap.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND ...")
    a = ap.parse_args()
    command = a.command[1:] if a.command[:1] == ["--"] else a.command
    if not command:
        ap.error("no command: python benchmarks/cpu_by_process.py -- COMMAND ...")
    seen: dict = {}
    base: dict = {}
    sample(seen, base, first=True)
    start = time.monotonic()
    proc = subprocess.Popen(command)
    while proc.poll() is None:
        time.sleep(a.every)
        sample(seen, base, first=False)
    wall = time.monotonic() - start
    used = {key: (cmd, cpu - base.get(key, 0.0)) for key, (cmd, cpu) in seen.items()}
    by_kind: dict[str, list] = {}
    for cmd, cpu in used.values():
        if cpu > 0:
            total = by_kind.setdefault(kind(cmd), [0.0, 0])
            total[0] += cpu
            total[1] += 1
    caught = sum(c for c, _ in by_kind.values())
    print(f"\n{' '.join(command)}: exit {proc.returncode}, {wall:.0f} s wall x {os.cpu_count()} cores = "
          f"{wall * os.cpu_count():.0f} CPU s; sampled {caught:.0f} CPU s\n")
    print("| kind of process | CPU s | share | processes |\n|---|---:|---:|---:|")
    for name, (cpu, n) in sorted(by_kind.items(), key=lambda kv: -kv[1][0]):
        if cpu >= 0.005 * caught:
            print(f"| {name} | {cpu:.0f} | {cpu / caught:.0%} | {n} |")
    if a.json:
        with open(a.json, "w") as f:
            json.dump([[pid, cmd[:300], cpu] for (pid, _), (cmd, cpu) in used.items()], f)
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
