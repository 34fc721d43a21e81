"""Eval statistics, reports and comparison on constructed runs (no model)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from aac.eval import records
from aac.eval.compare import compare
from aac.eval.compare import main as compare_main
from aac.eval.report import write_report
from aac.eval.stats import paired_bootstrap, paired_interval, per_instance_max, score_histogram


def test_bootstrap_identical_runs_is_one_half():
    a = np.random.default_rng(1).integers(1, 6, size=50)
    assert paired_bootstrap(a, a) == pytest.approx(0.5)


def test_bootstrap_exchangeable_runs_near_one_half():
    rng = np.random.default_rng(2)
    base = rng.integers(1, 6, size=200).astype(float)
    a, b = base.copy(), base.copy()
    flip = rng.choice(200, size=40, replace=False)  # swap +1 / -1 perturbations: no true difference
    a[flip[:20]] += 1
    b[flip[20:]] += 1
    assert 0.2 < paired_bootstrap(a, b, resamples=2000) < 0.8


def test_bootstrap_dominating_run_is_significant():
    rng = np.random.default_rng(3)
    b = rng.integers(1, 5, size=100).astype(float)
    a = b + (rng.random(100) < 0.3)  # A is never worse, better on ~30 %
    assert paired_bootstrap(a, b) < 0.05
    assert paired_bootstrap(b, a) > 0.95


def test_bootstrap_interval_brackets_the_mean_and_agrees_with_the_p_value():
    rng = np.random.default_rng(3)
    b = rng.integers(1, 5, size=100).astype(float)
    a = b + (rng.random(100) < 0.3)  # A is never worse, better on ~30 %
    mean, lo, hi = paired_interval(a, b)
    assert mean == pytest.approx(np.mean(a - b)) and 0 < lo < mean < hi < 1
    assert paired_interval(b, a) == pytest.approx((-mean, -hi, -lo), abs=0.02)
    assert paired_interval(a, a) == (0.0, 0.0, 0.0)
    even = b + rng.choice([-1.0, 1.0], size=100)  # no true difference
    assert paired_interval(even, b)[1] < 0 < paired_interval(even, b)[2]
    narrow = paired_interval(a, b, level=0.5)
    assert lo < narrow[1] < narrow[2] < hi  # a lower level gives a narrower interval
    with pytest.raises(ValueError, match="same instances"):
        paired_interval([1, 2], [1])


def test_bootstrap_is_seeded_and_checks_pairs():
    a, b = [1, 2, 3, 4], [2, 2, 3, 3]
    assert paired_bootstrap(a, b, seed=7) == paired_bootstrap(a, b, seed=7)
    with pytest.raises(ValueError, match="same instances"):
        paired_bootstrap([1, 2], [1])


def test_max_and_histogram():
    assert per_instance_max([{"a": 1, "b": 4, "c": 2}, {"a": 3, "b": 2}]) == {"a": 3, "b": 4}
    assert score_histogram([1, 1, 3, 5]) == {"1": 50.0, "2": 0.0, "3": 25.0, "4": 0.0, "5": 25.0}


# ---------------------------------------------------------------- run directories


def make_run(path, name, ratings, codes, *, mode="interactive", sources=None, queries=3):
    path.mkdir(parents=True)
    records.write_json(path / records.RUN, {"name": name, "model": "m", "mode": mode})
    eps, scores = [], []
    for k, (r, c) in enumerate(zip(ratings, codes)):
        uid = f"u{k}"
        eps.append({"uid": uid, "source": (sources or ["humaneval"] * len(ratings))[k], "mode": mode,
                    "description": "d", "num_queries": queries, "concluded": k % 2 == 0, "timed_out": False,
                    "turns": 9, "format_errors": 1, "observations": [], "steps": []})
        scores.append({"uid": uid, "judge": {"score": r, "parsed": k != 0, "text": ""},
                       "code_match": {"score": c}})
    records.append_jsonl(path / records.EPISODES, eps)
    records.append_jsonl(path / records.SCORES, scores)
    return path


def test_report_numbers_and_files(tmp_path):
    run = make_run(tmp_path / "r", "base", [1, 3, 5, 4], [0.0, 0.5, 1.0, 0.25],
                   sources=["humaneval", "humaneval", "mbpp", "mbpp"])
    rep = write_report(run)
    ds, cm = rep["description_score"], rep["code_match"]
    assert ds["mean"] == pytest.approx(3.25) and ds["std"] == pytest.approx(np.std([1, 3, 5, 4]))
    assert ds["pct_ge_3"] == 75.0 and ds["pct_at"]["1"] == 25.0 and ds["judge_unparsable_pct"] == 25.0
    assert cm["mean"] == pytest.approx(0.4375) and cm["pct_eq_1"] == 25.0 and cm["pct_ge_0_5"] == 50.0
    assert rep["queries_mean"] == 3 and rep["concluded_pct"] == 50.0
    assert rep["format_error_rate"] == pytest.approx(1 / 9)
    assert rep["by_source"]["mbpp"]["description_score"]["mean"] == pytest.approx(4.5)
    assert json.loads((run / records.REPORT_JSON).read_text())["n"] == 4
    md = (run / records.REPORT_MD).read_text()
    assert "3.25 ±" in md and "| mbpp | 2 |" in md
    assert (run / records.PLOT).stat().st_size > 1000


def test_truncated_last_line_is_dropped_and_repaired(tmp_path):
    path = tmp_path / "e.jsonl"
    records.append_jsonl(path, [{"uid": "a"}, {"uid": "b"}])
    with open(path, "a") as f:
        f.write('{"uid": "c", "desc')  # killed mid-write
    assert [r["uid"] for r in records.read_jsonl(path, repair=True)] == ["a", "b"]
    records.append_jsonl(path, [{"uid": "c"}])
    assert [r["uid"] for r in records.read_jsonl(path)] == ["a", "b", "c"]


def test_resume_into_a_different_run_is_refused(tmp_path):
    records.check_same_run(tmp_path, {"model": "a", "mode": "interactive"})
    records.check_same_run(tmp_path, {"model": "a", "mode": "interactive"})
    with pytest.raises(records.RunDirError, match="mode"):
        records.check_same_run(tmp_path, {"model": "a", "mode": "in_context"})


def test_compare_table_pvalues_and_max(tmp_path, capsys):
    good = make_run(tmp_path / "good", "good", [5, 4, 5, 4, 3, 5] * 5, [1.0, 1.0, 0.5, 1.0, 0.0, 1.0] * 5)
    bad = make_run(tmp_path / "bad", "bad", [1, 2, 1, 4, 1, 2] * 5, [0.0, 0.0, 0.0, 1.0, 0.0, 0.0] * 5)
    res = compare([good, bad], resamples=2000)
    assert res["n_common"] == 30
    (p,) = res["pvalues"]
    assert (p["a"], p["b"]) == ("good", "bad") and p["score_p"] < 0.05 and p["code_match_p"] < 0.05
    assert res["max"]["description_score"]["mean"] == pytest.approx(np.mean([5, 4, 5, 4, 3, 5]))
    compare_main([f"runs={good},{bad}", f"out={tmp_path / 'cmp'}", "resamples=500"])
    out = capsys.readouterr().out
    assert "| good | interactive | 4.33" in out and "**MAX**" in out and "| good | bad |" in out
    assert {"compare.md", "compare.json", records.PLOT} <= {f.name for f in (tmp_path / "cmp").iterdir()}


def test_compare_needs_common_instances(tmp_path):
    a = make_run(tmp_path / "a", "a", [1], [0.0])
    with pytest.raises(SystemExit, match="not an eval run"):
        compare_main([f"runs={a},{tmp_path}"])


def test_report_of_unscored_run_is_strict_json(tmp_path):
    run = make_run(tmp_path / "r", "x", [3], [1.0])
    (run / records.SCORES).unlink()  # played with eval.score=false
    rep = write_report(run, plot=False)
    assert rep["n"] == 1 and rep["n_scored"] == 0
    strict = json.loads((run / records.REPORT_JSON).read_text(), parse_constant=lambda c: pytest.fail(c))
    assert strict["description_score"]["mean"] is None
    assert "| description score (1–5) | – ± – |" in (run / records.REPORT_MD).read_text()
