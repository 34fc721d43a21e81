"""SkyRL's names that aac.skyrl uses, imported here and nowhere else (so only where SkyRL is wanted).

skyrl 0.3.0 declares Python >= 3.11, but `skyrl.backends` (which its generator, trainer and registries
import) builds a pydantic model on a `typing.TypedDict` (skyrl/tinker/types.py), which pydantic refuses
below Python 3.12. Below 3.12 that one module is loaded with `typing_extensions.TypedDict` in its place
(the same thing to Python, and what pydantic asks for there), and `typing` is restored right after.
SkyRL's own Ray workers import it without us: the GPU launch runs on Python 3.12 (SkyRL's own setup).
"""

from __future__ import annotations

import importlib
import sys
import typing

INSTALL = "see docs/skyrl.md, 'Running it', for the install command"


def _load_tinker_types() -> None:
    if sys.version_info >= (3, 12) or "skyrl.tinker.types" in sys.modules:
        return
    import typing_extensions

    saved = typing.TypedDict
    typing.TypedDict = typing_extensions.TypedDict  # type: ignore[misc]
    try:
        importlib.import_module("skyrl.tinker.types")
    finally:
        typing.TypedDict = saved  # type: ignore[misc]


try:
    _load_tinker_types()
    from skyrl.backends.skyrl_train.inference_servers.base import InferenceEngineInterface
    from skyrl.backends.skyrl_train.inference_servers.utils import resolve_policy_model_name
    from skyrl.backends.skyrl_train.training_batch import TrainingInputBatch
    from skyrl.backends.skyrl_train.utils.ppo_utils import AdvantageEstimatorRegistry
    from skyrl.train.config import EnvironmentConfig, SkyRLGymConfig, SkyRLTrainConfig, get_config_as_yaml_str
    from skyrl.train.entrypoints.main_base import BasePPOExp
    from skyrl.train.fully_async_trainer import FullyAsyncRayPPOTrainer
    from skyrl.train.generators.skyrl_gym_generator import SkyRLGymGenerator, StepWiseOutput
    from skyrl.train.trainer import RayPPOTrainer
    from skyrl.train.utils import validate_cfg
    from skyrl.train.utils.utils import initialize_ray
except ModuleNotFoundError as e:
    raise ModuleNotFoundError(f"aac.skyrl needs SkyRL's trainer (missing module {e.name!r}): {INSTALL}") from e

__all__ = ["AdvantageEstimatorRegistry", "BasePPOExp", "EnvironmentConfig", "FullyAsyncRayPPOTrainer",
           "InferenceEngineInterface", "RayPPOTrainer", "SkyRLGymConfig", "SkyRLGymGenerator", "SkyRLTrainConfig",
           "StepWiseOutput", "TrainingInputBatch", "get_config_as_yaml_str", "initialize_ray",
           "resolve_policy_model_name", "validate_cfg"]
