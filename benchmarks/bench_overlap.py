"""Off-policy overlap: step wall time with `rollout.max_off_policy_steps=1` against lockstep (0), at equal
work, where generation and the update are latency-bound as on two GPUs (not on 2 shared CPU cores).

The tiny recipe under Ray with a scripted critic; the engine actor answers each batched decode after
`--token-ms` per generated token of its longest reply (a GPU engine's step time, on no CPU), and the
learner's update takes `--learner-ms` per token on top of its (tiny) compute: both sides wait rather
than compute, so what the table shows is the schedule, the thing the pipeline changes. By default the
learner's delay is calibrated on a lockstep step so that the update takes as long as the rollout
(each GPU idle half of a lockstep step: the case the issue describes).

    python benchmarks/bench_overlap.py                  # 8 steps of each
    python benchmarks/bench_overlap.py --steps 12 --token-ms 20
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

RUN = ("+recipe=tiny", "rollout.placement=ray", "rollout.num_workers=2", "rollout.group_size=4",
       "rollout.functions_per_step=2", "env.max_steps=9", "critic.kind=scripted", "critic.informativeness=coverage",
       "save_every=1000", "check_sync=false", "rollout.cpu_threads=1",
       # every turn scored by its length (the random model's episodes differ): each step really updates
       "rewards=no_informativeness", "rewards.lambda_h=0", "rewards.p_parse=0", "rewards.tau_reason=6",
       "rewards.tau_input=6", "rewards.tau_reflect=6")


def _slow_engine(host, ms: float) -> None:
    import time as t

    engine, generate = host.engine, host.engine.generate

    def slow(requests):
        out = generate(requests)
        t.sleep(ms / 1000 * max((len(r.token_ids) for r in out), default=0))
        return out

    engine.generate = slow


def _slow_learner(learner, ms: float) -> None:
    import time as t

    compute = learner.compute_gradients  # called by update (Ray dispatches update itself on the class)

    def slow(samples, *args, **kwargs):
        t.sleep(ms / 1000 * sum(len(s.completion_ids) for s in samples))
        return compute(samples, *args, **kwargs)

    learner.compute_gradients = slow


def run(steps: int, k: int, token_ms: float, learner_ms: float, out: Path) -> list[dict]:
    import ray

    from aac.config import compose
    from aac.metrics import read
    from aac.training import Trainer

    trainer = Trainer(compose(*RUN, f"max_steps={steps}", f"rollout.max_off_policy_steps={k}"), out)
    try:
        for host in trainer.pieces.engines.hosts():
            ray.get(host.actor.__ray_call__.remote(_slow_engine, token_ms))
        ray.get(trainer.learner.actor.__ray_call__.remote(_slow_learner, learner_ms))
        stamps = []
        original = trainer.train_step

        def timed_step():
            m = original()
            stamps.append(time.perf_counter())
            return m

        trainer.train_step = timed_step
        t0 = time.perf_counter()
        trainer.run()
    finally:
        trainer.close()
    rows = read(out / "metrics.jsonl")
    walls = [b - a for a, b in zip([t0, *stamps], stamps)]
    for row, wall in zip(rows, walls):
        row["wall_s"] = wall
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--token-ms", type=float, default=20.0, help="engine delay per generated token of a batch step")
    ap.add_argument("--learner-ms", type=float, default=None, help="learner delay per token (default: calibrated)")
    args = ap.parse_args()
    import os

    import ray

    from aac.placement import start_ray

    os.environ["RAY_TMPDIR"] = tempfile.mkdtemp(prefix="ray", dir="/tmp")
    start_ray(num_cpus=2, threads=1)
    root = Path(tempfile.mkdtemp(prefix="bench-overlap-"))
    try:
        learner_ms = args.learner_ms
        if learner_ms is None:  # the update as long as the rollout, on one lockstep step
            probe = run(1, 0, args.token_ms, 0.0, root / "calibrate")[0]
            learner_ms = 1000 * probe["time/rollout_s"] / probe["update/loss_tokens"]
        sync = run(args.steps, 0, args.token_ms, learner_ms, root / "sync")
        off = run(args.steps, 1, args.token_ms, learner_ms, root / "off")
    finally:
        ray.shutdown()

    def mean(rows, key):
        return statistics.mean(r[key] for r in rows[1:])  # step 1 has nothing to overlap with

    print(f"engine {args.token_ms:g} ms per decoded token, learner {learner_ms:.2f} ms per update token, "
          f"{args.steps} steps each (means over steps 2..{args.steps})")
    print("| max_off_policy_steps | step wall s | rollout s (waited) | update s | generated tokens/step | lag |")
    print("|---|---:|---:|---:|---:|---:|")
    for k, rows in ((0, sync), (1, off)):
        waited = mean(rows, "time/rollout_s") + mean(rows, "time/rollout_ahead_wait_s")
        print(f"| {k} | {mean(rows, 'wall_s'):.2f} | {waited:.2f} | {mean(rows, 'time/update_s'):.2f} | "
              f"{mean(rows, 'rollout/generated_tokens'):.0f} | {mean(rows, 'offpolicy/lag'):.0f} |")
    print(f"step wall time, lockstep / off-policy: {mean(sync, 'wall_s') / mean(off, 'wall_s'):.2f}x")


if __name__ == "__main__":
    main()
