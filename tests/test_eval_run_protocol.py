"""An eval of a training run's checkpoint plays the run's protocol (aac/eval/run_protocol.py): the keys
come from the run's saved config (`OUT/config.yaml`, aac/run_dir.py; an older run's `.hydra/config.yaml`) unless the
command line sets them, and a protocol set differently is warned about. The end-to-end case, a real
`python -m aac.train` run evaluated through `make demo`'s closing step, is in tests/test_side_by_side.py."""

from __future__ import annotations

import json
import logging
import shutil

import pytest
from omegaconf import OmegaConf

from aac.cli import rewrite_aliases
from aac.config import ConfigError, compose
from aac.eval.harness import evaluate
from aac.eval.run_protocol import apply_run_protocol, given_keys, play_runs_protocol, protocol_run
from aac.run_dir import CONFIG, OLD_CONFIG, saved_run

STOPS = {"reasoning": ["\n"], "input": ["\n"], "reflect": ["Decision: YES", "Decision: NO"]}


def _training_run(tmp_path, *overrides: str, config=CONFIG):
    """A run folder as `python -m aac.train +recipe=smollm2_cpu` leaves it: the composed config where it saves it
    (`config=OLD_CONFIG`: where Hydra saved it for runs before config.yaml), and a checkpoint's adapter."""
    run = tmp_path / "run"
    (run / config).parent.mkdir(parents=True)
    OmegaConf.save(compose("+recipe=smollm2_cpu", *overrides), run / config)
    adapter = run / "checkpoints" / "step_000010" / "adapter"
    adapter.mkdir(parents=True)
    (adapter / "adapter_config.json").write_text(json.dumps({"r": 8}))
    return run, adapter


def _eval_cfg(*args: str):
    return compose(*rewrite_aliases(list(args)), config_name="eval_config")


def test_a_checkpoint_of_a_run_takes_the_runs_protocol_unless_set(tmp_path, caplog):
    run, adapter = _training_run(tmp_path, "+rollout.max_tokens_per_phase.reflect=40")
    assert saved_run(adapter) == run and saved_run(tmp_path) is None
    # docs/usage.md's form: model= and limit= given, nothing else: every protocol key comes from the run
    args = ["model=smollm2_135m", f"checkpoint={adapter}", "limit=8"]
    cfg, found = apply_run_protocol(_eval_cfg(*args), run, rewrite_aliases(args))
    e = cfg.eval
    assert (cfg.env.prompt_style, cfg.env.answer_cues, cfg.model.name) == ("compact", True, "smollm2_135m")
    assert e.max_tokens_per_turn == 48 and dict(e.max_tokens_per_phase) == {"reasoning": 32, "input": 24, "reflect": 40}
    assert OmegaConf.to_container(e.stop_per_phase) == STOPS
    assert (cfg.rollout.lora_mode, cfg.model.max_model_len, e.judge_scoring) == ("merged", 2048, "logprob")
    assert (e.max_calls, e.history_window, e.limit) == (25, 10, 8)  # the eval's own setting stays
    assert not found.differs and "prompt_style=compact" in found.line()
    # the prompt layout too: a run trained under shared_first is evaluated under it (an older run: .hydra/'s config)
    shared, _ = _training_run(tmp_path / "shared", "env.prompt_layout=shared_first", config=OLD_CONFIG)
    assert saved_run(shared / "adapters" / "v000003") == shared
    assert apply_run_protocol(_eval_cfg(*args), shared, rewrite_aliases(args))[0].env.prompt_layout == "shared_first"
    # without the run: the paper's protocol of the plain eval config
    plain = _eval_cfg(*args)
    assert (plain.env.prompt_style, dict(plain.eval.stop_per_phase), plain.eval.max_tokens_per_turn) == ("paper", {}, 1024)

    # a protocol key set on the command line wins, and is warned about; a serving key silently
    override = ["eval.stop_per_phase={}", "rollout.lora_mode=adapter", "env.answer_cues=true"]
    cfg, found = apply_run_protocol(_eval_cfg(*args, *override), run, rewrite_aliases([*args, *override]))
    assert dict(cfg.eval.stop_per_phase) == {} and cfg.rollout.lora_mode == "adapter"
    assert set(found.differs) == {"eval.stop_per_phase"}  # answer cues: set, but as the run had them
    assert "eval.stop_per_phase" in found.line()
    from aac.eval.run_protocol import log_run_protocol

    with caplog.at_level(logging.INFO, logger="aac.eval"):
        log_run_protocol(found)
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warned) == 1 and warned[0].startswith("eval.stop_per_phase={} differs from the run's training protocol")


