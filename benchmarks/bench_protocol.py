"""How well the actor follows the protocol: per phase, parse failures, parroted prompt lines, tokens.

Plays N episodes (functions x group) with the real engine serving the recipe's base model (no LoRA:
the untrained actor), the recipe's protocol and sampling, and reports per phase: the parse-failure
rate, the share of replies that copy a line of their prompt back, mean generated tokens and the
share cut at the token limit; per episode: concluded %, queries, YES share of parsed reflections.

Each `--variant` (config overrides) plays the same episodes with the same seeds on one engine.
`--ref COMMIT` also runs this same script on the tree at COMMIT (a temporary git worktree, in a
subprocess with its own PYTHONPATH, the recipe as is) and prints all of them side by side.

    python benchmarks/bench_protocol.py [--functions 8 --group 2] [--ref 9454b05] [--show 2]
        [--variant "env.prompt_style=compact env.answer_cues=true" ...] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

PHASES = ("reasoning", "input", "reflect")
MIN_PARROT_CHARS = 16  # shorter reply lines ("Decision: NO") are format, not copying


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


def parrots(reply: str, messages: list[dict]) -> bool:
    """Whether a line of `reply` (>= MIN_PARROT_CHARS, normalised) occurs in the prompt's text."""
    prompt = _norm(" \n ".join(m["content"] for m in messages))
    return any(len(line) >= MIN_PARROT_CHARS and line in prompt for line in map(_norm, reply.splitlines()))


