"""report.json / report.md of one run: the PAU metrics (docs/method.md §9), overall and per source."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

from aac.eval import records
from aac.eval.query_efficiency import summarize_efficiency
from aac.eval.stats import mean_std, pct, score_histogram
from aac.rollout.record import call_counts


def _code_match_block(values: list[float]) -> dict:
    mean, std = mean_std(values)
    return {"mean": mean, "std": std, "pct_eq_1": pct([v >= 1.0 for v in values]),
            "pct_ge_0_5": pct([v >= 0.5 for v in values])}


def _metrics(episodes: list[dict], scores: dict[str, dict]) -> dict:
    scored = [scores[e["uid"]] for e in episodes if e["uid"] in scores]
    judged = [s for s in scored if s["judge"]["score"] is not None]  # rows without a gold description: no score
    ratings = [s["judge"]["score"] for s in judged]
    mean, std = mean_std(ratings)
    turns = sum(e["turns"] for e in episodes)
    out = {
        "n": len(episodes),
        "n_scored": len(scored),
        "description_score": {
            "mean": mean, "std": std, "pct_at": score_histogram(ratings), "pct_ge_3": pct([r >= 3 for r in ratings]),
            "judge_unparsable_pct": pct([not s["judge"]["parsed"] for s in judged]),
            "n_without_gold_description": len(scored) - len(judged),
        },
        "code_match": _code_match_block([s["code_match"]["score"] for s in scored if "code_match" in s]),
        "queries_mean": mean_std([e["num_queries"] for e in episodes])[0],
        # calls reaching new branch arcs or a new result (aac/eval/informative.py); runs scored before it: none
        "informative_calls_mean": mean_std([s["informative_calls"] for s in scored if "informative_calls" in s])[0],
        "concluded_pct": pct([e["concluded"] for e in episodes]),
        "format_error_rate": sum(e["format_errors"] for e in episodes) / turns if turns else float("nan"),
        "actor_engine_errors": sum(e.get("engine_errors", 0) for e in episodes),
        "sandbox": call_counts(episodes),  # calls timed out or failed by the sandbox: a hanging black box shows
    }
    gold = [s["code_match_gold"]["score"] for s in scored if s.get("code_match_gold")]
    if gold:
        out["code_match_gold"] = _code_match_block(gold)
    calls = _service_calls(scored)
    if calls:
        out["service_calls"] = calls
    efficiency = summarize_efficiency([s.get("query_efficiency") for s in scored])
    if efficiency is not None:  # rows with mutants (aac/eval/query_efficiency.py)
        out["query_efficiency"] = efficiency
    return out


# documentation rows of the web domain's service calls: (row, score record key, label)
SERVICE_CALL_ROWS = (("intent_only", "code_match_intent_only", "none (intent only)"),
                     ("agent", "code_match", "the agent's"),
                     ("gold", "code_match_gold", "gold (ceiling)"))


def _service_calls(scored: list[dict]) -> dict:
    """Mock, Robust, ParamF1 and output match of each documentation row, pooled over the intents (web)."""
    rows = {}
    for row, key, _ in SERVICE_CALL_ROWS:
        intents = [i for s in scored if (s.get(key) or {}).get("intents") for i in s[key]["intents"]]
        if intents:
            total = sum(i["total"] for i in intents)
            rows[row] = {"intents": len(intents), "mock_pct": pct([i["mock"] for i in intents]),
                         "robust_pct": pct([i["robust"] for i in intents]),
                         "param_f1": mean_std([i["param_f1"] for i in intents])[0],
                         "output_match_pct": 100.0 * sum(i["matches"] for i in intents) / total if total else None}
    return rows


def summarize(identity: dict, episodes: list[dict], scores: dict[str, dict]) -> dict:
    groups: dict[str, list[dict]] = defaultdict(list)
    for e in episodes:
        groups[e.get("source") or "unknown"].append(e)
    report = {"run": identity, **_metrics(episodes, scores)}
    report["by_source"] = {src: _metrics(eps, scores) for src, eps in sorted(groups.items())}
    return report


def fmt(value: float | None, digits: int = 2) -> str:
    """A number for the tables; nothing to average (nan, or null read back from JSON) is a dash."""
    return "–" if value is None or value != value else f"{value:.{digits}f}"


def render_markdown(report: dict) -> str:
    run, ds, cm = report["run"], report["description_score"], report["code_match"]
    what = ", ".join(f"{k}={run[k]}" for k in ("model", "checkpoint", "mode", "data", "split") if run.get(k))
    if run.get("teacher", "none") != "none":  # a teacher saw the gold: its scores are no benchmark result
        what += f"\n\nteacher={run['teacher']}: the actor saw the privileged information (SFT traces, not a result)"
    lines = [
        f"# PAU evaluation: {run.get('name', '')}".rstrip(), "", what, "",
        f"{report['n']} episodes, {report['n_scored']} scored.", "",
        "| metric | value |", "|---|---|",
        f"| description score (1–5) | {fmt(ds['mean'])} ± {fmt(ds['std'])} |",
        f"| description score ≥ 3 | {fmt(ds['pct_ge_3'], 1)} % |",
        *(f"| description score = {k} | {fmt(v, 1)} % |" for k, v in ds["pct_at"].items()),
        f"| judge replies without a rating | {fmt(ds['judge_unparsable_pct'], 1)} % |",
        f"| code match | {fmt(100 * cm['mean'], 2)} % |",
        f"| code match = 1 | {fmt(cm['pct_eq_1'], 1)} % |",
        f"| code match ≥ 0.5 | {fmt(cm['pct_ge_0_5'], 1)} % |",
    ]
    if "code_match_gold" in report:
        lines.append(f"| code match from the gold description (upper bound) | "
                     f"{fmt(100 * report['code_match_gold']['mean'], 2)} % |")
    lines += [
        f"| queries per episode | {fmt(report['queries_mean'])} |",
        f"| informative calls per episode | {fmt(report.get('informative_calls_mean'))} |",
        f"| concluded | {fmt(report['concluded_pct'], 1)} % |",
        f"| format errors per turn | {fmt(100 * report['format_error_rate'], 1)} % |",
        f"| actor replies lost to engine errors | {report['actor_engine_errors']} |",
    ]
    lines += _query_efficiency_rows(report.get("query_efficiency"))
    if "sandbox" in report:  # reports written before it: none
        sb = report["sandbox"]
        lines.append(f"| sandbox calls timed out / failed | {sb['timeouts']} / {sb['errors']} of {sb['calls']} |")
    lines += _service_call_rows(report.get("service_calls"))
    if "timing" in report:
        stages = ", ".join(f"{k} {v['seconds']:.0f} s for {v['episodes']} episodes" for k, v in report["timing"].items())
        lines += ["", f"Wall time: {stages}."]
    lines += [
        "", "## Per source", "",
        "| source | n | score | ≥ 3 | code match | queries | concluded |", "|---|---|---|---|---|---|---|",
    ]
    for src, m in report["by_source"].items():
        lines.append(f"| {src} | {m['n']} | {fmt(m['description_score']['mean'])} | "
                     f"{fmt(m['description_score']['pct_ge_3'], 1)} % | {fmt(100 * m['code_match']['mean'], 2)} % | "
                     f"{fmt(m['queries_mean'])} | {fmt(m['concluded_pct'], 1)} % |")
    return "\n".join(lines) + "\n"


def _query_efficiency_rows(qe: dict | None) -> list[str]:
    """The summary table's rows of mutants killed per query, beside the greedy oracle's (none without mutants)."""
    if not qe:
        return []
    ks = [k for k in (1, 2, 3, 5, 10) if k <= len(qe["killed_at_k"])]
    return [
        f"| mutants killed after {' / '.join(map(str, ks))} queries (oracle) | "
        f"{' / '.join(fmt(100 * qe['killed_at_k'][k - 1], 0) for k in ks)} % "
        f"({' / '.join(fmt(100 * qe['oracle_killed_at_k'][k - 1], 0) for k in ks)} %) |",
        f"| queries to kill 90% of the mutants (oracle) | {fmt(qe['queries_to_90_mean'], 1)} in "
        f"{fmt(qe['reached_90_pct'], 0)} % of episodes ({fmt(qe['oracle_queries_to_90_mean'], 1)} in "
        f"{fmt(qe['oracle_reached_90_pct'], 0)} %) |",
        f"| mutants killed, share of the oracle's with as many queries | {fmt(qe['vs_oracle_mean'])} "
        f"({qe['episodes']} episodes, {fmt(qe['mutants_mean'], 1)} mutants each) |",
    ]


def _service_call_rows(service_calls: dict | None) -> list[str]:
    """The web domain's service-call section (none for other domains)."""
    if not service_calls:
        return []
    lines = ["", "## Service calls (virtual execution, SCCGBench-style)", "",
             "A coder writes each held-out intent's service-call function from this documentation; Mock: "
             "host, route and method of its request equal the gold's; Robust: Mock plus a status check and "
             "exception handling; ParamF1: the request's parameter names; output match: the gold's request "
             "and return value on each of the intent's test inputs.", "",
             "| documentation | intents | Mock | Robust | ParamF1 | output match |", "|---|---|---|---|---|---|"]
    for row, _, label in SERVICE_CALL_ROWS:
        m = service_calls.get(row)
        if m:
            lines.append(f"| {label} | {m['intents']} | {fmt(m['mock_pct'], 1)} % | {fmt(m['robust_pct'], 1)} % | "
                         f"{fmt(m['param_f1'])} | {fmt(m['output_match_pct'], 1)} % |")
    return lines


