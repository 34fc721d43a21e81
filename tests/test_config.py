"""Configs: every recipe composes, bad overrides stop with one line, shorthand works."""

from __future__ import annotations

import pytest
from omegaconf import OmegaConf

from aac.config import ConfigError, compose, resource_dir, validate

RECIPES = sorted(p.stem for p in resource_dir("recipes").glob("*.yaml"))


def test_recipes_present():
    assert {"smollm2_cpu", "tiny", "qwen3_1_7b", "qwen3_8b"} <= set(RECIPES)


@pytest.mark.parametrize("recipe", RECIPES)
def test_every_recipe_composes_and_validates(recipe):
    cfg = compose(f"+recipe={recipe}")
    validate(cfg)
    assert cfg.recipe_name == recipe
    OmegaConf.to_container(cfg, resolve=True)  # every interpolation resolves


def test_qwen3_8b_is_the_paper_setup():
    cfg = compose("+recipe=qwen3_8b")
    assert cfg.model.name == "qwen3_8b"
    assert (cfg.learner.lora_r, cfg.learner.lora_alpha, cfg.learner.target_modules) == (16, 16, "all-linear")
    assert cfg.learner.lr == pytest.approx(1e-6)
    assert (cfg.rollout.functions_per_step, cfg.rollout.group_size) == (8, 8)
    assert cfg.learner.epochs == 5
    assert cfg.rollout.max_tokens_per_turn == 1024 and cfg.model.max_model_len == 4096
    # docs/method.md defaults of the reward schedule
    r = cfg.rewards
    assert (r.lambda_h, r.p_parse, r.tau_reason, r.tau_input, r.t_max) == (2.0, 0.5, 100, 30, 40)
    assert (r.stop_threshold, r.continue_threshold, r.advantage) == (0.7, 0.3, "turn")


def test_reward_sweep_values_reach_config():
    cfg = compose("+recipe=tiny", "rewards.lambda_h=4", "rewards=sym_info")
    assert cfg.rewards.lambda_h == 4 and cfg.rewards.schedule == "sym_info"
    assert cfg.critic.mode == "symmetric"


def test_validate_rejects_unknown_choice():
    with pytest.raises(ConfigError, match="rewards.advantage"):
        compose("+recipe=tiny", "rewards.advantage=bogus")


@pytest.mark.parametrize("override, needle", [
    ("critic.mode=oracle", "critic.mode"), ("critic.scoring=vibes", "critic.scoring"),
    ("critic.informativeness=oracle", "critic.informativeness"), ("rewards.schedule=dense", "rewards.schedule"),
    ("rewards.tau_reason=0", "rewards.tau_reason"), ("env.max_steps=0", "env.max_steps"),  # T_max (rewards.t_max)
    ("rewards.info_budget=-1", "rewards.info_budget"), ("learner.backend=jax", "learner.backend"),
    ("learner.micro_batch_tokens=0", "learner.micro_batch_tokens"), ("learner.ppo_minibatches=0", "ppo_minibatches"),
    ("learner.tis_cap=0", "tis_cap"), ("learner.malloc_mmap_threshold_kb=-1", "malloc_mmap_threshold_kb"),
    ("learner.zero_stage=3", "learner.zero_stage"), ("env.history_window=0", "env.history_window"),
    ("env.max_calls=0", "env.max_calls"), ("critic.coverage_output_weight=1.5", "critic.coverage_output_weight"),
    ("rewards.stop_threshold=1", "rewards.stop_threshold"), ("critic.scripted_k=0", "critic.scripted_k"),
    ("env.input_literals=['7','7']", "env.input_literals"),
])
def test_values_are_validated_once_when_the_config_loads(override, needle):
    """Every setting the pieces read is checked here, as a one-line error naming the key; the pieces
    themselves trust their sections (docs: a value is validated once, at load)."""
    with pytest.raises(ConfigError, match=needle):
        compose("+recipe=tiny", override)


def test_lora_mode_merged_is_the_cpu_default_and_needs_vllm():
    assert compose("+recipe=smollm2_cpu").rollout.lora_mode == "merged"
    assert compose("+recipe=qwen3_8b").rollout.lora_mode == "adapter"  # GPUs keep vLLM LoRA (adapter-only sync)
    with pytest.raises(ConfigError, match="rollout.lora_mode=merged needs rollout.engine=vllm"):
        compose("+recipe=tiny", "rollout.lora_mode=merged")


