"""Can the `tiny` actor learn, supervised, to say YES exactly when its latest call was informative?
A diagnostic for issue 10's behaviour experiment (benchmarks/bench_behaviour.py).

Reflect prompts of the synthetic branch rows (aac/data/branches.py) after one call with each of the
grammar's literals, in the experiment's protocol (paper style, constrained format). A first call is
informative when it returns without error and outside the context examples' class ('other'): then
the scripted critic's K = 1 optimum is YES, otherwise NO. The learner (tiny recipe: random ~150K Qwen3,
LoRA r4) takes SFT steps of 16 labelled reflect turns from 6 rows, from the same initial adapter at each
learning rate; every few steps it prints P(YES) (against NO, at the first decision token) on the
informative and the other prompts, for those 6 rows and for 2 held-out ones.

    python benchmarks/probe_decision.py --lrs 3e-2,1e-2 --steps 300
"""

from __future__ import annotations

import argparse
import functools
import math
import random
import tempfile
import time
from pathlib import Path


def reflect_rows(tokenizer) -> list[tuple[str, list[int], bool]]:
    """(row uid, reflect prompt ids, informative) for every branch row x literal."""
    from aac.data.branches import write_branch_rows
    from aac.datasets import load_instances
    from aac.engines.base import render_chat
    from aac.env.grammar import LITERALS
    from aac.env.protocol import Episode, ProtocolConfig, sandbox_caller

    data = write_branch_rows(Path(tempfile.mkdtemp()) / "branches.jsonl")
    instances = {i.uid: i for split in ("train", "test") for i in load_instances(str(data), split=split, limit=None)}
    protocol = ProtocolConfig(max_steps=18, constrained_format=True)
    rng = random.Random(0)
    out = []
    for uid in sorted(instances):
        for literal in LITERALS:
            episode = Episode(instances[uid], protocol, sandbox_caller(None))
            episode.step(f"call {rng.choice(['the', 'a', 'it'])} {literal}")
            episode.step(f"Input: ({literal},)")
            call = episode.steps[1].call
            out.append((uid, render_chat(tokenizer, episode.prompt()), call is not None and call.ok
                        and call.output != "other"))
    return out


def _p_yes(learner, prompt: list[int], yes: list[int], no: list[int]) -> float:
    a, b = (sum(learner.token_logprobs(prompt, ids)) for ids in (yes, no))
    return 1 / (1 + math.exp(b - a))


def _report(learner, lr: float, train, test, yes: list[int], no: list[int], step: int) -> None:
    cells = []
    for name, part in (("train", train), ("held out", test)):
        inf = [_p_yes(learner, p, yes, no) for _, p, y in part if y]
        other = [_p_yes(learner, p, yes, no) for _, p, y in part if not y]
        cells.append(f"{name} {sum(inf) / len(inf):.3f} vs {sum(other) / len(other):.3f}")
    print(f"lr {lr:g} step {step:4d}  P(YES | informative) vs P(YES | not): " + " | ".join(cells), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lrs", default="3e-2,1e-2", help="learning rates, comma-separated (3e-2: bench_behaviour's)")
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--batch", type=int, default=16)
    args = ap.parse_args()
    from transformers import AutoTokenizer

    from aac.config import compose
    from aac.learner import Learner, Sample
    from aac.models import resolve_model

    path = resolve_model("tiny_qwen3")
    tok = AutoTokenizer.from_pretrained(path)
    rows = reflect_rows(tok)
    held_out = sorted({uid for uid, _, _ in rows})[-2:]
    train = [r for r in rows if r[0] not in held_out]
    test = [r for r in rows if r[0] in held_out]
    yes, no = (tok(f"Decision: {d}\nSummary: it.", add_special_tokens=False)["input_ids"] for d in ("YES", "NO"))
    k = next(i for i, (a, b) in enumerate(zip(yes, no)) if a != b)  # the first token that differs
    print(f"train {len(train)} prompts ({sum(r[2] for r in train)} informative), held out {len(test)} "
          f"({sum(r[2] for r in test)}) from rows {held_out}")
    for lr in (float(x) for x in args.lrs.split(",")):
        learner = Learner(compose("+recipe=tiny", f"learner.lr={lr}").learner, path, seed=0)
        report = functools.partial(_report, learner, lr, train, test, yes[:k + 1], no[:k + 1])
        rng = random.Random(0)
        start = time.perf_counter()
        report(0)
        for step in range(1, args.steps + 1):
            batch = rng.sample(train, args.batch)
            learner.sft_update([Sample(p, list(yes if y else no), [], 0.0) for _, p, y in batch])
            if step % max(5, args.steps // 8) == 0 or step == args.steps:
                report(step)
        print(f"lr {lr:g}: {time.perf_counter() - start:.0f}s")


if __name__ == "__main__":
    main()
