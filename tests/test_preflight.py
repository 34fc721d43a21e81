"""`python -m aac.preflight`: real steps measured through the real Trainer, the run projected from them,
and a vLLM outside the supported range refused before anything is built."""

from __future__ import annotations

import json
import os

import pytest

from aac.preflight import Measured, VersionError, check_vllm, project
from aac.preflight.projection import saves


def test_the_projection_adds_start_up_the_first_step_the_later_steps_mean_saves_and_evals():
    m = Measured(startup_s=40.0, steps_s=[30.0, 10.0, 14.0], save_s=2.0, close_s=5.0, eval_s=60.0)
    p = project(m, total_steps=10, save_every=4, eval_every=5)
    assert p["step_s"] == 12.0  # the later steps' mean: the first carries the warm-up
    assert p["steps_s"] == 30 + 10 + 14 + 7 * 12.0
    assert saves(10, 4) == 3 and saves(8, 4) == 2 and saves(3, 0) == 1  # steps 4, 8 and the last (10)
    assert p["total_s"] == 40 + 138 + 3 * 2.0 + 2 * 60.0 + 5
    assert project(Measured(1.0, [5.0], 0.0, 0.0), 3, 0, 0)["steps_s"] == 15.0  # one step: it is the mean
    with pytest.raises(ValueError, match="no measured step"):
        project(Measured(1.0, [], 0.0, 0.0), 3, 0, 0)


def test_a_typical_preflight_caps_turns_and_replies_and_scales_the_worst_case():
    from aac.config import compose
    from aac.preflight.typical import capped, worst_step

    recipe = compose("+recipe=qwen3_8b")
    typical = capped(recipe)
    assert typical.env.max_steps == 12 and recipe.env.max_steps == 40
    assert dict(typical.rollout.max_tokens_per_phase) == {"reasoning": 90, "input": 20, "reflect": 60}
    assert capped(compose("+recipe=tiny")).env.max_steps == 6  # a cap never raises a recipe's own
    row = {"generated_tokens": 64 * 12 * 56, "rollout_s": 20.0, "update_s": 30.0, "wall_s": 55.0}
    w = worst_step(row, 64, recipe)  # 40 turns x 1,024 tokens an episode: 61x the typical step's tokens
    assert w["scale"] == pytest.approx(40 * 1024 / (12 * 56))
    assert w["wall_s"] == pytest.approx(50 * w["scale"] + 5)


@pytest.mark.parametrize("version, ok", [("0.32.0", True), ("0.32.1+cpu", True), ("0.33.0", False),
                                         ("0.8.5", False), ("1.0.0", False), (None, False)])
def test_the_supported_vllm_range(version, ok):
    if ok:
        check_vllm(version)
    else:
        with pytest.raises(VersionError, match="make install-gpu"):
            check_vllm(version)


def test_preflight_refuses_a_vllm_outside_the_range_in_one_line(run_module, tmp_path):
    fake = tmp_path / "site" / "vllm"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text('__version__ = "0.8.5"\n')
    env = {**os.environ, "PYTHONPATH": f"{tmp_path / 'site'}:{os.environ.get('PYTHONPATH', '')}"}
    r = run_module("aac.preflight", "+recipe=tiny", "rollout.engine=vllm", f"out_dir={tmp_path / 'run'}", env=env)
    assert r.returncode != 0
    assert r.stderr.strip().splitlines()[-1] == ("aac: unsupported version: vLLM 0.8.5 is outside the supported range "
                                                  "vllm>=0.32,<0.33 the engine code is written for: make install-gpu installs it")
    assert "versions: vllm 0.8.5" in r.stdout and not (tmp_path / "run" / "metrics.jsonl").exists()  # nothing built


