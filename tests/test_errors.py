"""Every expected error of every entry point is one line, `aac: <what>: <file>[: row N]: <why>`, and a
non-zero exit (SystemExit with that line); a bug keeps its traceback, and AAC_DEBUG=1 shows every one.
The entry points run in this process (their Hydra apps included), on files with the fault in them. And a
black box that never returns is counted: `sandbox/timeouts` in the step metrics and the eval report."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from test_eval_runner import PAU_ROWS, ScriptedEngine, _row, specs, write_rows

from aac.env.instance import DatasetError, load_instances
from aac.env.protocol import ProtocolConfig, sandbox_caller
from aac.errors import UserError, entry_point, one_line


def _exit_line(call) -> str:
    """The one line an entry point exits with (SystemExit carrying it: Python prints it, exit status 1)."""
    with pytest.raises(SystemExit) as e:
        call()
    line = e.value.code
    assert isinstance(line, str) and line.startswith("aac: ") and "\n" not in line, line
    return line


def _hydra(monkeypatch, module, *argv: str):
    def call():
        monkeypatch.setattr(sys, "argv", [module.__name__, *argv])
        module.main()
    return call


def _train(monkeypatch, tmp_path, *argv: str):
    import aac.train

    return _hydra(monkeypatch, aac.train, "+recipe=tiny", "rollout.placement=local", f"out_dir={tmp_path / 'run'}",
                  *argv)


@pytest.fixture()
def files(tmp_path) -> dict[str, Path]:
    good = json.dumps(PAU_ROWS[0])
    no_header = {k: v for k, v in PAU_ROWS[1].items() if k != "header"}
    bad = _row("bad", "x", "def test_func(:", "def test_func(arg0):", "d", [["(1,)", 1]], [["(1,)", 1]])
    out = {"missing": tmp_path / "missing.jsonl", "all_bad": tmp_path / "all_bad.jsonl",
           "bytes": tmp_path / "bytes.jsonl", "empty": tmp_path / "empty.jsonl"}
    out["missing"].write_text(f"{good}\n{json.dumps(no_header)}\n")
    out["all_bad"].write_text(f"{json.dumps(bad)}\n{json.dumps(bad)}\n")
    out["bytes"].write_bytes(good.encode() + b"\n\xff\xfe{}\n")
    out["empty"].write_text("")
    return out


def test_train_says_what_is_wrong_with_a_data_file_in_one_line(tmp_path, monkeypatch, files):
    def line(name: str, *argv: str) -> str:
        return _exit_line(_train(monkeypatch, tmp_path, f"env.data={files[name]}", "env.split=all", *argv))

    assert line("missing", "env.on_bad_row=raise") == \
        f"aac: bad data: {files['missing']}: row 1: missing value in column 'header'"
    assert line("all_bad") == (f"aac: bad data: {files['all_bad']}: no valid rows (2 bad; first: row 0: "
                               "test_func_validated does not parse (SyntaxError: invalid syntax))")
    assert line("bytes", "env.on_bad_row=raise") == \
        f"aac: bad data: {files['bytes']}: row 1: not UTF-8 text (byte 0xff at offset 0 of the line)"
    assert line("empty") == f"aac: bad data: {files['empty']}: no rows (an empty file?): give a dataset with PAU rows"
    with pytest.warns(UserWarning, match=r"bytes\.jsonl: skipping row 1: not UTF-8"):  # warn: the rest loads
        assert len(load_instances(files["bytes"], split="all")) == 1


@pytest.mark.parametrize("override, why", [
    ("max_steps=-3", "max_steps=-3 must be > 0 (null: learner.epochs over the data)"),
    ("max_steps=0", "max_steps=0 must be > 0 (null: learner.epochs over the data)"),  # 0 is no sentinel
    ("env.call_timeout_s=-1", "env.call_timeout_s=-1.0 must be > 0"),
])
def test_settings_that_ran_silently_are_one_line(tmp_path, monkeypatch, override, why):
    assert _exit_line(_train(monkeypatch, tmp_path, override)) == f"aac: config error: {why}"
    assert not (tmp_path / "run").exists()  # refused before anything was made


def test_aac_debug_shows_the_traceback_and_a_bug_keeps_its_own(tmp_path, monkeypatch, files):
    monkeypatch.setenv("HYDRA_FULL_ERROR", "")  # restored after the test: AAC_DEBUG sets it for Hydra
    monkeypatch.setenv("AAC_DEBUG", "1")
    with pytest.raises(DatasetError, match="no rows"):
        _train(monkeypatch, tmp_path, f"env.data={files['empty']}", "env.split=all")()
    monkeypatch.delenv("AAC_DEBUG")

    @entry_point
    def buggy():
        return {}["missing"]

    with pytest.raises(KeyError):  # not an expected error: its traceback stays
        buggy()
    assert one_line(DatasetError("a.jsonl: row 3: why\nand more")) == "aac: bad data: a.jsonl: row 3: why; and more"


def test_every_other_entry_point_is_one_line(tmp_path, monkeypatch, files):
    import aac.eval.__main__ as eval_main
    import aac.preflight.__main__ as preflight_main
    import aac.sft
    from aac.critic import check
    from aac.data import build
    from aac.eval import compare, side_by_side
    from aac.skyrl import __main__ as skyrl_main

    empty = files["empty"]
    assert _exit_line(_hydra(monkeypatch, eval_main, f"data={empty}", "split=all", "engine=hf", f"out_dir={tmp_path / 'e'}")) \
        .startswith(f"aac: bad data: {empty}: no rows")
    assert _exit_line(lambda: check.main([f"data={empty}", "split=all", "+recipe=tiny"])).startswith(f"aac: bad data: {empty}")
    assert _exit_line(lambda: compare.main([f"runs={tmp_path}"])).startswith("aac: bad run dir: ")
    assert _exit_line(lambda: side_by_side.main([f"run={tmp_path / 'no_run'}"])) \
        .startswith(f"aac: config error: eval.protocol_from={tmp_path / 'no_run'}: no saved run config")
    assert _exit_line(_hydra(monkeypatch, aac.sft, f"data={tmp_path}", "+recipe=tiny", f"out_dir={tmp_path / 's'}")) \
        == f"aac: bad run dir: {tmp_path} is not an eval run directory (no episodes.jsonl)"
    assert _exit_line(lambda: skyrl_main.main(["max_steps=0"])) == \
        "aac: config error: max_steps=0 must be > 0 (null: learner.epochs over the data)"
    assert _exit_line(_hydra(monkeypatch, preflight_main, "+recipe=tiny", "env.call_timeout_s=0")) == \
        "aac: config error: env.call_timeout_s=0.0 must be > 0"
    assert build.main.__wrapped__  # the builder's main goes through the same wrapper


def test_a_function_that_never_returns_is_counted_in_the_metrics_and_the_report(tmp_path):
    from aac.eval.report import render_markdown, summarize
    from aac.eval.runner import ActorSpec, run_interactive
    from aac.metrics import rollout_metrics
    from aac.rollout.workers import RolloutBatch, ScoredEpisode

    hangs = "def test_func(arg0, arg1):\n    while True:\n        pass\n"
    rows = [PAU_ROWS[0], {**PAU_ROWS[0], "task_id": "hangs", "test_func_validated": hangs}]
    instances = load_instances(write_rows(tmp_path / "t.jsonl", rows), split="all")
    done: list[dict] = []
    reply = "Input: (4, 2)\nDecision: NO\nSummary: divides the numbers"
    run_interactive(specs(instances), ActorSpec(ScriptedEngine(reply), None, 16),
                    ProtocolConfig(max_steps=6, max_calls=2, call_timeout_s=0.3), sandbox_caller(None), batch_size=2,
                    on_done=done.extend)
    episodes = [ScoredEpisode(key=k, uid=r["uid"], group=k, turns=[], num_queries=r["num_queries"], concluded=False,
                              timed_out=True, description="", record=r) for k, r in enumerate(done)]
    m = rollout_metrics(RolloutBatch(episodes), stop_threshold=0.5)
    assert (m["sandbox/calls"], m["sandbox/timeouts"], m["sandbox/errors"]) == (4, 2, 0)
    report = summarize({"name": "t"}, done, {})
    assert report["sandbox"] == {"calls": 4, "timeouts": 2, "errors": 0}
    assert report["by_source"]["humaneval"]["sandbox"]["timeouts"] == 2
    assert "| sandbox calls timed out / failed | 2 / 0 of 4 |" in render_markdown(report)


def test_expected_errors_are_user_errors():
    from aac.config import ConfigError
    from aac.eval.records import RunDirError

    assert all(issubclass(t, UserError) for t in (ConfigError, DatasetError, RunDirError))
