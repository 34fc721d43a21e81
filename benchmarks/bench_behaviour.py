"""Learning shown by behaviour, in a controlled experiment with a known optimum (issue 10, item 6).

The `tiny` recipe (random ~150K-parameter Qwen3, HF engine, torch learner) with
- `env.constrained_format=true`: every turn decoded inside its phase's grammar, so the random model
  can act at all (0 format errors) and what it chooses is its inputs and YES/NO;
- `critic.kind=scripted`: a call is informative when it is new and reaches branch arcs the episode
  had not reached; s_hyp passes `rewards.stop_threshold` at the K-th informative call. The optimum:
  stop right after the K-th informative call;
- synthetic branching functions (aac/data/branches.py), where K informative calls are reachable.
Two objectives, same seeds, same steps: the default `rewards.schedule=aac_potential` and the paper's
table `rewards=aac` (summed into the `turn` estimator's episode term: the old default). Logged per
step: concluded %, premature stops, timeouts, queries, informative calls before a stop, the shares
of informative and of failed calls, the sampled YES rate at reflect turns after / before the K-th
informative call, the learner's P(YES) on fixed probes (the first batch's reflect turns at n >= K
and at n < K, computed exactly: no sampling noise; their gap is how far the decision depends on the
evidence), format errors. Runs go to a process pool; each writes its
metrics.jsonl as it goes, so `--tabulate` can table and plot runs cut short. Writes
`behaviour.json` and `behaviour.png` (mean and min-max over seeds) to --out.

    python benchmarks/bench_behaviour.py --steps 10 --seeds 3 --group-size 16 --functions 1 --jobs 3 --out runs/behaviour
"""

from __future__ import annotations

import argparse
import json
import logging
import multiprocessing
import time
from pathlib import Path

import numpy as np

SCHEDULES = {"aac_potential (default)": ("rewards=aac_potential",), "aac table, summed (old default)": ("rewards=aac",)}
METRICS = {  # what is plotted and tabled: metric key -> label
    "episode/concluded_pct": "concluded %",
    "episode/premature_stop_pct": "premature stops %",
    "episode/timed_out_pct": "timeouts %",
    "episode/queries_mean": "queries / episode",
    "episode/informativeness_at_stop_mean": "informative calls before a stop",
    "calls/informative_pct": "informative calls % of calls",
    "calls/failed_pct": "failed calls % of calls",
    "decision/yes_at_k_pct": "YES % at reflects with n >= K",
    "decision/yes_before_k_pct": "YES % at reflects with n < K",
    "probe/p_yes_at_k": "P(YES | n >= K), fixed probes",
    "probe/p_yes_before_k": "P(YES | n < K), fixed probes",
    "format_errors": "format errors / episode",
}
PROBES = 12  # reflect turns of the first batch whose P(YES) is followed


def experiment_overrides(data: Path, *, k: int, lr: float, group_size: int, functions: int, turns: int,
                         steps: int) -> list[str]:
    """The controlled setting on top of `+recipe=tiny` (shared with tests/test_train.py)."""
    return [f"env.data={data}", "env.split=all", "env.limit=null", "critic.kind=scripted", f"critic.scripted_k={k}",
            "env.constrained_format=true", f"env.max_steps={turns}", "rollout.max_tokens_per_turn=32",
            f"rollout.group_size={group_size}", f"rollout.functions_per_step={functions}", f"learner.lr={lr}",
            f"max_steps={steps}", "save_every=1000", "check_sync=false", "rollout.placement=local"]


def reflect_probes(batch, k_reached: bool) -> list[tuple[list[int], list[int]]]:
    """The batch's reflect turns whose episode had (`k_reached`) or had not reached K informative
    calls, as (prompt ids, reply ids). With the scripted critic a reflect turn's hypothesis score
    is 1.0 exactly when n >= K."""
    return [(t.prompt_ids, t.token_ids) for ep in batch.episodes for t in ep.turns
            if t.phase == "reflect" and t.score is not None and (t.score == 1.0) == k_reached]


def call_shares(batch) -> dict[str, float]:
    """Shares of the batch's calls that were informative (the plan before a call is scored 1.0
    exactly when its call was) and that failed (the input turn's reward is negative exactly when the
    call raised: a non-int literal, which the branch rows' validator rejects)."""
    plans = [t.score for ep in batch.episodes for t in ep.turns if t.judged == "informativeness" and t.score is not None]
    inputs = [t.reward for ep in batch.episodes for t in ep.turns if t.phase == "input"]
    return {"calls/informative_pct": 100 * float(np.mean(plans)) if plans else None,
            "calls/failed_pct": 100 * float(np.mean([r < 0 for r in inputs])) if inputs else None}