def test_given_keys_and_where_the_run_is_found(tmp_path):
    assert given_keys(["model=smollm2_135m", "+recipe=smollm2_cpu", "eval.max_tokens_per_phase.reflect=64",
                       "eval.max_calls=3"]) == {"model.name", "eval.max_tokens_per_phase"}
    run, adapter = _training_run(tmp_path)
    assert protocol_run(None, adapter) == run and protocol_run(str(run), None) == run
    assert protocol_run(None, None) is None
    with pytest.raises(ConfigError, match=r"eval.protocol_from=.*: no saved run config"):
        protocol_run(str(tmp_path), None)
    # an SFT run's traces were played in its eval setting: that is the protocol taken
    sft_run = tmp_path / "sft"
    sft_run.mkdir()
    OmegaConf.save(compose("+recipe=smollm2_cpu", "sft.data=runs/x", "eval.max_tokens_per_turn=77"), sft_run / CONFIG)
    cfg, _ = apply_run_protocol(_eval_cfg(), sft_run, [])
    assert cfg.eval.max_tokens_per_turn == 77 and "reflect" not in cfg.eval.max_tokens_per_phase


def test_a_checkpoint_outside_a_saved_run_plays_the_evals_protocol_with_a_warning(tmp_path, caplog):
    """A bare adapter folder (no OUT/config.yaml above it) keeps the eval's config, and says so."""
    adapter = tmp_path / "bare" / "adapter"
    adapter.mkdir(parents=True)
    cfg = _eval_cfg()
    with caplog.at_level(logging.INFO, logger="aac.eval"):
        assert play_runs_protocol(cfg, adapter, []) is cfg
        assert play_runs_protocol(cfg, None, []) is cfg  # the base model, no checkpoint: nothing to say
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warned) == 1 and f"checkpoint {adapter} lies in no training run" in warned[0]
    run, in_run = _training_run(tmp_path)
    with caplog.at_level(logging.INFO, logger="aac.eval"):
        assert play_runs_protocol(cfg, in_run, []).env.prompt_style == "compact" != cfg.env.prompt_style


def test_the_harness_plays_the_runs_protocol(tmp_path, tiny_model_path, make_random_lora, caplog):
    """`evaluate` on a tiny run's checkpoint: episodes played in its compact prompts with its caps and stops."""
    run = tmp_path / "tinyrun"
    run.mkdir()
    OmegaConf.save(compose("+recipe=tiny", "env.prompt_style=compact", "env.answer_cues=true",
                           "+rollout.max_tokens_per_phase.reasoning=5", "+rollout.max_tokens_per_phase.input=6",
                           "rollout.max_tokens_per_turn=7"),
                   run / CONFIG)
    step = run / "checkpoints" / "step_000001"
    step.mkdir(parents=True)
    shutil.copytree(make_random_lora(tiny_model_path, 0), step / "adapter")
    (step / "trainer.json").write_text("{}")  # marks a complete checkpoint
    out = tmp_path / "eval"
    args = [f"checkpoint={run}", "limit=2", "eval.max_calls=2", "eval.score=false", f"out_dir={out}",
            "logging.progress=false", "env.sandbox.workers=1"]
    with caplog.at_level(logging.INFO, logger="aac.eval"):
        evaluate(_eval_cfg(*args), overrides=rewrite_aliases(args))
    identity = json.loads((out / "run.json").read_text())
    assert (identity["model"], identity["engine"], identity["prompt_style"]) == ("tiny_qwen3", "hf", "compact")
    assert identity["max_tokens_per_turn"] == 7 and identity["max_tokens_per_phase"] == {"reasoning": 5, "input": 6}
    episodes = [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]
    assert len(episodes) == 2
    steps = [s for ep in episodes for s in ep["steps"]]
    assert {s["prefill"] for s in steps if s["phase"] == "input"} == {"Input: ("}  # the compact style's answer cue
    assert any(f"playing the protocol of training run {run}" in r.getMessage() for r in caplog.records)
    # progress lines reach the log even though nothing here is a terminal
    assert any(r.getMessage().startswith("interactive episodes: 2/2 episodes") for r in caplog.records)
