"""The PPO ratio and the adapter-sync check with a bf16 engine and a float32 learner (the GPU
situation in miniature, on CPU), side by side with a float32 engine, in one run.

1. ratio: the engine samples protocol turns with log-probs on fresh weights (B = 0); the GRPO
   update's clip_frac when pi_old is the engine's log-probs (the old path: `grpo_loss` fed the
   sampling log-probs) and when it is the learner's (the learner now: ratio 1, exactly 0), plus the
   importance-weight statistics the update returns.
2. sync: one update with a large lr, then the mean |logp_engine - logp_learner| per token on probes
   of whole turns (as the trainer's, aac/training/sync.py), with the engine serving the new adapter
   (synced) and the previous one (stale): the gap a correct engine shows sets the weights bound
   (`sync_tolerance` null: 0.05 for float32 engines, 0.5 otherwise); staleness is told by versions.

    python benchmarks/bench_ratio.py                    # tiny_qwen3
    python benchmarks/bench_ratio.py smollm2_135m 1e-3 4 24  # a real model; lr, turns, tokens per turn
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path


def main(model: str = "tiny_qwen3", lr: float = 1e-2, episodes: int = 8, max_tokens: int = 48) -> None:
    import numpy as np
    import torch

    from aac.config import LearnerConfig
    from aac.datasets import load_instances
    from aac.engines import GenRequest, Sampling, make_engine
    from aac.env.protocol import Episode
    from aac.learner import Learner, Sample, grpo_loss
    from aac.models import resolve_model
    from aac.training.sync import default_tolerance

    path = resolve_model(model)
    out = Path(tempfile.mkdtemp(prefix="bench-ratio-"))
    learner = Learner(LearnerConfig(backend="torch", lr=lr), path, seed=0)
    learner.save_adapter(out / "v0")
    engines = {dtype: make_engine("hf", path, dtype=dtype, seed=0) for dtype in ("bfloat16", "float32")}
    for engine in engines.values():
        engine.load_adapter("actor", str(out / "v0"), 0)
    prompts = [Episode(inst).prompt() for inst in load_instances("builtin:humaneval", split="train", limit=episodes)]
    rng = np.random.default_rng(0)
    print(f"{model}: {episodes} turns of <= {max_tokens} tokens, learner float32, update lr {lr}")
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
    # the trainer's probe: turns of the batch, longest first, until PROBE_TOKENS generated tokens
    turns = sorted(((s.prompt_ids, s.completion_ids) for s in batch), key=lambda t: -len(t[1]))
    probes = [turns[i::3] for i in range(3)]  # three disjoint probes of ~a third of the batch each
    for dtype, engine in engines.items():
        bound = default_tolerance(dtype, "float32")
        gaps = {}
        for name, version in (("stale", 0), ("synced", 1)):
            engine.load_adapter("actor", str(out / f"v{version}"), version)
            gaps[name] = [_gap(learner, engine, probe) for probe in probes]
        synced, stale = gaps["synced"], gaps["stale"]
        print(f"  sync [{dtype} engine, float32 learner] per-token gap over probes of "
              f"{[sum(len(c) for _, c in p) for p in probes]} tokens: synced max {max(synced):.4f}, "
              f"stale-by-one-step min {min(stale):.4f}; bound (sync_tolerance null) {bound}: synced "
              f"{'passes' if max(synced) <= bound else 'FAILS'} with margin x{bound / max(max(synced), 1e-9):.1f}; "
              "the stale engine is caught by its adapter version (v0 served, v1 expected), not by this gap")


def _gap(learner, engine, probe) -> float:
    import numpy as np

    diffs = [np.abs(np.asarray(learner.token_logprobs(p, c)) - np.asarray(engine.score(p, c, "actor")))
             for p, c in probe]
    return float(sum(d.sum() for d in diffs) / sum(len(d) for d in diffs))


if __name__ == "__main__":
    args = sys.argv[1:]
    main(*args[:1], *(float(a) for a in args[1:2]), *(int(a) for a in args[2:4]))
