"""`python -m aac.skyrl +recipe=NAME [overrides] [skyrl.KEY=VALUE ...] [--cfg job]`

Composes our config as `aac.train` does (recipes, `model=...`, one-line errors), builds SkyRL's config
from it (aac/skyrl/translate.py; `skyrl.KEY=VALUE` sets any SkyRL key on top, e.g.
`skyrl.trainer.fully_async.enabled=true`), and starts SkyRL's trainer with our generator, env, critic
and estimator. `--cfg job` prints the SkyRL config and starts nothing.

Before the trainer starts, the training instances are written where `data.train_data` points
(`OUT_DIR/skyrl_data/train.parquet`: one row per function, our first prompt plus the PAU columns the
env reads). GPUs only (SkyRL's FSDP workers and vLLM servers); docs/skyrl.md has the launch.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Optional

from aac.errors import entry_point

if TYPE_CHECKING:
    from aac.config import TrainConfig
    from aac.env.instance import Instance
    from aac.skyrl.config import AACTrainConfig

log = logging.getLogger("aac.skyrl")
DEFAULT_RECIPE = "qwen3_8b"  # the paper's run
PREFIX = "skyrl."


def write_prompts(cfg: TrainConfig, path: str) -> int:
    """The run's training instances as SkyRL's prompt dataset (parquet); returns how many."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from aac.datasets import load_instances
    from aac.env.instance import DatasetError
    from aac.env.protocol import Episode, ProtocolConfig
    from aac.env.rows import to_row
    from aac.skyrl.translate import ENV_CLASS

    instances = load_instances(cfg.env.data, split=cfg.env.split, limit=cfg.env.limit,
                               on_bad_row=cfg.env.on_bad_row, domain=cfg.env.domain)
    if not instances:
        raise DatasetError(f"{cfg.env.data}: no usable instances (split {cfg.env.split})")
    protocol = ProtocolConfig.from_env(cfg.env)

    def first_prompt(instance: Instance) -> list[dict]:  # what SkyRL's length filter measures; no call is made
        return Episode(instance, protocol, caller=lambda *call: None).prompt()

    rows = [{"prompt": first_prompt(i), "env_class": ENV_CLASS, **to_row(i)} for i in instances]
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), path)
    return len(rows)


@entry_point
def main(argv: Optional[list[str]] = None) -> None:
    from omegaconf import OmegaConf

    from aac.cli import compose_argv

    argv = list(sys.argv[1:] if argv is None else argv)
    theirs = [a[len(PREFIX):] for a in argv if a.startswith(PREFIX)]
    flags, cfg = compose_argv([a for a in argv if not a.startswith(PREFIX)], "config", DEFAULT_RECIPE)
    out_dir = str(OmegaConf.select(cfg, "out_dir"))
    from aac.skyrl.config import config_yaml, skyrl_config

    skyrl_cfg = skyrl_config(cfg, out_dir, theirs)
    if "--cfg" in flags:
        print(config_yaml(skyrl_cfg), end="")
        return
    launch(cfg, skyrl_cfg)


def launch(cfg: TrainConfig, skyrl_cfg: AACTrainConfig) -> None:
    """Write the prompts, register our estimator, check with SkyRL, and run its trainer under Ray."""
    import ray

    from aac.skyrl._skyrl import initialize_ray, validate_cfg
    from aac.skyrl.estimator import register_estimator
    from aac.skyrl.trainer import run_experiment

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    count = write_prompts(cfg, skyrl_cfg.data.train_data[0])
    log.info("%d functions -> %s; SkyRL's trainer starts (out: %s)", count, skyrl_cfg.data.train_data[0],
             skyrl_cfg.trainer.export_path)
    estimator = (str(cfg.rewards.advantage), float(cfg.rewards.w_step), float(cfg.rewards.eps))
    register_estimator(*estimator)  # SkyRL's checks look the estimator up by name
    validate_cfg(skyrl_cfg)
    initialize_ray(skyrl_cfg)
    ray.get(run_experiment.remote(skyrl_cfg, estimator))


if __name__ == "__main__":
    main()
