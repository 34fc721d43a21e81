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

`--critic`: critic overlap (`rollout.critic_overlap`) with an LLM critic sharing the actor's engine, on
a latency-bound vLLM engine (the tiny model; each engine step sleeps `--token-ms` after its compute,
whatever its batch, as a GPU's decode step costs about the same for 1 or 64 requests). Lockstep
steps; the rows: judgments after the play, overlapped on an engine host serving one call at a time
(as before the engine loop: a judgment stalls the actor's turns), and overlapped on the concurrent
host (judgments and turns share the engine's steps).

    python benchmarks/bench_overlap.py --critic --steps 3 --token-ms 60
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

    engine = getattr(host.engine, "engine", host.engine)  # inside the host's one-at-a-time wrapper
    generate = engine.generate

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


def _slow_steps(host, ms: float, serial: bool) -> None:
    """Each vLLM step sleeps `ms` after its compute; `serial`: the host serves one call at a time."""
    import time as t

    from aac.engines.serialized import SerializedEngine

    engine = host.engine.llm.llm_engine
    step = engine.step

    def slow():
        out = step()
        t.sleep(ms / 1000)
        return out

    engine.step = slow
    if serial:
        host.engine = SerializedEngine(host.engine)


# each worker plays its 4 episodes 2 at a time (the random model never stops, so episodes end together
# but for the slots refilled): the first two's judgments can overlap the last two's play. Base requests
# through the identity adapter, as on GPU (on CPU a plain batch would cost every arm differently)
CRITIC_RUN = ("+recipe=tiny", "rollout.placement=ray", "rollout.engine=vllm", "rollout.kv_cache_gb=1",
              "rollout.plain_base_batches=false", "rollout.num_workers=2", "rollout.group_size=4",
              "rollout.functions_per_step=2", "rollout.max_live_episodes=2", "env.max_steps=4", "critic.kind=llm",
              "critic.max_tokens=48", "save_every=1000", "check_sync=false", "rollout.cpu_threads=1")


def run_critic(steps: int, overlap: bool, serial: bool, token_ms: float, out: Path, overrides: list[str]) -> list[dict]:
    import ray

    from aac.config import compose
    from aac.training import Trainer

    trainer = Trainer(compose(*CRITIC_RUN, f"max_steps={steps}", f"rollout.critic_overlap={str(overlap).lower()}",
                              *overrides), out)
    try:
        (host,) = trainer.pieces.engines.hosts()  # the actor's engine, the critic's too
        ray.get(host.actor.__ray_call__.remote(_slow_steps, token_ms, serial))
        return _timed_run(trainer, out)
    finally:
        trainer.close()


def _timed_run(trainer, out: Path) -> list[dict]:
    """The trainer's run, each metrics row with its step's wall time."""
    from aac.metrics import read

    stamps = []
    original = trainer.train_step

    def timed_step():
        m = original()
        stamps.append(time.perf_counter())
        return m

    trainer.train_step = timed_step
    t0 = time.perf_counter()
    trainer.run()
    rows = read(out / "metrics.jsonl")
    for row, wall in zip(rows, [b - a for a, b in zip([t0, *stamps], stamps)]):
        row["wall_s"] = wall
    return rows


def run(steps: int, k: int, token_ms: float, learner_ms: float, out: Path) -> list[dict]:
    import ray

    from aac.config import compose
    from aac.training import Trainer

    trainer = Trainer(compose(*RUN, f"max_steps={steps}", f"rollout.max_off_policy_steps={k}"), out)
    try:
        for host in trainer.pieces.engines.hosts():
            ray.get(host.actor.__ray_call__.remote(_slow_engine, token_ms))
        ray.get(trainer.learner.actor.__ray_call__.remote(_slow_learner, learner_ms))
        return _timed_run(trainer, out)
    finally:
        trainer.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--token-ms", type=float, default=20.0, help="engine delay per generated token of a batch step")
    ap.add_argument("--learner-ms", type=float, default=None, help="learner delay per token (default: calibrated)")
    ap.add_argument("--critic", action="store_true", help="critic overlap on a shared vLLM engine (see above)")
    ap.add_argument("overrides", nargs="*", help="more overrides of the --critic runs (e.g. env.max_steps=2)")
    args = ap.parse_args()
    import os

    import ray

    from aac.placement import start_ray

    os.environ["RAY_TMPDIR"] = tempfile.mkdtemp(prefix="ray", dir="/tmp")
    start_ray(num_cpus=2, threads=1)
    root = Path(tempfile.mkdtemp(prefix="bench-overlap-"))
    if args.critic:
        try:
            arms = [(False, False, "judgments after the play"), (True, True, "overlapped, one call at a time"),
                    (True, False, "overlapped, concurrent host")]
            rows = {name: run_critic(args.steps, overlap, serial, args.token_ms, root / f"critic{i}", args.overrides)
                    for i, (overlap, serial, name) in enumerate(arms)}
        finally:
            ray.shutdown()
        _critic_table(rows, args)
        return
    try:
        learner_ms = args.learner_ms
        if learner_ms is None:  # the update as long as the rollout, on one lockstep step
            probe = run(1, 0, args.token_ms, 0.0, root / "calibrate")[0]
            learner_ms = 1000 * probe["time/rollout_s"] / probe["update/loss_tokens"]
        sync = run(args.steps, 0, args.token_ms, learner_ms, root / "sync")
        off = run(args.steps, 1, args.token_ms, learner_ms, root / "off")
    finally:
        ray.shutdown()

    mean = _mean

    print(f"engine {args.token_ms:g} ms per decoded token, learner {learner_ms:.2f} ms per update token, "
          f"{args.steps} steps each (means over steps 2..{args.steps})")
    print("| max_off_policy_steps | step wall s | rollout s (waited) | update s | generated tokens/step | lag |")
    print("|---|---:|---:|---:|---:|---:|")
    for k, rows in ((0, sync), (1, off)):
        waited = mean(rows, "time/rollout_s") + mean(rows, "time/rollout_ahead_wait_s")
        print(f"| {k} | {mean(rows, 'wall_s'):.2f} | {waited:.2f} | {mean(rows, 'time/update_s'):.2f} | "
              f"{mean(rows, 'rollout/generated_tokens'):.0f} | {mean(rows, 'offpolicy/lag'):.0f} |")
    print(f"step wall time, lockstep / off-policy: {mean(sync, 'wall_s') / mean(off, 'wall_s'):.2f}x")


def _mean(rows: list[dict], key: str) -> float:
    return statistics.mean(r[key] for r in rows[1:])  # step 1 has nothing to overlap with (and warms up)


def _critic_table(rows: dict[str, list[dict]], args: argparse.Namespace) -> None:
    print(f"vLLM engine step + {args.token_ms:g} ms, actor and critic on it, {args.steps} lockstep steps each "
          f"(means over steps 2..{args.steps})")
    print("| critic | step wall s | play s | critic waited after the play s | critic busy s | generated tokens/step | "
          "x after the play |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    base = _mean(next(iter(rows.values())), "wall_s")
    for name, r in rows.items():
        print(f"| {name} | {_mean(r, 'wall_s'):.2f} | {_mean(r, 'time/generation_s'):.2f} | {_mean(r, 'time/critic_s'):.2f} | "
              f"{_mean(r, 'time/critic_busy_s'):.2f} | {_mean(r, 'rollout/generated_tokens'):.0f} | "
              f"{base / _mean(r, 'wall_s'):.2f} |")


if __name__ == "__main__":
    main()
