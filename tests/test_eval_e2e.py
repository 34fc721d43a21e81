"""End to end on CPU: SmolLM2 (base interactive, base + a LoRA checkpoint in context) evaluated on a slice
of the built HumanEval test set, SmolLM2 as judge and coder; report, plot, compare, and resume after a
kill. Small on purpose: one instance per run (the resume adds the second), 1 call, short turns."""

from __future__ import annotations

import json
import os

import pytest

from aac.eval import records

pytestmark = pytest.mark.slow

LIMIT = 1
SMALL = ["model=smollm2_135m", "engine=hf", "data=builtin:humaneval", "split=test",
         "eval.max_calls=1", "eval.max_tokens_per_turn=32", "eval.judge_max_tokens=40",
         "eval.coder_max_tokens=64", "eval.batch_size=4", "env.sandbox.workers=1", "logging.progress=false"]
# OpenMP threads spin while waiting; on a shared, loaded CPU that makes generate ~10x slower
ENV = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE"}


@pytest.fixture(scope="module")
def lora_checkpoint(tmp_path_factory, smollm2_path):
    """A training-style checkpoint folder (step_N/adapter) holding a peft LoRA with random small B."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    step = tmp_path_factory.mktemp("ckpt") / "step_000004"
    model = AutoModelForCausalLM.from_pretrained(smollm2_path, dtype=torch.float32)
    peft = get_peft_model(model, LoraConfig(r=4, lora_alpha=8, target_modules="all-linear"))
    torch.manual_seed(0)
    with torch.no_grad():
        for name, p in peft.named_parameters():
            if "lora_B" in name:
                p.normal_(0.0, 0.02)
    peft.save_pretrained(step / "adapter")
    return step


def _evaluate(*overrides: str) -> None:
    """The harness in this process: what `python -m aac.eval` runs, without a process start-up."""
    from aac.cli import rewrite_aliases
    from aac.config import compose
    from aac.eval.harness import evaluate

    evaluate(compose(*rewrite_aliases([*SMALL, *overrides]), config_name="eval_config"))


@pytest.fixture(scope="module")
def runs(tmp_path_factory, lora_checkpoint, run_module):
    """Two runs cover both modes and the checkpoint (which loads the same way in either mode): the
    first through the command line, the second in-process."""
    out = tmp_path_factory.mktemp("eval")
    dirs = {("base", "interactive"): out / "base_interactive", ("lora", "in_context"): out / "lora_in_context"}
    res = run_module("aac.eval", *SMALL, f"limit={LIMIT}", "mode=interactive",
                     f"out_dir={dirs['base', 'interactive']}", timeout=600, env=ENV)
    assert res.returncode == 0, res.stderr[-3000:]
    _evaluate(f"limit={LIMIT}", "mode=in_context", f"checkpoint={lora_checkpoint}", f"out_dir={dirs['lora', 'in_context']}")
    return out, dirs


def _report(d):
    return json.loads((d / records.REPORT_JSON).read_text())


def test_each_run_writes_episodes_scores_report_and_plot(runs):
    _, dirs = runs
    for (label, mode), d in dirs.items():
        rep = _report(d)
        assert rep["n"] == rep["n_scored"] == LIMIT, (label, mode)
        assert 1 <= rep["description_score"]["mean"] <= 5
        assert 0 <= rep["code_match"]["mean"] <= 1
        assert rep["run"]["mode"] == mode and rep["run"]["judge_model"] == "smollm2_135m"
        assert (rep["run"]["checkpoint"] or "").endswith("step_000004/adapter") == (label == "lora")
        assert (d / records.REPORT_MD).exists() and (d / records.PLOT).stat().st_size > 1000
        eps = records.read_jsonl(d / records.EPISODES)
        assert {e["mode"] for e in eps} == {mode}
        if mode == "interactive":
            assert all(e["num_queries"] <= 1 and e["turns"] <= 3 for e in eps)
            assert all(len(e["observations"]) == 2 + e["num_queries"] for e in eps)
        print(f"\n{label} {mode}: score {rep['description_score']['mean']:.2f}, code match "
              f"{100 * rep['code_match']['mean']:.1f} %, queries {rep['queries_mean']:.1f}, "
              f"timing {rep.get('timing')}")


def test_compare_table(runs, run_module):
    out, dirs = runs
    res = run_module("aac.eval.compare", f"runs={','.join(map(str, dirs.values()))}", f"out={out / 'cmp'}", timeout=120,
                     env=ENV)
    assert res.returncode == 0, res.stderr
    assert "**MAX**" in res.stdout and "p (score)" in res.stdout
    result = json.loads((out / "cmp" / "compare.json").read_text())
    assert result["n_common"] == LIMIT and len(result["pvalues"]) == 1
    assert (out / "cmp" / records.PLOT).exists()
    print("\n" + res.stdout)


def test_killed_run_resumes_without_redoing_finished_episodes(runs, lora_checkpoint):
    """The run grown to LIMIT + 1 instances, killed while writing the new episode: the rerun keeps the
    finished episode and its score as they were and plays and scores only the new one."""
    _, dirs = runs
    d = dirs[("lora", "in_context")]
    (first,) = (d / records.EPISODES).read_text().splitlines(keepends=True)
    scores = (d / records.SCORES).read_text()
    (d / records.EPISODES).write_text(first + first[:25])  # a torn second line
    _evaluate(f"limit={LIMIT + 1}", "mode=in_context", f"checkpoint={lora_checkpoint}", f"out_dir={d}")
    timing = json.loads((d / records.TIMING).read_text())
    assert timing["play"]["episodes"] == timing["score"]["episodes"] == LIMIT + 1  # 1 first, then 1 more
    again = records.read_jsonl(d / records.EPISODES)
    assert again[0] == json.loads(first) and len(again) == LIMIT + 1
    assert (d / records.SCORES).read_text().startswith(scores)
    assert _report(d)["n_scored"] == LIMIT + 1
