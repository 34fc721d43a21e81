"""End to end on CPU: SmolLM2 (base in both modes, and base + a LoRA checkpoint interactive) evaluated on a slice of the built
HumanEval test set, interactive and in-context, SmolLM2 as judge and coder; report, plot, compare,
and resume after a kill. Small on purpose: 2 instances, 2 calls, short turns."""

from __future__ import annotations

import json
import os

import pytest

from aac.eval import records

pytestmark = pytest.mark.slow

SMALL = ["model=smollm2_135m", "engine=hf", "data=builtin:humaneval", "split=test", "limit=2",
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


@pytest.fixture(scope="module")
def runs(tmp_path_factory, lora_checkpoint, run_module):
    out = tmp_path_factory.mktemp("eval")
    dirs = {}
    # three runs, not four: the checkpoint loads the same way in either mode
    for label, mode, extra in [("base", "interactive", []), ("base", "in_context", []),
                               ("lora", "interactive", [f"checkpoint={lora_checkpoint}"])]:
        d = out / f"{label}_{mode}"
        res = run_module("aac.eval", *SMALL, f"mode={mode}", *extra, f"out_dir={d}", timeout=600, env=ENV)
        assert res.returncode == 0, res.stderr[-3000:]
        dirs[(label, mode)] = d
    return out, dirs


def _report(d):
    return json.loads((d / records.REPORT_JSON).read_text())


def test_each_run_writes_episodes_scores_report_and_plot(runs):
    _, dirs = runs
    for (label, mode), d in dirs.items():
        rep = _report(d)
        assert rep["n"] == rep["n_scored"] == 2, (label, mode)
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
    res = run_module("aac.eval.compare", *map(str, dirs.values()), "--out", str(out / "cmp"), timeout=120, env=ENV)
    assert res.returncode == 0, res.stderr
    assert "**MAX**" in res.stdout and "p (score)" in res.stdout
    result = json.loads((out / "cmp" / "compare.json").read_text())
    assert result["n_common"] == 2 and len(result["pvalues"]) == 3
    assert (out / "cmp" / records.PLOT).exists()
    print("\n" + res.stdout)


def test_killed_run_resumes_without_redoing_finished_episodes(runs, run_module):
    _, dirs = runs
    d = dirs[("base", "in_context")]
    eps = (d / records.EPISODES).read_text().splitlines(keepends=True)
    (d / records.EPISODES).write_text(eps[0] + eps[1][:25])  # killed while writing the second episode
    (d / records.SCORES).write_text((d / records.SCORES).read_text().splitlines(keepends=True)[0])
    res = run_module("aac.eval", *SMALL, "mode=in_context", f"out_dir={d}", timeout=600, env=ENV)
    assert res.returncode == 0, res.stderr[-3000:]
    timing = json.loads((d / records.TIMING).read_text())
    assert timing["play"]["episodes"] == 3 and timing["score"]["episodes"] == 3  # 2 first, then 1 more
    again = records.read_jsonl(d / records.EPISODES)
    assert [e["uid"] for e in again][0] == json.loads(eps[0])["uid"] and len(again) == 2
    assert _report(d)["n_scored"] == 2
