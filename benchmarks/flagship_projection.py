"""The flagship's 5 epochs projected from `aac.preflight`'s token counts (issue 26): hours before and after
the issue's changes, under stated H100 throughputs (a projection: no GPU measured it).

From each preflight JSON (a run on the flagship's paper-style protocol): turns per episode, generated
tokens per turn and update tokens per generated token (the learner's prefix tree, at the run's
micro_batch_tokens). Per step the flagship generates G = functions_per_step x group x turns x tokens per
turn, on these assumptions (flags):
- the engine decodes --decode-tps tokens/s in eager mode (8B, LoRA); CUDA graphs make it --graphs x faster;
- the critic's judgments cost --critic-share of the generation time on the same engine;
- the learner trains --learn-tps update tokens/s (LoRA fwd+bwd with checkpointing, ~35% MFU); a sync takes --sync-s.

before (lockstep, critic after the play, eager):  G/dec + critic + U*G/learn + sync
after (`max_off_policy_steps=1`, `critic_overlap`, graphs): max((1 + critic) G/(dec*graphs), U*G/learn + sync)

    python benchmarks/flagship_projection.py runs/pf/*.json
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path


def measured(path: Path) -> dict[str, float]:
    """Turns per episode, generated tokens per turn, update tokens per generated token: means over steps."""
    steps = json.loads(path.read_text())["steps"]
    missing = [i + 1 for i, s in enumerate(steps) if not s.get("update_tokens") or not s.get("turns_per_episode")]
    if missing:
        raise SystemExit(f"{path}: steps {missing} have no update tokens or turns per episode (an older preflight)")
    generated = sum(s["generated_tokens"] for s in steps)
    return {"turns": sum(s["turns_per_episode"] for s in steps) / len(steps),
            "per_turn": generated / sum(s["turns"] for s in steps),
            "update_per_generated": sum(s["update_tokens"] for s in steps) / generated}


def step_seconds(generated: float, update_per_generated: float, a: argparse.Namespace) -> dict[str, float]:
    decode = generated / a.decode_tps
    learn = update_per_generated * generated / a.learn_tps + a.sync_s
    before = decode * (1 + a.critic_share) + learn
    after = max(decode * (1 + a.critic_share) / a.graphs, learn)
    return {"before": before, "after": after}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("preflights", nargs="+", type=Path, help="preflight.json files")
    ap.add_argument("--functions", type=int, default=3900, help="training functions (PAU: ~3.9K)")
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--functions-per-step", type=int, default=8)
    ap.add_argument("--group", type=int, default=8)
    ap.add_argument("--decode-tps", type=float, default=3000.0)
    ap.add_argument("--graphs", type=float, default=1.35, help="CUDA graphs' decode speed-up (20-50%%: mid)")
    ap.add_argument("--critic-share", type=float, default=0.3)
    ap.add_argument("--learn-tps", type=float, default=7000.0)
    ap.add_argument("--sync-s", type=float, default=5.0)
    a = ap.parse_args()
    steps = math.ceil(a.functions * a.epochs / a.functions_per_step)
    print(f"{steps} steps ({a.functions} functions x {a.epochs} epochs / {a.functions_per_step} a step), "
          f"{a.functions_per_step * a.group} episodes a step; decode {a.decode_tps:.0f} tok/s eager x{a.graphs} "
          f"graphs, critic +{a.critic_share:.0%}, learner {a.learn_tps:.0f} tok/s, sync {a.sync_s:.0f} s\n")
    print("| preflight | turns / episode | generated / turn | update / generated | generated / step | "
          "before: s/step (h) | after: s/step (h) | before / after |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for path in a.preflights:
        m = measured(path)
        generated = a.functions_per_step * a.group * m["turns"] * m["per_turn"]
        s = step_seconds(generated, m["update_per_generated"], a)
        print(f"| {path.stem} | {m['turns']:.1f} | {m['per_turn']:.1f} | {m['update_per_generated']:.2f} | "
              f"{generated:,.0f} | {s['before']:.0f} ({s['before'] * steps / 3600:.0f}) | "
              f"{s['after']:.0f} ({s['after'] * steps / 3600:.0f}) | {s['before'] / s['after']:.2f}x |")


if __name__ == "__main__":
    main()
