"""SkyRL's typed config for our run: its `SkyRLTrainConfig`, extended (as SkyRL asks: by subclassing)
with a place for the settings of "aac-pau-critic", built from `translate.skyrl_overrides` plus the
command line's `skyrl.KEY=VALUE` overrides, and checked by SkyRL's own dataclasses (an unknown key is
refused).

No `from __future__ import annotations` here: SkyRL builds nested configs from the fields' real types.
"""

from dataclasses import dataclass, field
from typing import Any

from aac.config import ConfigError, TrainConfig
from aac.skyrl._skyrl import EnvironmentConfig, SkyRLGymConfig, SkyRLTrainConfig, get_config_as_yaml_str
from aac.skyrl.translate import skyrl_overrides


@dataclass
class AACGymConfig(SkyRLGymConfig):
    aac_pau_critic: dict[str, Any] = field(default_factory=dict)

    def __getattr__(self, name: str) -> Any:
        # SkyRL looks an env's settings up by its id ("aac-pau-critic"), which no field can spell
        if "-" in name:
            return getattr(self, name.replace("-", "_"))
        raise AttributeError(name)


@dataclass
class AACEnvironmentConfig(EnvironmentConfig):
    skyrl_gym: AACGymConfig = field(default_factory=AACGymConfig)


@dataclass
class AACTrainConfig(SkyRLTrainConfig):
    environment: AACEnvironmentConfig = field(default_factory=AACEnvironmentConfig)


def skyrl_config(cfg: TrainConfig, out_dir: str, overrides: list[str] = ()) -> AACTrainConfig:
    """SkyRL's config of our run; `overrides` are SkyRL dotlist overrides (`trainer.strategy=fsdp2`)."""
    from omegaconf import OmegaConf

    try:
        merged = OmegaConf.merge(OmegaConf.create(skyrl_overrides(cfg, out_dir)), OmegaConf.from_dotlist(list(overrides)))
        return AACTrainConfig.from_dict_config(merged)
    except ConfigError:
        raise
    except Exception as e:  # SkyRL's checks: unknown keys (ValueError), bad values (assertions, TypeError)
        raise ConfigError(f"skyrl: {' '.join(str(e).split())}") from None


def config_yaml(skyrl_cfg: AACTrainConfig) -> str:
    return get_config_as_yaml_str(skyrl_cfg)
