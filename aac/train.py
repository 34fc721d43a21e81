"""`python -m aac.train`: compose the config, build the pieces, run the AAC loop."""

from __future__ import annotations

import logging

from omegaconf import DictConfig, OmegaConf

from aac.cli import run_hydra
from aac.config import validate

log = logging.getLogger("aac.train")
DEFAULT_RECIPE = "smollm2_cpu"


def train(cfg: DictConfig) -> None:
    validate(cfg)
    from aac.models import resolve_model

    log.info("recipe %s: model %s", cfg.recipe_name, cfg.model.name)
    path = resolve_model(cfg.model.name)
    log.info("model ready at %s", path)
    log.info("training loop not yet implemented; config composed and model prepared")


def main() -> None:
    run_hydra(train, "config", DEFAULT_RECIPE)


if __name__ == "__main__":
    main()