def test_preflight_of_tiny_runs_real_steps_and_projects_the_recipe(run_module, tmp_path):
    out = tmp_path / "run"
    # one step off-policy, as the GPU recipes run: step 2's rollout ran during step 1's update
    r = run_module("aac.preflight", "+recipe=tiny", "rollout.placement=local", "preflight.steps=2",
                   "rollout.max_off_policy_steps=1", f"out_dir={out}",
                   # typical episodes shorter than the recipe's (6 turns of 16 tokens): the caps act, the worst case
                   # is scaled beside them
                   "preflight.typical_turns=3", "preflight.typical_reply_tokens={reasoning: 12, reflect: 10}",
                   "rewards.tau_reason=1", "rewards.tau_reflect=1")  # replies' lengths differ: updates run
    assert r.returncode == 0, r.stderr[-2000:]
    report = json.loads((out / "preflight.json").read_text())
    assert report["total_steps"] == 3 and len(report["steps"]) == 2
    assert report["shape"] == "typical" and report["turns"] == 3
    assert report["reply_tokens"] == {"reasoning": 12, "input": 16, "reflect": 10}
    assert all(s["turns_per_episode"] <= 3 and s["generated_tokens"] <= s["turns"] * 16 for s in report["steps"])
    worst = report["worst_case"]
    assert worst["turns"] == 6 and worst["generated_tokens"] == 6 * 16 * 8 and worst["scale"] > 1
    assert worst["projection"]["total_s"] > report["projection"]["total_s"]
    assert "worst case, scaled from the last step" in r.stdout
    assert len((out / "metrics.jsonl").read_text().splitlines()) == 2  # the Trainer's own steps
    assert [s["off_policy_lag"] for s in report["steps"]] == [0, 1]
    for s in report["steps"]:
        assert s["generated_tokens"] > 0 and s["prompt_tokens"] > s["generated_tokens"] and s["turns"] > 0
        assert s["turns_per_episode"] == s["turns"] / 8  # 2 functions x group 4
        assert not s["update_skipped"] and s["loss_tokens"] == s["generated_tokens"]
        assert s["synthetic_advantages"] is False  # these batches carry a signal: left alone
        # the prefix tree computes a group's shared prompts once: fewer tokens than prompts + replies
        assert s["loss_tokens"] < s["update_tokens"] < s["prompt_tokens"] + s["generated_tokens"]
        assert 0 < s["rollout_s"] + s["update_s"] <= s["wall_s"]
    # v1's weights check is deferred by the pipeline: it runs while step 2's rollout plays, in step 2's row
    gaps = [s["sync_logprob_gap"] for s in report["steps"]]
    assert gaps[0] is None and gaps[1] < 0.05
    learner = report["pieces"]["learner"]
    assert learner["attention"].startswith("prefix tree: sdpa") and learner["peak_rss_gb"] > 0
    assert report["pieces"]["engine:actor"]["kv_cache"] is None  # the HF engine's cache is per call
    p, m, walls = report["projection"], report["measured"], [s["wall_s"] for s in report["steps"]]
    assert p["steps"] == 3 and p["step_s"] == pytest.approx(walls[1], abs=0.01)
    assert p["total_s"] == pytest.approx(m["startup_s"] + sum(walls) + walls[1] + 3 * m["save_s"] + m["close_s"], abs=0.5)
    assert "projected full run (3 steps" in r.stdout and report["versions"]["torch"]


def test_synthetic_advantages_make_a_skipped_update_run(tiny_model_path):
    """preflight.synthetic_advantages: random replies all score alike (every advantage 0), so the learner
    skips the update; a batch like that gets +1/-1 per episode within each group and the update runs."""
    import types

    from test_learner import config, samples

    from aac.config import compose
    from aac.learner import Learner
    from aac.preflight.__main__ import PreflightTrainer
    from aac.preflight.synthetic import synthetic_advantages

    zero = [[0.0, 0.0], [0.0], [0.0, 0.0, 0.0], [0.0]]
    adv, replaced = synthetic_advantages([0, 0, 1, 1], zero)
    assert replaced and adv == [[1.0, 1.0], [-1.0], [1.0, 1.0, 1.0], [-1.0]]
    real = [[0.5, 0.0], [0.0], [0.0, 0.0, 0.0], [-0.5]]
    assert synthetic_advantages([0, 0, 1, 1], real) == (real, False)  # a batch with a signal is left alone

    # the Trainer's hook, with the field on and off, on a batch whose turns all score alike
    turn = types.SimpleNamespace(phase="input", reward=0.25, format_penalty=0.0)
    batch = types.SimpleNamespace(episodes=[types.SimpleNamespace(group=g, uid=f"u{g}", turns=[turn, turn])
                                            for g in (0, 0, 1, 1)])
    for on in (True, False):
        trainer = object.__new__(PreflightTrainer)  # the hook needs only the config
        trainer.cfg = compose("+recipe=tiny", f"preflight.synthetic_advantages={str(on).lower()}")
        got = trainer.advantages(batch)
        assert trainer.synthetic is on
        assert got == ([[1.0, 1.0], [-1.0, -1.0]] * 2 if on else [[0.0, 0.0]] * 4)
    learner = Learner(config(), tiny_model_path, seed=0)
    turns = samples()[:4]
    for s in turns:
        s.advantage = 0.0
    assert learner.update(turns)["skipped"]
    for s, (a, *_) in zip(turns, adv):
        s.advantage = a
    m = learner.update(turns)
    assert not m["skipped"] and m["tokens"] > 0 and m["steps"] == 1
