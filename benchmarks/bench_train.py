"""Where a training step's time goes, on CPU, measured side by side in one run.

1. rollout: a full AAC rollout step (engine + sandbox + protocol + critic) → generated tokens/s;
2. engine only: the same engine generating for the same batch shape (same first prompts, same
   number of rounds and tokens per turn) with no env and no critic → tokens/s;
   their ratio is the orchestration overhead;
3. update: the GRPO update on that rollout's turns → tokens/s (all tokens, and loss tokens).

    python benchmarks/bench_train.py                       # smollm2_cpu recipe, vLLM engine
    python benchmarks/bench_train.py rollout.engine=hf     # any override of the recipe
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path


def main(overrides: list[str]) -> None:
    from aac.config import compose
    from aac.engines.base import GenRequest, Sampling
    from aac.env.protocol import Episode, ProtocolConfig
    from aac.training import Trainer

    cfg = compose("+recipe=smollm2_cpu", "rollout.placement=local", "logging.wandb_mode=disabled",
                  "logging.progress=false", *overrides)
    out = Path(tempfile.mkdtemp(prefix="bench-train-"))
    t0 = time.perf_counter()
    trainer = Trainer(cfg, out)
    print(f"setup: {time.perf_counter() - t0:.1f}s ({cfg.rollout.engine} engine, {cfg.learner.backend} learner)")
    try:
        idx = trainer.order.indices(0)
        groups = [[trainer.instances[i]] * cfg.rollout.group_size for i in idx]
        trainer.rollout(groups[:1])  # warm-up: first-call compilation and caches

        t0 = time.perf_counter()
        batch = trainer.rollout(groups)
        t_roll = time.perf_counter() - t0
        n_tok = batch.generated_tokens
        rounds = max(len(ep.turns) for ep in batch.episodes)

        engine = trainer.engine
        proto = ProtocolConfig.from_env(cfg.env)
        prompts = [Episode(inst, proto, lambda *a: None).prompt() for g in groups for inst in g]
        per_turn = max(1, round(n_tok / sum(len(ep.turns) for ep in batch.episodes)))
        sampling = Sampling(temperature=cfg.rollout.temperature, max_tokens=per_turn, logprobs=True)
        t0 = time.perf_counter()
        n_pure = 0
        for _ in range(rounds):
            res = engine.generate([GenRequest(p, sampling, "actor") for p in prompts])
            n_pure += sum(len(r.token_ids) for r in res)
        t_pure = time.perf_counter() - t0

        samples = trainer.samples(batch, trainer.advantages(batch))
        t0 = time.perf_counter()
        upd = trainer.learner.update(samples)
        t_upd = time.perf_counter() - t0
    finally:
        trainer.close()

    roll_tps, pure_tps = n_tok / t_roll, n_pure / t_pure
    total_tokens = sum(len(s.prompt_ids) + len(s.completion_ids) for s in samples)
    loss_tokens = sum(len(s.completion_ids) for s in samples)
    print(f"episodes {len(batch.episodes)}, rounds {rounds}, generated tokens {n_tok}")
    print(f"rollout (env + sandbox + critic): {t_roll:6.1f}s  {roll_tps:7.1f} tok/s  "
          f"[generation {batch.timings['generation']:.1f}s, critic {batch.timings['critic']:.1f}s, "
          f"sandbox {batch.timings['sandbox']:.2f}s]")
    print(f"engine only, same shape:          {t_pure:6.1f}s  {pure_tps:7.1f} tok/s  ({n_pure} tokens)")
    print(f"ratio rollout/engine-only tok/s:  {roll_tps / pure_tps:.2f}  "
          f"(critic share of the rollout: {batch.timings['critic'] / t_roll:.0%})")
    print(f"update: {t_upd:6.1f}s  {total_tokens / t_upd:7.1f} tok/s (all {total_tokens} tokens), "
          f"{loss_tokens / t_upd:6.1f} loss tok/s, loss {upd.get('loss', float('nan')):.4f}")


if __name__ == "__main__":
    main(sys.argv[1:])