def _one_line_error(result, *needles):
    assert result.returncode != 0
    lines = [ln for ln in result.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("aac: config error:")
    for needle in needles:
        assert needle in lines[0]


@pytest.mark.parametrize(
    "override, needles",
    [
        ("learner.lrr=3", ("learner.lrr", "lrr")),
        ("rollout.group_size=abc", ("rollout.group_size",)),
        ("rollout.group_size=0", ("rollout.group_size",)),
        ("rewards.advantage=sum", ("rewards.advantage",)),
        ("+recipe=nope", ("recipe/nope", "qwen3_8b")),
    ],
)
def test_bad_override_is_one_line(run_module, override, needles):
    _one_line_error(run_module("aac.train", override, timeout=120), *needles)


def test_a_config_error_is_answered_before_the_model_libraries_load():
    """aac.training and aac.learner load their names on first use (aac/lazy.py), and the run folder's state loads
    torch only to restore a checkpoint: what `python -m aac.train` imports before the config is checked holds no
    torch, transformers or peft (a bad setting is answered in ~1 s, not 4), and the names still resolve."""
    import subprocess
    import sys

    code = ("import sys, aac.train, aac.training.state\n"
            "print(sorted(m for m in ('torch', 'transformers', 'peft', 'aac.training.trainer') if m in sys.modules))\n"
            "from aac.training import Trainer\nfrom aac.learner import Learner\nprint(Trainer.__name__, Learner.__name__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.stdout.split("\n")[:2] == ["[]", "Trainer Learner"], out.stderr[-2000:]


def test_cfg_job_prints_composed_recipe(run_module):
    out = run_module("aac.train", "--cfg", "job", "+recipe=qwen3_8b", timeout=120)
    assert out.returncode == 0, out.stderr
    cfg = OmegaConf.create(out.stdout)
    assert cfg.recipe_name == "qwen3_8b" and cfg.learner.lr == pytest.approx(1e-6)


def test_model_path_shorthand(run_module, tmp_path):
    out = run_module("aac.train", "--cfg", "job", f"model={tmp_path}", timeout=120)
    assert out.returncode == 0, out.stderr
    assert OmegaConf.create(out.stdout).model.name == str(tmp_path)


def test_help_shows_the_default_recipe_and_points_to_the_reference(run_module):
    out = run_module("aac.train", "--help", timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("python -m aac.train [+recipe=NAME]")
    assert "recipe_name: smollm2_cpu" in out.stdout and "max_steps: 12" in out.stdout  # the recipe's env.max_steps
    assert "docs/config.md" in out.stdout


def test_default_recipe_is_smollm2_cpu(run_module):
    out = run_module("aac.train", "--cfg", "job", timeout=120)
    assert out.returncode == 0, out.stderr
    cfg = OmegaConf.create(out.stdout)
    assert cfg.recipe_name == "smollm2_cpu" and cfg.model.name == "smollm2_135m"


@pytest.mark.slow
def test_installed_wheel_carries_configs(tmp_path, run_module):
    """From an installed wheel (not the checkout), recipes compose the same way."""
    import os
    import subprocess
    import sys

    from conftest import ROOT

    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                    str(ROOT), "-w", str(tmp_path / "whl")], check=True, capture_output=True)
    wheel = next((tmp_path / "whl").glob("aac-*.whl"))
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target",
                    str(tmp_path / "site"), str(wheel)], check=True, capture_output=True)
    env = dict(os.environ, PYTHONPATH=str(tmp_path / "site"))
    out = run_module("aac.train", "--cfg", "job", "+recipe=qwen3_8b", cwd=tmp_path, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert OmegaConf.create(out.stdout).recipe_name == "qwen3_8b"
    where = subprocess.run([sys.executable, "-c", "import aac; print(aac.__file__)"], cwd=tmp_path, env=env,
                           capture_output=True, text=True, check=True).stdout
    assert where.startswith(str(tmp_path / "site"))


def test_eval_data_follows_env_data_and_gpu_recipes_are_gpu_shaped():
    """eval.data defaults to what training reads (its test split); qwen3_8b runs CUDA graphs, the batched
    sampler and large micro-batches on GPU, and the CPU build's settings on CPU (None: decided by the engine)."""
    assert compose("+recipe=qwen3_8b").eval.data == "DJ-Research/PAU-Benchmark"
    assert compose("env.domain=library").eval.data == "builtin:library"
    assert compose("env.data=rows.jsonl").eval.data == "rows.jsonl"
    assert compose("env.data=rows.jsonl", "eval.data=other.jsonl").eval.data == "other.jsonl"
    flagship, demo = compose("+recipe=qwen3_8b"), compose("+recipe=smollm2_cpu")
    for cfg in (flagship, demo):
        assert cfg.rollout.enforce_eager is None and cfg.rollout.per_request_seeds is None
    assert flagship.learner.micro_batch_tokens >= 32768
