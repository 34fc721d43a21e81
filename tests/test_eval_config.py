"""The eval CLI's config: composes with every recipe, short forms, its own checks."""

from __future__ import annotations

import pytest

from aac.cli import rewrite_aliases
from aac.config import ConfigError, compose, resource_dir

RECIPES = sorted(p.stem for p in resource_dir("recipes").glob("*.yaml"))


def _cfg(*overrides):
    return compose(*rewrite_aliases(list(overrides)), config_name="eval_config")


@pytest.mark.parametrize("recipe", RECIPES)
def test_every_recipe_composes_for_eval(recipe):
    cfg = _cfg(f"+recipe={recipe}", "checkpoint=runs/x")
    assert cfg.eval.checkpoint == "runs/x" and cfg.eval.history_window == 10 and cfg.eval.max_calls == 25


def test_defaults_are_the_paper_protocol_and_greedy():
    e = _cfg().eval
    assert (e.mode, e.max_calls, e.history_window, e.call_timeout_s, e.temperature) == ("interactive", 25, 10, 30.0, 0.0)


def test_short_forms():
    assert rewrite_aliases(["mode=in_context", "data=x.jsonl", "limit=3", "model=m", "eval.gold=true"]) == [
        "eval.mode=in_context", "eval.data=x.jsonl", "eval.limit=3", "model=m", "eval.gold=true"]
    cfg = _cfg("mode=in_context", "judge=tiny_qwen3", "engine=hf", "limit=3")
    assert (cfg.eval.mode, cfg.eval.judge_model, cfg.eval.engine, cfg.eval.limit) == ("in_context", "tiny_qwen3",
                                                                                    "hf", 3)


@pytest.mark.parametrize("override, key", [("engine=gpu", "eval.engine"), ("eval.batch_size=0", "eval.batch_size"),
                                           ("limit=0", "eval.limit")])
def test_bad_eval_values_name_the_key(override, key):
    with pytest.raises(ConfigError, match=key):
        _cfg(override)


def test_bad_value_on_the_command_line_is_one_line(run_module, tmp_path):
    res = run_module("aac.eval", "engine=gpu", f"out_dir={tmp_path}", timeout=120)
    assert res.returncode != 0
    assert res.stderr.strip().splitlines()[-1] == "aac: config error: eval.engine: Invalid value 'gpu', expected one of [vllm, hf, openai]"