def yes_probability(model, matchers, prompt_ids: list[int], reply_ids: list[int], prune: float = 1e-4) -> float:
    """P(Decision: YES) under `model` decoding inside the reflect grammar as the engine does
    (`matchers`: a MatcherCache; masked softmax at temperature 1). The reply's own tokens up to
    "Decision: " are kept, and the mass of every tokenization of the decision after them is summed
    (branches under `prune` dropped). Deterministic: no sampling noise."""
    import torch

    from aac.env.grammar import turn_grammar
    from aac.env.protocol import Phase

    matcher = matchers.get(turn_grammar(Phase.REFLECT, 1))  # the arity only shapes the input grammar
    texts = matchers.token_texts
    head, cut = "", 0
    for tok in reply_ids:  # the longest run of the reply's tokens that stays inside "Decision: "
        if not texts[tok] or not "Decision: ".startswith(head + texts[tok]):
            break
        head, cut = head + texts[tok], cut + 1
    yes, no = "Decision: YES", "Decision: NO"

    def mass(ids: list[int], text: str, weight: float) -> float:
        allowed = matcher.allowed(matcher.step_text(matcher.start, text))
        with torch.no_grad():
            logits = model(torch.tensor([ids])).logits[0, -1]
        total = 0.0
        for tok, p in zip(allowed, torch.softmax(logits[allowed].float(), 0).tolist()):
            nxt = text + texts[tok]
            if nxt.startswith(yes):
                total += p
            elif not nxt.startswith(no) and p * weight > prune:
                total += p * mass(ids + [tok], nxt, p * weight)
        return total

    return mass(list(prompt_ids) + list(reply_ids[:cut]), head, 1.0)


def run_one(job: tuple[list[str], Path]) -> list[dict]:
    """One training run; per step also the YES rates by n >= K, and P(YES | n >= K) on the first
    batch's reflect turns under the weights after each update (`yes_probability`: no sampling noise)."""
    overrides, out = job
    import torch

    torch.set_num_threads(1)  # a 150K-parameter model: threads only add overhead
    from aac.config import compose
    from aac.engines.constrained import MatcherCache
    from aac.training import Trainer

    class BehaviourTrainer(Trainer):
        probes = None

        def rollout(self, *args, **kwargs):
            self.last = super().rollout(*args, **kwargs)
            return self.last

        def train_step(self):  # the extra metrics go into the step's row of metrics.jsonl
            m = super().train_step()
            tok = self.engine.tokenizer
            for key, reached in (("decision/yes_at_k_pct", True), ("decision/yes_before_k_pct", False)):
                said = ["YES" in tok.decode(reply) for _, reply in reflect_probes(self.last, k_reached=reached)]
                m[key] = 100 * float(np.mean(said)) if said else None
            m.update(call_shares(self.last))
            if self.probes is None:
                self.probes = {key: reflect_probes(self.last, k_reached=reached)[:PROBES]
                               for key, reached in (("probe/p_yes_at_k", True), ("probe/p_yes_before_k", False))}
                self.matchers = MatcherCache(tok, self.engine.eos_ids)
            policy = self.learner.actor.policy
            policy.eval()
            for key, probes in self.probes.items():
                m[key] = float(np.mean([yes_probability(policy, self.matchers, *p) for p in probes])) if probes else None
            # format errors per episode: parse failures summed over the phases
            m["format_errors"] = sum(m.get(f"parse_fail/{p}_rate") or 0.0 for p in ("reasoning", "input", "reflect"))
            return m

    return train_and_read(BehaviourTrainer(compose("+recipe=tiny", *overrides), out), out)


def train_and_read(trainer, out: Path) -> list[dict]:
    """Run `trainer` to its end, close it, and return the rows of its metrics.jsonl in `out`."""
    from aac.metrics import read

    try:
        trainer.run()
    finally:
        trainer.close()
    return read(out / "metrics.jsonl")


