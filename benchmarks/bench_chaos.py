"""Chaos: a long tiny run under Ray with a random piece SIGKILLed every ~10 steps, beside the same run
left alone, lockstep and off-policy (`rollout.max_off_policy_steps=1`: a kill often lands while the
other pieces are busy, the workers with the next step's rollout, the learner with this one's update).
It must finish every step; the table gives the restarts, the retried phases, the wall-time overhead
and whether the final adapter equals the undisturbed run's (the tiny pieces are deterministic).

    python benchmarks/bench_chaos.py                 # 100 steps, a kill every ~10, both schedules
    python benchmarks/bench_chaos.py --steps 30 --every 5 --off-policy 1

The killer is a thread of the driver: at a random moment within each window of `--every` steps (drawn
from the clean run's mean step time), it SIGKILLs the process of one piece drawn at random (the engine
host, the learner or a rollout worker), whatever that piece is doing then.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import tempfile
import threading
import time
from pathlib import Path

RUN = ("+recipe=tiny", "rollout.placement=ray", "rollout.num_workers=2", "rollout.group_size=2", "env.max_steps=3",
       "save_every=1000", "learner.lr=5e-2", "rollout.cpu_threads=1", "max_actor_restarts=1000")


def run(steps: int, out: Path, k: int, every: int = 0, step_s: float = 0.0, seed: int = 0) -> dict:
    from safetensors.torch import load_file

    from aac.config import compose
    from aac.metrics import read
    from aac.training import Trainer

    trainer = Trainer(compose(*RUN, f"max_steps={steps}", f"rollout.max_off_policy_steps={k}"), out)
    kills: list[str] = []
    stop = threading.Event()

    def killer() -> None:
        rng = random.Random(seed)
        while not stop.wait(rng.uniform(0.2, 2 * every * step_s - 0.2)):  # ~one kill per `every` steps
            pieces = [*trainer.pieces.engines.hosts(), trainer.pieces.learner, *trainer.pieces.workers]
            piece = rng.choice(pieces)
            try:
                os.kill(piece.pid(), signal.SIGKILL)
                kills.append(piece.name)
            except Exception:  # it was already dead or being rebuilt: the next window draws again
                pass

    thread = threading.Thread(target=killer, daemon=True) if every else None
    t0 = time.perf_counter()
    try:
        if thread:
            thread.start()
        trainer.run()
        stop.set()
    finally:
        stop.set()
        trainer.close()
    wall = time.perf_counter() - t0
    rows = read(out / "metrics.jsonl")
    adapter = load_file(str(out / "checkpoints" / f"step_{steps:06d}" / "adapter" / "adapter_model.safetensors"))
    return {"wall_s": wall, "steps": [r["step"] for r in rows], "uids": [r["uids"] for r in rows], "kills": kills,
            "restarts": rows[-1]["faults/actor_restarts"], "retried": sum(r["faults/retried_phases"] for r in rows),
            "adapter": adapter}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--every", type=int, default=10, help="one kill per this many steps, on average")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--off-policy", type=int, nargs="+", default=[0, 1], metavar="K",
                    help="rollout.max_off_policy_steps of the runs (each: a clean run and a chaos run)")
    args = ap.parse_args()
    import ray
    import torch

    from aac.placement import start_ray

    os.environ["RAY_TMPDIR"] = tempfile.mkdtemp(prefix="ray", dir="/tmp")
    start_ray(num_cpus=2, threads=1)
    root = Path(tempfile.mkdtemp(prefix="bench-chaos-"))
    runs = []
    try:
        for k in args.off_policy:
            clean = run(args.steps, root / f"clean{k}", k)
            step_s = clean["wall_s"] / args.steps
            runs.append((k, clean, run(args.steps, root / f"chaos{k}", k, every=args.every, step_s=step_s, seed=args.seed)))
    finally:
        ray.shutdown()
    print("| max_off_policy_steps | run | steps done | kills | pieces rebuilt | phases retried | wall s | x clean | final adapter |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|---|")
    for k, clean, chaos in runs:
        same = all(torch.equal(v, chaos["adapter"][name]) for name, v in clean["adapter"].items())
        print(f"| {k} | clean | {len(clean['steps'])} | 0 | {clean['restarts']} | {clean['retried']} | "
              f"{clean['wall_s']:.0f} | 1.00 | - |")
        print(f"| {k} | chaos | {len(chaos['steps'])} | {len(chaos['kills'])} | {chaos['restarts']} | {chaos['retried']} | "
              f"{chaos['wall_s']:.0f} | {chaos['wall_s'] / clean['wall_s']:.2f} | {'= clean' if same else 'DIFFERS'} |")
    for k, clean, chaos in runs:
        print(f"max_off_policy_steps={k}: killed {', '.join(chaos['kills'])}; steps 1..{args.steps} without gap or "
              f"repeat: {chaos['steps'] == list(range(1, args.steps + 1))}; same data order: {chaos['uids'] == clean['uids']}")


if __name__ == "__main__":
    main()
