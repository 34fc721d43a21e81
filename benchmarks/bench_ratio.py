"""The PPO ratio and the adapter-sync check with a bf16 engine and a float32 learner (the GPU
situation in miniature, on CPU), side by side with a float32 engine, in one run.

1. ratio: the engine samples protocol turns with log-probs on fresh weights (B = 0); the GRPO
   update's clip_frac when pi_old is the engine's log-probs (the old path: `grpo_loss` fed the
   sampling log-probs) and when it is the learner's (the learner now: ratio 1, exactly 0), plus the
   importance-weight statistics the update returns.
2. sync: one update with a large lr, then the mean |logp_engine - logp_learner| per token on the
   probes the trainer uses (a turn's first 32 tokens), with the engine serving the new adapter
   (synced) and the previous one (stale); `sync_tolerance` must lie between the two for both dtypes.

    python benchmarks/bench_ratio.py                    # tiny_qwen3
    python benchmarks/bench_ratio.py smollm2_135m 1e-3 4 24  # a real model; lr, turns, tokens per turn
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

PROBE_TOKENS = 32  # aac.train's probe: the first 32 tokens of a turn


def main(model: str = "tiny_qwen3", lr: float = 1e-2, episodes: int = 8, max_tokens: int = 48) -> None:
    import numpy as np
    import torch

    from aac.config import LearnerConfig, TrainConfig
    from aac.datasets import load_instances
    from aac.engines import GenRequest, Sampling, make_engine
    from aac.env.protocol import Episode
    from aac.learner import Learner, Sample, grpo_loss
    from aac.models import resolve_model

    path = resolve_model(model)
    out = Path(tempfile.mkdtemp(prefix="bench-ratio-"))
    learner = Learner(LearnerConfig(backend="torch", lr=lr), path, seed=0)
    learner.save_adapter(out / "v0")
    engines = {dtype: make_engine("hf", path, dtype=dtype, seed=0) for dtype in ("bfloat16", "float32")}
    for engine in engines.values():
        engine.load_adapter("actor", str(out / "v0"), 0)
    prompts = [Episode(inst).prompt() for inst in load_instances("builtin:humaneval", split="train", limit=episodes)]
    tol = TrainConfig().sync_tolerance
    rng = np.random.default_rng(0)
    print(f"{model}: {episodes} turns of <= {max_tokens} tokens, learner float32, update lr {lr}, "
          f"sync_tolerance {tol}")
    for dtype, engine in engines.items():
        res = engine.generate([GenRequest(p, Sampling(temperature=1.0, max_tokens=max_tokens, seed=1, logprobs=True),
                                          "actor") for p in prompts])
        samples = [Sample(r.prompt_ids, r.token_ids, r.logprobs, float(rng.choice([-1.0, 1.0])))
                   for r in res if r.token_ids]
        tokens = sum(len(s.completion_ids) for s in samples)
        ours = learner.old_logprobs(samples)
        # the old path: pi_old = the engine's sampling log-probs, on the weights that sampled them
        old_clip = sum(grpo_loss(torch.tensor([o]), torch.tensor([s.sampling_logprobs]), None,
                                 torch.full((1, len(o)), s.advantage), torch.ones(1, len(o)), 0.2, 0.0)[1]
                       ["clip_frac"].item() * len(o) for o, s in zip(ours, samples)) / tokens
        trial = Learner(LearnerConfig(backend="torch", lr=lr), path, seed=0)
        m = trial.update(samples)
        print(f"  ratio [{dtype} engine] {tokens} tokens: clip_frac old path {old_clip:.4f}, now {m['clip_frac']:.4f}; "
              f"logprob_gap {m['sampling/logprob_gap']:.4f}, is_weight mean {m['sampling/is_weight_mean']:.4f} "
              f"max {m['sampling/is_weight_max']:.3f}, truncated {m['sampling/is_truncated_frac']:.4f}")
        if dtype == "bfloat16":
            batch = samples

    learner.update(batch)  # the step whose adapter the engines must now serve
    learner.save_adapter(out / "v1")
    probes = [(s.prompt_ids, s.completion_ids[:PROBE_TOKENS]) for s in batch]
    for dtype, engine in engines.items():
        gaps = {}
        for name, version in (("stale", 0), ("synced", 1)):
            engine.load_adapter("actor", str(out / f"v{version}"), version)
            gaps[name] = [float(np.mean(np.abs(np.asarray(learner.token_logprobs(p, c))
                                               - np.asarray(engine.score(p, c, "actor"))))) for p, c in probes]
        synced, stale = gaps["synced"], gaps["stale"]
        print(f"  sync [{dtype} engine] per-token gap over {len(probes)} probes: synced mean {np.mean(synced):.4f} "
              f"max {max(synced):.4f}; stale mean {np.mean(stale):.4f} min {min(stale):.4f}; "
              f"tolerance {tol}: synced {'passes' if max(synced) <= tol else 'FAILS'}, "
              f"stale {'fails' if min(stale) > tol else 'PASSES'}")


if __name__ == "__main__":
    args = sys.argv[1:]
    main(*args[:1], *(float(a) for a in args[1:2]), *(int(a) for a in args[2:4]))
