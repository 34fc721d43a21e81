"""`python -m aac.eval.compare runs=RUN_DIR,RUN_DIR[,...] [out=DIR]`: runs side by side on their common instances,
paired bootstrap p-values between every two runs, and the per-instance MAX over runs."""

from __future__ import annotations

from itertools import combinations
from pathlib import Path

from aac.cli import Key, count, items, parse_keys
from aac.errors import entry_point
from aac.eval import records
from aac.eval.report import fmt, summarize
from aac.eval.stats import mean_std, paired_bootstrap, pct, per_instance_max


def _names(run_dirs: list[Path], identities: list[dict]) -> list[str]:
    names = [ident.get("name") or d.name for d, ident in zip(run_dirs, identities)]
    if len(set(names)) < len(names):  # same model twice (e.g. two modes): fall back to folders
        names = [str(d) for d in run_dirs]
    return names


def compare(run_dirs: list[str | Path], *, resamples: int = 10_000, seed: int = 0) -> dict:
    dirs = [Path(d) for d in run_dirs]
    loaded = [records.load_run(d) for d in dirs]
    names = _names(dirs, [ident for ident, _, _ in loaded])
    scored = [{e["uid"] for e in eps if e["uid"] in scores} for _, eps, scores in loaded]
    common = sorted(set.intersection(*scored)) if scored else []
    if not common:
        raise records.RunDirError("the runs share no scored instance: nothing to compare")
    keep = set(common)
    runs, score_by, code_by = [], [], []
    for name, d, (ident, eps, scores) in zip(names, dirs, loaded):
        eps = [e for e in eps if e["uid"] in keep]
        runs.append({"name": name, "dir": str(d), "mode": ident.get("mode"), **summarize(ident, eps, scores)})
        score_by.append({u: scores[u]["judge"]["score"] for u in common})
        code_by.append({u: scores[u].get("code_match", {}).get("score") for u in common})
    # description scores only where every run has one (rows without a gold description have none)
    judged = [u for u in common if all(s[u] is not None for s in score_by)]
    score_by = [{u: s[u] for u in judged} for s in score_by]
    coded = [u for u in common if all(c[u] is not None for c in code_by)]  # eval.code_match=false: none
    code_by = [{u: c[u] for u in coded} for c in code_by]
    best_score, best_code = per_instance_max(score_by), per_instance_max(code_by)
    mean, std = mean_std(list(best_score.values()))
    pvalues = []
    for i, j in combinations(range(len(runs)), 2):
        pvalues.append({
            "a": names[i], "b": names[j],
            "score_p": paired_bootstrap([score_by[i][u] for u in judged], [score_by[j][u] for u in judged],
                                        resamples=resamples, seed=seed) if judged else None,
            "code_match_p": paired_bootstrap([code_by[i][u] for u in coded], [code_by[j][u] for u in coded],
                                             resamples=resamples, seed=seed) if coded else None,
        })
    return {
        "n_common": len(common),
        "resamples": resamples,
        "runs": runs,
        "max": {"description_score": {"mean": mean, "std": std,
                                      "pct_ge_3": pct([v >= 3 for v in best_score.values()])},
                "code_match": {"mean": mean_std(list(best_code.values()))[0],
                               "pct_eq_1": pct([v >= 1 for v in best_code.values()])}},
        "pvalues": pvalues,
        "per_instance": {"uids": common, "score": {n: [s.get(u) for u in common] for n, s in zip(names, score_by)},
                         "code_match": {n: [c.get(u) for u in common] for n, c in zip(names, code_by)},
                         "score_max": [best_score.get(u) for u in common],
                         "code_match_max": [best_code.get(u) for u in common]},
    }


def render_markdown(result: dict) -> str:
    lines = [f"# PAU comparison on {result['n_common']} common instances", "",
             "| run | mode | score | ≥ 3 | code match | = 1 | ≥ 0.5 | queries | informative | concluded | format err |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in result["runs"]:
        ds, cm = r["description_score"], r["code_match"]
        lines.append(f"| {r['name']} | {r['mode'] or ''} | {fmt(ds['mean'])} ± {fmt(ds['std'])} | "
                     f"{fmt(ds['pct_ge_3'], 1)} % | {fmt(100 * cm['mean'], 2)} % | {fmt(cm['pct_eq_1'], 1)} % | "
                     f"{fmt(cm['pct_ge_0_5'], 1)} % | {fmt(r['queries_mean'])} | {fmt(r['informative_calls_mean'])} | "
                     f"{fmt(r['concluded_pct'], 1)} % | "
                     f"{fmt(100 * r['format_error_rate'], 1)} % |")
    mx = result["max"]
    lines.append(f"| **MAX** (per instance) | | {fmt(mx['description_score']['mean'])} ± "
                 f"{fmt(mx['description_score']['std'])} | {fmt(mx['description_score']['pct_ge_3'], 1)} % | "
                 f"{fmt(100 * mx['code_match']['mean'], 2)} % | {fmt(mx['code_match']['pct_eq_1'], 1)} % | | | | | |")
    if result["pvalues"]:
        lines += ["", f"Paired bootstrap ({result['resamples']:,} resamples): one-sided p-value that A is not "
                  "better than B (small: A is better; near 1: B is better).", "",
                  "| A | B | p (score) | p (code match) |", "|---|---|---|---|"]
        lines += [f"| {p['a']} | {p['b']} | {fmt(p['score_p'], 4)} | {fmt(p['code_match_p'], 4)} |"
                  for p in result["pvalues"]]
    return "\n".join(lines) + "\n"


@entry_point
def main(argv: list[str] | None = None) -> None:
    keys = (Key("runs", "eval run directories (written by python -m aac.eval), comma-separated", items, [], required=True),
            Key("out", "folder for compare.md, compare.json and score_distribution.png"),
            Key("resamples", "paired bootstrap resamples", count, 10_000), Key("seed", "seeds the bootstrap", int, 0))
    args = parse_keys(argv, keys, "usage: python -m aac.eval.compare runs=RUN_DIR,RUN_DIR[,...] [out=DIR]",
                      doc=__doc__.split("\n\n")[0])
    result = compare(args.runs, resamples=args.resamples, seed=args.seed)
    text = render_markdown(result)
    print(text, end="")
    if args.out:
        from aac.eval.plot import plot_score_distribution

        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "compare.md").write_text(text, encoding="utf-8")
        records.write_json(out / "compare.json", result)
        per = result["per_instance"]
        plot_score_distribution({**per["score"], "MAX": per["score_max"]}, out / records.PLOT)


if __name__ == "__main__":
    main()
