"""Disk taken by the episode log (issue 42): bytes per kept episode of real runs, and the projection for the
flagship recipe from the measured compressed bytes per token.

Reads OUT/episodes/step_*.jsonl.gz of each run dir (train it with `logging.episodes_per_step=-1` to measure
every episode), prints per run: episodes, turns, gzipped bytes per episode, per turn and per token (prompt +
generated), the JSON's compression ratio; then the flagship projection (docs/viewer.md, "Disk") with its
assumptions stated: episodes kept per 1,000 steps x turns x tokens a turn x the largest measured B/token.

    python -m aac.train out_dir=/tmp/demo logging.episodes_per_step=-1 max_steps=3
    python benchmarks/bench_episode_disk.py /tmp/demo [more run dirs]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from aac import episode_files

# the flagship (+recipe=qwen3_8b): 8 functions x group 8 a step; env.max_steps 40; context 4,096 tokens
FLAGSHIP_EPISODES_PER_STEP = 8 * 8
SCENARIOS = {"typical": (24, 1500 + 250), "worst": (40, 4096)}  # (turns an episode, tokens a turn)
KEPT = {"default (4 a step)": 4, "all (-1)": FLAGSHIP_EPISODES_PER_STEP}


def measure(run: Path) -> dict:
    files = sorted((run / episode_files.DIR).glob("step_*.jsonl.gz"))
    recs = episode_files.read_steps(run / episode_files.DIR)
    if not recs:
        raise SystemExit(f"{run}: no kept episodes")
    gz = sum(f.stat().st_size for f in files)
    raw = sum(len(json.dumps(r, ensure_ascii=False).encode()) + 1 for r in recs)
    turns = [t for r in recs for t in r["turns"]]
    tokens = sum(t["prompt_tokens"] + t["tokens"] for t in turns)
    return {"run": str(run), "episodes": len(recs), "turns_per_episode": len(turns) / len(recs),
            "tokens_per_turn": tokens / len(turns), "bytes_per_episode": gz / len(recs), "bytes_per_turn": gz / len(turns),
            "bytes_per_token": gz / tokens, "compression": raw / gz}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path)
    args = parser.parse_args()
    rows = [measure(r) for r in args.runs]
    print("| run | episodes | turns / episode | tokens / turn | B / episode (gz) | B / turn | B / token | gzip ratio |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for m in rows:
        print(f"| {m['run']} | {m['episodes']} | {m['turns_per_episode']:.1f} | {m['tokens_per_turn']:.0f} | "
              f"{m['bytes_per_episode']:.0f} | {m['bytes_per_turn']:.0f} | {m['bytes_per_token']:.2f} | {m['compression']:.1f} |")
    per_token = max(m["bytes_per_token"] for m in rows)
    print(f"\nProjection (not a measurement), flagship, {per_token:.2f} B/token: disk per 1,000 steps")
    print("| kept | " + " | ".join(f"{k}: {t} turns x {n:,} tokens" for k, (t, n) in SCENARIOS.items()) + " |")
    print("|---|" + "---:|" * len(SCENARIOS))
    for label, kept in KEPT.items():
        cells = [f"{kept * 1000 * turns * tokens * per_token / 1e6:,.0f} MB" for turns, tokens in SCENARIOS.values()]
        print(f"| {label} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