SAMPLE_CHARS = 240  # characters of a reply or call result in report.md's sample episodes
PAGE = "episodes.html"  # the viewer's page of the run, beside report.md


def sample_episodes(episodes: list[dict], scores: dict[str, dict]) -> str:
    """Two episodes as text for report.md: the best and the worst by judge score (unscored: the first two)."""
    from aac.episode_files import transcript

    played = [e for e in episodes if e.get("steps")]
    if not played:
        return ""

    def rating(e: dict) -> float:
        value = ((scores.get(e["uid"]) or {}).get("judge") or {}).get("score")
        return float("-inf") if value is None else value

    ranked = sorted(played, key=rating, reverse=True)
    picked = [ranked[0], ranked[-1]] if len(ranked) > 1 else ranked[:1]
    lines = ["", "## Sample episodes", "",
             f"The best and the worst of the {len(played)} episodes by judge score, each reply and call result cut "
             f"at {SAMPLE_CHARS} characters; every episode, whole, in {PAGE} (`python -m aac.view`)."]
    for e in picked:
        score = ((scores.get(e["uid"]) or {}).get("judge") or {}).get("score")
        lines += ["", f"### {e['uid']}: judge score {fmt(score)}, {e['num_queries']} calls, "
                      f"{'concluded' if e['concluded'] else 'not concluded'}, {e['format_errors']} format errors", "",
                  f"Description: {e.get('description') or '(none)'}", "", "````text",
                  transcript(e, width=SAMPLE_CHARS), "````"]
    return "\n".join(lines) + "\n"


def write_report(run_dir: str | Path, *, plot: bool = True, page: bool = True) -> dict:
    """Summarise a run directory into report.json, report.md (with two sample episodes), the score plot
    (`plot`) and the episode viewer's page (`page`: episodes.html)."""
    run_dir = Path(run_dir)
    identity, episodes, scores = records.load_run(run_dir)
    report = summarize(identity, episodes, scores)
    if (run_dir / records.TIMING).exists():
        report["timing"] = json.loads((run_dir / records.TIMING).read_text(encoding="utf-8"))
    records.write_json(run_dir / records.REPORT_JSON, report)
    (run_dir / records.REPORT_MD).write_text(render_markdown(report) + sample_episodes(episodes, scores),
                                             encoding="utf-8")
    if page:
        from aac.view import write_page

        write_page([run_dir], run_dir / PAGE)
    if plot:
        from aac.eval.plot import plot_score_distribution

        name = identity.get("name") or run_dir.name
        plot_score_distribution({name: [s["judge"]["score"] for s in scores.values() if s["judge"]["score"] is not None]},
                                run_dir / records.PLOT)
    return report
