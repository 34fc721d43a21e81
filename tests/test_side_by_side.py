"""`make demo`'s commands, read from the Makefile, on the tiny recipe: a real `python -m aac.train` run (its
config saved in the run folder, aac/run_dir.py), then `aac.eval.side_by_side`: the tuned adapter and the base model
evaluated under that run's protocol on the same held-out functions, compared pair by pair, and the
closing table printed."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys

import pytest
from conftest import ROOT

pytestmark = pytest.mark.slow  # two process start-ups, two evals of the tiny model (~40 s)

# the tiny recipe in the compact style, so the run's protocol differs from the plain eval config's
TRAIN_ARGS = ("+recipe=tiny rollout.placement=local max_steps=1 env.prompt_style=compact env.answer_cues=true "
              "+rollout.max_tokens_per_phase.input=6 '+rollout.stop_per_phase.input=[\")\"]'")


def demo_commands() -> list[str]:
    """The shell lines of the Makefile's `demo` target."""
    lines = (ROOT / "Makefile").read_text().splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("demo:"))
    body = []
    for ln in lines[start + 1:]:
        if not ln.startswith("\t"):
            break
        body.append(ln.strip())
    return body


def test_make_demo_trains_then_prints_the_side_by_side_table(tmp_path):
    out = tmp_path / "demo"
    env = dict(os.environ, OMP_WAIT_POLICY="PASSIVE", PYTHONPATH=str(ROOT))
    commands = demo_commands()
    assert [c.split()[:3] for c in commands] == [["$(PY)", "-m", "aac.train"], ["$(PY)", "-m", "aac.eval.side_by_side"],
                                                 ["$(PY)", "-m", "aac.view"]]
    done = []
    for cmd in commands:
        cmd = (cmd.replace("$(PY)", shlex.quote(sys.executable)).replace("$(DEMO_OUT)", str(out))
               .replace("$(ARGS)", TRAIN_ARGS))
        done.append(subprocess.run(cmd, shell=True, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600))
        assert done[-1].returncode == 0, done[-1].stderr[-3000:]
    res, page = done[1], done[2].stdout.strip()
    assert page == str((out / "episodes.html").resolve()) and "Privileged" in (out / "episodes.html").read_text()
    table = res.stdout
    assert "| model | format errors / turn | queries / episode | informative calls / episode | concluded |" in table
    rows = [ln for ln in table.splitlines() if ln.startswith(("| base |", "| tuned |"))]
    assert len(rows) == 2 and "weak" in table and "p that tuned is not better" in table
    assert (out / "eval" / "side_by_side.md").read_text() == table  # all that goes to stdout
    assert res.stderr.count("playing the protocol of training run") == 2  # one line per arm
    # both arms played the run's protocol, the tuned one its checkpoint, on the same functions
    ids = {arm: json.loads((out / "eval" / arm / "run.json").read_text()) for arm in ("base", "tuned")}
    for ident in ids.values():
        assert (ident["prompt_style"], ident["answer_cues"], ident["stop_per_phase"]) == ("compact", True, {"input": [")"]})
        assert (ident["engine"], ident["model"], ident["max_tokens_per_phase"]) == ("hf", "tiny_qwen3", {"input": 6})
    assert ids["base"]["checkpoint"] is None and ids["tuned"]["checkpoint"].endswith("step_000001/adapter")
    assert "playing the protocol of training run" in res.stderr
    uids = [[json.loads(ln)["uid"] for ln in (out / "eval" / arm / "episodes.jsonl").read_text().splitlines()]
            for arm in ("base", "tuned")]
    assert sorted(uids[0]) == sorted(uids[1]) and len(uids[0]) == 4
