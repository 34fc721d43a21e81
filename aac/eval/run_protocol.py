"""An eval of a training run's checkpoint plays the protocol that run trained the adapter on.

`python -m aac.train` (and `python -m aac.sft`) save their composed config in the run folder
(`OUT/config.yaml`, aac/run_dir.py). When `checkpoint=` lies in such a run (its out_dir, a step
folder, its `adapter/`, or a synced `adapters/vN`), or `eval.protocol_from=OUT` names one (the base
model under a tuned run's protocol, for a paired comparison), the eval takes from that config every
key below that its own command line does not set:

- the protocol (`PROTOCOL`): the model, the domain, the prompt style, layout and answer cues, the observation
  clips, and the token budgets and stop strings of each turn: the run's rollouts' (`rollout.*`), or for
  an SFT run the setting its traces were played in (its `eval.*`);
- how the run served and scored its model (`SERVING`): dtype, context length, engine kind, LoRA mode,
  KV cache, threads, and its eval section's judge scoring and judge/coder budgets.

The eval's own setting stays the eval's: the split, the PAU window and call budget, greedy sampling.
One log line says what came from the run; a protocol key that ends up different from the run's (set
on the command line) is allowed, and warned about, key by key.
"""

from __future__ import annotations

import copy
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import aac.run_dir as run_dir
from aac.config import ConfigError, TrainConfig

log = logging.getLogger("aac.eval")
# eval key -> the run's key it comes from ({phase}: rollout for aac.train, eval for an SFT run)
PROTOCOL = {
    "model.name": "model.name", "model.chat_template_kwargs": "model.chat_template_kwargs",
    "env.domain": "env.domain", "env.prompt_style": "env.prompt_style", "env.prompt_layout": "env.prompt_layout",
    "env.answer_cues": "env.answer_cues", "env.shaped_input_cue": "env.shaped_input_cue",
    "env.max_observation_chars": "env.max_observation_chars", "env.max_window_chars": "env.max_window_chars",
    "eval.max_tokens_per_turn": "{phase}.max_tokens_per_turn",
    "eval.max_tokens_per_phase": "{phase}.max_tokens_per_phase", "eval.stop_per_phase": "{phase}.stop_per_phase",
}
SERVING = {k: k for k in (
    "model.dtype", "model.max_model_len", "rollout.engine", "rollout.lora_mode", "rollout.kv_cache_gb",
    "rollout.cpu_threads", "rollout.vllm_in_process", "rollout.plain_base_batches", "rollout.max_lora_rank",
    "eval.judge_scoring", "eval.judge_max_tokens", "eval.coder_max_tokens")}
GROUPS = {"model": "model.name"}  # a config group chosen on the command line (`model=NAME`) sets this key
_ABSENT = object()


@dataclass
class RunProtocol:
    run_dir: Path
    taken: dict[str, Any] = field(default_factory=dict)  # eval key -> the run's value, applied
    differs: dict[str, tuple[Any, Any]] = field(default_factory=dict)  # protocol key -> (eval's, run's)

    def line(self) -> str:
        p = {k.split(".")[-1]: v for k, v in self.taken.items() if k in PROTOCOL}
        kept = sorted(k for k in PROTOCOL if k not in self.taken)
        return (f"playing the protocol of training run {self.run_dir} ({_short(p)})"
                + (f", except {', '.join(kept)} set here" if kept else "")
                + f"; its serving ({_short({k.split('.')[-1]: v for k, v in self.taken.items() if k in SERVING})})")


def _short(values: dict) -> str:
    return ", ".join(f"{k}={json.dumps(v) if isinstance(v, (dict, list)) else v}" for k, v in values.items()) or "-"


def protocol_run(protocol_from: Optional[str], adapter: Optional[Path]) -> Optional[Path]:
    """The run whose protocol an eval plays: `eval.protocol_from`, else the run `adapter` lies in."""
    if protocol_from is None:
        return run_dir.saved_run(adapter) if adapter is not None else None
    run = Path(protocol_from).expanduser()
    if run_dir.config_file(run) is None:
        raise ConfigError(f"eval.protocol_from={protocol_from}: no saved run config ({run_dir.CONFIG}) there; "
                          "give the out_dir of an aac.train run")
    return run


def given_keys(overrides: Sequence[str]) -> set[str]:
    """The keys of `PROTOCOL` and `SERVING` that these Hydra override strings set (a dict key set in part,
    `eval.max_tokens_per_phase.reflect=64`, counts as set)."""
    given = set()
    for ov in overrides:
        key = ov.split("=", 1)[0].lstrip("+~")
        given |= {k for k in (*PROTOCOL, *SERVING) if key == k or key.startswith(k + ".")}
        if key in GROUPS:
            given.add(GROUPS[key])
    return given


def apply_run_protocol(cfg: TrainConfig, trained: Path, overrides: Sequence[str]) -> tuple[TrainConfig, RunProtocol]:
    """`cfg` with the keys that `overrides` (the command line's) leave unset taken from the config of run `trained`."""
    from omegaconf import OmegaConf

    run = OmegaConf.load(run_dir.config_file(trained))
    phase = "eval" if OmegaConf.select(run, "sft.data", default="") else "rollout"  # an SFT run's traces: eval's
    given = given_keys(overrides)
    out = copy.deepcopy(cfg)
    found = RunProtocol(trained)
    for key, source in {**PROTOCOL, **SERVING}.items():
        value = OmegaConf.select(run, source.format(phase=phase), default=_ABSENT, throw_on_missing=False)
        if value is _ABSENT:
            continue  # a key the run's config does not have (an older run): the eval's
        value = _plain(value)
        if key in given:
            if key in PROTOCOL and _plain(OmegaConf.select(cfg, key)) != value:
                found.differs[key] = (_plain(OmegaConf.select(cfg, key)), value)
            continue
        OmegaConf.update(out, key, value, merge=False)
        found.taken[key] = value
    return out, found


def _plain(value: object) -> object:
    from omegaconf import OmegaConf

    value = OmegaConf.to_container(value, resolve=True) if OmegaConf.is_config(value) else value
    return getattr(value, "value", value)  # a config Choice as its string


def play_runs_protocol(cfg: TrainConfig, adapter: Optional[Path], overrides: Sequence[str], *,
                       announce: bool = True) -> TrainConfig:
    """`cfg` under the protocol of the run that `adapter` lies in (or of `eval.protocol_from`), said in one
    log line (`announce`); a checkpoint outside any run with a saved config plays `cfg`'s own protocol, with a
    warning."""
    trained = protocol_run(cfg.eval.protocol_from, adapter)
    if trained is None:
        if adapter is not None and announce:
            log.warning("checkpoint %s lies in no training run with a saved config (%s): it plays this eval's "
                        "protocol, which may not be the one it was trained on (eval.protocol_from=RUN plays a "
                        "run's)", adapter, run_dir.CONFIG)
        return cfg
    cfg, found = apply_run_protocol(cfg, trained, overrides)
    if announce:
        log_run_protocol(found)
    return cfg


def log_run_protocol(found: RunProtocol) -> None:
    log.info(found.line())
    for key, (here, run) in found.differs.items():
        log.warning("%s=%s differs from the run's training protocol (%s): the adapter is evaluated under a "
                    "protocol it was not trained on", key, json.dumps(here), json.dumps(run))