def measure(recipe: str, variants: list[list[str]], functions: int, group: int, show: int) -> list[dict]:
    """Each variant's (config overrides') episodes, played one after another on one engine."""
    from aac.assembly import training_protocol
    from aac.config import compose
    from aac.datasets import load_instances
    from aac.env.protocol import sandbox_caller
    from aac.placement import EngineSet
    from aac.rollout import driver as drv
    from aac.sandbox import SandboxPool

    cfgs = [compose(f"+recipe={recipe}", *overrides) for overrides in variants]
    base = cfgs[0]
    instances = load_instances(base.env.data, split=base.env.split, limit=functions)
    specs = [drv.EpisodeSpec(k, inst, group=k // group) for k, inst in
             enumerate(inst for inst in instances for _ in range(group))]
    engines = EngineSet(base.model, base.rollout, base.seed, use_ray=False)
    out = []
    try:
        engine = engines.get(base.rollout.engine, base.model.name)  # no LoRA slots: the base model, fastest
        with SandboxPool.from_config(base.env.sandbox) as pool:
            pool.keep_warm(len(instances))
            for overrides, cfg in zip(variants, cfgs):
                r = cfg.rollout
                # the training rollout's sampling (the workers' own builder, where the tree has one)
                build = getattr(drv.SamplingSpec, "from_config", None)
                sampling = build(r, r.top_p) if build else drv.SamplingSpec(r.temperature, r.top_p,
                                                                             r.max_tokens_per_turn)
                driver = drv.EpisodeDriver(engine, training_protocol(cfg.env), sandbox_caller(pool), sampling,
                                           seed=cfg.seed)
                played, stats = driver.play(specs)
                out.append(summarize(overrides, played, stats, show))
    finally:
        engines.close()
    return out


def summarize(overrides: list[str], played: list, stats, show: int) -> dict:
    per = {p: defaultdict(float) for p in PHASES}
    examples: dict[str, list[str]] = defaultdict(list)
    for ep in played:
        for turn in ep.turns:
            s, res = turn.step, turn.result
            m = per[s.phase.value]
            m["turns"] += 1
            m["fail"] += not s.parse_ok
            m["parrot"] += parrots(s.text, s.prompt)
            m["tokens"] += len(res.token_ids)
            m["cut"] += res.finish_reason == "length"
            if s.phase.value == "reflect" and s.parse_ok:
                m["parsed"] += 1
                m["yes"] += bool(s.decision)
            if len(examples[s.phase.value]) < show:
                examples[s.phase.value].append(s.text)
    n = len(played)
    phases = {p: {"turns": int(m["turns"]), "parse_fail": m["fail"] / max(m["turns"], 1),
                  "parrot": m["parrot"] / max(m["turns"], 1), "tokens": m["tokens"] / max(m["turns"], 1),
                  "cut": m["cut"] / max(m["turns"], 1),
                  **({"yes_of_parsed": m["yes"] / m["parsed"] if m["parsed"] else 0.0} if p == "reflect" else {})}
              for p, m in per.items()}
    return {"overrides": overrides, "episodes": n, "phases": phases,
            "concluded": sum(ep.episode.concluded for ep in played) / n,
            "queries": sum(ep.episode.num_queries for ep in played) / n,
            "generation_s": stats.generation_s, "examples": dict(examples)}


def table(results: list[tuple[str, dict]]) -> str:
    rows = ["| run | phase | turns | parse fail | parrots | tokens/turn | cut at limit |",
            "|---|---|---:|---:|---:|---:|---:|"]
    for name, res in results:
        for p in PHASES:
            m = res["phases"][p]
            rows.append(f"| {name} | {p} | {m['turns']} | {m['parse_fail']:.0%} | {m['parrot']:.0%} | "
                        f"{m['tokens']:.1f} | {m['cut']:.0%} |")
    rows += ["", "| run | episodes | concluded | queries/episode | YES of parsed reflects | generation s |",
             "|---|---:|---:|---:|---:|---:|"]
    for name, res in results:
        rows.append(f"| {name} | {res['episodes']} | {res['concluded']:.0%} | {res['queries']:.2f} | "
                    f"{res['phases']['reflect']['yes_of_parsed']:.0%} | {res['generation_s']:.0f} |")
    return "\n".join(rows)


def run_ref(commit: str, argv: list[str]) -> dict:
    """This script's measurement on the tree at `commit` (a temporary worktree, its own PYTHONPATH)."""
    root = Path(__file__).resolve().parents[1]
    with tempfile.TemporaryDirectory() as tmp:
        tree, out = Path(tmp) / "ref", Path(tmp) / "ref.json"
        subprocess.run(["git", "-C", str(root), "worktree", "add", "--detach", str(tree), commit], check=True,
                       capture_output=True)
        try:
            env = {**os.environ, "PYTHONPATH": str(tree)}
            subprocess.run([sys.executable, str(Path(__file__).resolve()), *argv, "--json", str(out)],
                           check=True, env=env, cwd=tree)
            return json.loads(out.read_text())[0]
        finally:
            subprocess.run(["git", "-C", str(root), "worktree", "remove", "--force", str(tree)], check=False)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--recipe", default="smollm2_cpu")
    ap.add_argument("--functions", type=int, default=8)
    ap.add_argument("--group", type=int, default=2)
    ap.add_argument("--variant", action="append", default=None,
                    help="space-separated config overrides of one variant (repeat; '' = the recipe as is)")
    ap.add_argument("--ref", help="also measure the tree at this commit (the recipe as is)")
    ap.add_argument("--show", type=int, default=0, help="print this many replies per phase and variant")
    ap.add_argument("--json", help="write the measurements here")
    args = ap.parse_args()
    common = ["--recipe", args.recipe, "--functions", str(args.functions), "--group", str(args.group)]
    variants = [v.split() for v in (args.variant or [""])]
    results = []
    if args.ref:
        results.append((f"ref {args.ref}", run_ref(args.ref, common)))
    measured = measure(args.recipe, variants, args.functions, args.group, args.show)
    results += [(" ".join(res["overrides"]) or "recipe as is", res) for res in measured]
    if args.json:
        Path(args.json).write_text(json.dumps(measured, indent=1))
    for name, res in results:
        for p, texts in res["examples"].items():
            for t in texts:
                print(f"--- [{name}] {p}: {t!r}")
    print(f"{args.functions} functions x group {args.group}, recipe {args.recipe}")
    print(table(results))
    first = results[0]
    for name, res in results[1:]:
        print(f"parse fail, {first[0]} -> {name}: " + ", ".join(
            f"{p} {first[1]['phases'][p]['parse_fail']:.0%} -> {res['phases'][p]['parse_fail']:.0%}" for p in PHASES))


if __name__ == "__main__":
    main()
