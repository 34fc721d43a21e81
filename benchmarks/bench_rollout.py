"""Continuous batching vs lockstep rollouts, side by side in one run (the episode driver).

The `tiny` recipe's real HF engine writes every turn; only the reflect decision is scripted, so
that the 8 episodes have very different, known lengths (episode k says YES in cycle STOPS[k]).
Three schedules play the same 8 episodes with the same seeds:

- lockstep, all at once: every episode in one batch until the longest ends (the old training loop);
- lockstep in waves of S: S episodes at a time, a wave waits for its longest (what a bounded batch
  of S slots gives without refilling);
- continuous, S slots: the driver refills a finished episode's slot at once.

Reported per schedule: engine calls, idle slots per call (slots minus requests), wall time.

    python benchmarks/bench_rollout.py [--slots 4]
"""

from __future__ import annotations

import argparse
import time

from aac.engines import Engine, GenResult
from aac.rollout.driver import MAX_TURNS, EpisodeDriver, EpisodeSpec, SamplingSpec

STOPS = [13, 2, 8, 1, 5, 12, 2, 3]  # the cycle in which episode k concludes (a shuffled mix)
SEED = 7


class ScriptedStops(Engine):
    """The real engine's replies, except that a reflect turn of episode k says YES from cycle STOPS[k]
    (episode and turn are read back from the driver's seeding rule)."""

    def __init__(self, engine: Engine):
        super().__init__()
        self.engine = engine

    def generate(self, requests):
        results = self.engine.generate(requests)
        out = []
        for req, res in zip(requests, results):
            key, turn = divmod(req.sampling.seed - SEED * 1_000_003 * MAX_TURNS, MAX_TURNS)
            if turn % 3 == 2:  # reflect
                decision = "YES" if turn // 3 + 1 >= STOPS[key] else "NO"
                res = GenResult(f"Decision: {decision}\nSummary: it returns something.", res.prompt_ids,
                                res.token_ids, res.logprobs, res.finish_reason, res.adapter, res.adapter_version)
            out.append(res)
        return out

    def load_adapter(self, name, path, version):
        self.engine.load_adapter(name, path, version)

    def adapter_version(self, name):
        return self.engine.adapter_version(name)

    def score(self, prompt_ids, completion_ids, adapter):
        return self.engine.score(prompt_ids, completion_ids, adapter)

    def close(self):
        self.engine.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--slots", type=int, default=4)
    args = ap.parse_args()

    from aac.assembly import training_protocol
    from aac.config import compose
    from aac.datasets import load_instances
    from aac.env.protocol import sandbox_caller
    from aac.placement import EngineSet
    from aac.sandbox import SandboxPool

    cfg = compose("+recipe=tiny", "env.max_steps=60")
    instances = load_instances(cfg.env.data, split="train", limit=len(STOPS))
    engines = EngineSet(cfg.model, cfg.rollout, cfg.seed, use_ray=False)
    engine = ScriptedStops(engines.actor())
    protocol = training_protocol(cfg.env)
    sampling = SamplingSpec(1.0, 1.0, cfg.rollout.max_tokens_per_turn)
    specs = [EpisodeSpec(k, inst) for k, inst in enumerate(instances)]
    rows = []
    with SandboxPool.from_config(cfg.env.sandbox) as pool:
        caller = sandbox_caller(pool)

        def play(chunks, slots):
            calls = idle = 0
            t0 = time.perf_counter()
            turns = []
            for chunk in chunks:
                driver = EpisodeDriver(engine, protocol, caller, sampling, seed=SEED, max_live=slots)
                played, stats = driver.play(chunk)
                calls += stats.engine_calls
                idle += stats.idle_slots
                turns += [len(p.turns) for p in played]
            return calls, idle, time.perf_counter() - t0, turns

        s = args.slots
        schedules = [
            ("lockstep, all at once", [specs], len(specs)),
            (f"lockstep, waves of {s}", [specs[i:i + s] for i in range(0, len(specs), s)], s),
            (f"continuous, {s} slots", [specs], s),
        ]
        for name, chunks, slots in schedules:
            calls, idle, wall, turns = play(chunks, slots)
            rows.append((name, slots, calls, idle / calls, wall, turns))
    engines.close()
    print(f"episode turns: {rows[0][5]} (reflect YES in cycles {STOPS})")
    print("| schedule | slots | engine calls | idle slots per call | wall s |\n|---|---:|---:|---:|---:|")
    for name, slots, calls, idle, wall, _ in rows:
        print(f"| {name} | {slots} | {calls} | {idle:.2f} | {wall:.1f} |")
    waves, cont = rows[1], rows[2]
    print(f"continuous vs waves of {args.slots}: engine calls x{cont[2] / waves[2]:.2f}, "
          f"idle slots per call x{cont[3] / max(waves[3], 1e-9):.2f}")
    print(f"continuous vs all at once: idle slots per call {cont[3]:.2f} vs {rows[0][3]:.2f}")
    assert all(r[5] == rows[0][5] for r in rows), "the schedules played different episodes"


if __name__ == "__main__":
    main()