def plot(results: dict, path: Path, metrics: dict = METRICS, grid: tuple[int, int] = (3, 4)) -> None:
    """One panel per metric: each run family's mean over seeds, and its min-max band."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(*grid, figsize=(4.5 * grid[1], 3.3 * grid[0]))
    for ax, (key, label) in zip(axes.flat, metrics.items()):
        for name, runs in results.items():
            curves = np.array([[np.nan if r.get(key) is None else r[key] for r in rows] for rows in runs.values()])
            x = np.arange(1, curves.shape[1] + 1)
            line, = ax.plot(x, np.nanmean(curves, 0), label=name)
            ax.fill_between(x, np.nanmin(curves, 0), np.nanmax(curves, 0), color=line.get_color(), alpha=0.2)
        ax.set_title(label)
        ax.set_xlabel("step")
    for ax in axes.flat[len(metrics):]:
        ax.axis("off")
    axes.flat[0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=90)


def _last(rows: list[dict], key: str, n: int = 3) -> float:
    vals = [r[key] for r in rows[-n:] if r.get(key) is not None]
    return float(np.mean(vals)) if vals else float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--k", type=int, default=1, help="informative calls that pass the stop threshold")
    # 1e-2: at 3e-2 the tiny actor moves only its marginal P(YES), even supervised (probe_decision.py)
    ap.add_argument("--lr", type=float, default=1e-2)
    ap.add_argument("--group-size", type=int, default=16)
    ap.add_argument("--functions", type=int, default=2, help="functions per step")
    ap.add_argument("--turns", type=int, default=18, help="env.max_steps (T_max)")
    ap.add_argument("--jobs", type=int, default=2, help="runs in parallel (one process each)")
    ap.add_argument("--literals", help="env.input_literals, comma-separated (default: the grammar's LITERALS); "
                    "e.g. 0,1,2,3,5,7,-1,10: ints only, which every branch row's validator accepts")
    ap.add_argument("--schedules", default=",".join(n.split()[0] for n in SCHEDULES),
                    help="which objectives to run, comma-separated: " + ", ".join(n.split()[0] for n in SCHEDULES))
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="an extra config override for every run, e.g. rewards.w_step=3 (repeatable)")
    ap.add_argument("--out", type=Path, default=Path("runs/behaviour"))
    ap.add_argument("--tabulate", action="store_true",
                    help="no training: table and plot the runs already in --out (cut to their common length)")
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)
    from aac.data.branches import write_branch_rows

    data = write_branch_rows(args.out / "branches.jsonl")
    common = experiment_overrides(data, k=args.k, lr=args.lr, group_size=args.group_size,
                                  functions=args.functions, turns=args.turns, steps=args.steps)
    if args.literals:
        common.append("env.input_literals=[" + ",".join(f"'{lit}'" for lit in args.literals.split(",")) + "]")
    common += args.set
    names = [n for n in SCHEDULES if n.split()[0] in args.schedules.split(",")]
    if not names:
        raise SystemExit(f"--schedules {args.schedules!r}: none of " + ", ".join(n.split()[0] for n in SCHEDULES))
    jobs = [(name, seed) for name in names for seed in range(args.seeds)]
    dirs = [args.out / f"{name.split()[0]}_seed{seed}" for name, seed in jobs]
    started = time.perf_counter()
    if args.tabulate:
        from aac.metrics import read

        done = [read(d / "metrics.jsonl") for d in dirs]
        done = [rows[:min(map(len, done))] for rows in done]
    else:
        with multiprocessing.get_context("spawn").Pool(args.jobs) as pool:
            done = pool.map(run_one, [([*common, *SCHEDULES[name], f"seed={seed}"], d)
                                      for (name, seed), d in zip(jobs, dirs)], chunksize=1)
    results: dict[str, dict[int, list[dict]]] = {}
    for (name, seed), rows in zip(jobs, done):
        results.setdefault(name, {})[seed] = rows
    print(f"total {time.perf_counter() - started:.0f}s; per seed, first step -> mean of the last 3 steps")
    for key, label in METRICS.items():
        print(f"  {label}")
        spans = {}
        for name, runs in results.items():
            last = [_last(rows, key) for rows in runs.values()]
            spans[name] = (min(last), max(last))
            print(f"    {name:32s} " + "  ".join(f"{_last(rows[:1], key, 1):6.2f} -> {v:6.2f}"
                                                  for rows, v in zip(runs.values(), last)))
        if len(spans) == 2:
            (lo_a, hi_a), (lo_b, hi_b) = spans.values()
            print(f"    seed ranges {'separate' if hi_a < lo_b or hi_b < lo_a else 'overlap'}")
    (args.out / "behaviour.json").write_text(json.dumps(
        {name: {seed: [{k: r.get(k) for k in METRICS} for r in rows] for seed, rows in runs.items()}
         for name, runs in results.items()}, indent=1))
    plot(results, args.out / "behaviour.png")
    print(f"wrote {args.out / 'behaviour.json'} and {args.out / 'behaviour.png'}")


if __name__ == "__main__":
    main()
