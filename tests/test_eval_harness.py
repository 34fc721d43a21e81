"""The whole harness (config -> play -> score -> report -> resume) against a local OpenAI-compatible
stub endpoint with canned replies: the `openai` engine path, real sandbox, real files, no model."""

from __future__ import annotations

import pytest
from test_eval_runner import PAU_ROWS, write_rows

from aac.cli import rewrite_aliases
from aac.config import ConfigError, compose
from aac.eval import records
from aac.eval.harness import evaluate
from aac.run_dir import CheckpointError

ACTOR = "Input: (4, 2)\nDecision: YES\nSummary: returns the quotient and remainder of arg0 by arg1"
JUDGE = "Mostly right.\nRating: 4"
CODER = ("```python\ndef test_func(arg0, arg1):\n    return divmod(arg0, arg1) if arg1 else (0, arg0)\n```")


CALLS: list[dict] = []  # the requests the module's endpoint got (tests clear it)


def _reply(body: dict) -> str:
    CALLS.append(body)
    system = body["messages"][0]["content"]
    return JUDGE if "grader" in system else CODER if "programmer" in system else ACTOR


@pytest.fixture(scope="module")
def endpoint(serve_chat):
    with serve_chat(_reply) as (url, _):
        yield url


def _cfg(*overrides):
    return compose(*rewrite_aliases(list(overrides)), config_name="eval_config")


def test_harness_runs_scores_reports_and_resumes(tmp_path, endpoint):
    data = write_rows(tmp_path / "test.jsonl")
    out = tmp_path / "run"
    args = ["model.name=stub-model", "engine=openai", f"rollout.openai.base_url={endpoint}", f"data={data.parent}",
            "split=test", "gold=true", f"out_dir={out}", "logging.progress=false", "env.sandbox.workers=1"]
    CALLS.clear()
    rep = evaluate(_cfg(*args))
    assert rep["n"] == rep["n_scored"] == len(PAU_ROWS)
    assert rep["description_score"]["mean"] == 4 and rep["concluded_pct"] == 100 and rep["queries_mean"] == 1
    # the canned coder writes the divmod function: right for row 0 (its repr-string output too), wrong elsewhere
    scores = records.by_uid(records.read_jsonl(out / records.SCORES))
    assert scores["hand/0"]["code_match"]["score"] == 1.0 and scores["hand/0"]["code_match_gold"]["score"] == 1.0
    assert scores["hand/1"]["code_match"]["score"] == 0.0
    assert rep["by_source"]["humaneval"]["code_match"]["mean"] == 1.0 and "code_match_gold" in rep
    assert len(CALLS) == 3 * 3 + 3 + 6  # 3 turns x 3 episodes, 3 judge, 3 + 3 (gold) coder
    assert all(c["temperature"] == 0 for c in CALLS)  # greedy by default
    assert {"report.json", "report.md", "score_distribution.png", "run.json"} <= {p.name for p in out.iterdir()}

    # a second run over the same folder redoes nothing; a different run into it is refused
    CALLS.clear()
    evaluate(_cfg(*args))
    assert CALLS == []
    with pytest.raises(records.RunDirError, match="mode"):
        evaluate(_cfg(*args, "mode=in_context"))


def test_in_context_mode_and_checkpoint_errors(tmp_path, endpoint):
    data = write_rows(tmp_path / "test.jsonl")
    base = ["model.name=stub-model", "engine=openai", f"rollout.openai.base_url={endpoint}", f"data={data.parent}",
            "split=test", "logging.progress=false", "env.sandbox.workers=1"]
    CALLS.clear()
    rep = evaluate(_cfg(*base, "mode=in_context", f"out_dir={tmp_path / 'ic'}", "rollout.openai.model=served-actor",
                        "judge=judge-llm"))
    assert rep["queries_mean"] == 0 and rep["n_scored"] == 3 and rep["run"]["judge_model"] == "judge-llm"
    served = {("grader" in c["messages"][0]["content"], c["model"]) for c in CALLS}
    assert served == {(False, "served-actor"), (True, "judge-llm")}  # coder = the actor's model
    with pytest.raises(CheckpointError, match="no peft adapter"):
        evaluate(_cfg(*base, f"checkpoint={tmp_path}", f"out_dir={tmp_path / 'x'}"))


def test_aac_eval_writes_under_the_hydra_run_dir(tmp_path, endpoint, run_module):
    """`hydra.run.dir` decides where a run goes, as in `aac.train` (out_dir is only its default)."""
    data = write_rows(tmp_path / "test.jsonl")
    res = run_module("aac.eval", "model.name=stub-model", "engine=openai", f"rollout.openai.base_url={endpoint}",
                     f"data={data.parent}", "split=test", "mode=in_context", "logging.progress=false",
                     "env.sandbox.workers=1", f"out_dir={tmp_path / 'elsewhere'}", f"hydra.run.dir={tmp_path / 'here'}",
                     timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    assert (tmp_path / "here" / records.REPORT_MD).exists() and not (tmp_path / "elsewhere").exists()


def test_code_match_off_asks_no_coder_and_reports_none(tmp_path, endpoint):
    """`eval.code_match=false` (make demo's closing table): the judge and the informative calls only."""
    data = write_rows(tmp_path / "test.jsonl")
    args = ["model.name=stub-model", "engine=openai", f"rollout.openai.base_url={endpoint}", f"data={data.parent}",
            "split=test", "logging.progress=false", "env.sandbox.workers=1", "eval.code_match=false"]
    CALLS.clear()
    rep = evaluate(_cfg(*args, f"out_dir={tmp_path / 'off'}"))
    assert not any("programmer" in c["messages"][0]["content"] for c in CALLS) and len(CALLS) == 3 * 3 + 3
    assert rep["description_score"]["mean"] == 4 and rep["code_match"]["mean"] != rep["code_match"]["mean"]  # nan
    scores = records.read_jsonl(tmp_path / "off" / records.SCORES)
    # one call each, (4, 2): a new result of divmod; the string repeater and the one-argument function raise
    assert all("code_match" not in s for s in scores) and [s["informative_calls"] for s in scores] == [1, 0, 0]
    from aac.eval.compare import compare

    result = compare([tmp_path / "off", tmp_path / "off"], resamples=100)
    assert result["pvalues"][0]["code_match_p"] is None and result["pvalues"][0]["score_p"] == 0.5
    with pytest.raises(ConfigError, match="eval.gold=true .* needs eval.code_match=true"):
        _cfg(*args, "gold=true")
