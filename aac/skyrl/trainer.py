"""SkyRL's PPO trainers with our per-turn credit, and the experiment that runs them.

SkyRL's step-wise branch (`RayPPOTrainer.compute_advantages_and_returns`) gives the estimator only
each trajectory's last row and broadcasts its advantage to every turn: per-turn rewards are dropped.
`StepCredit` gives the "aac" estimator every row with the episode boundaries, so each turn gets its
own advantage (`aac.rewards.step_advantages`); any other estimator runs SkyRL's own branch.
`AACExp` is SkyRL's `BasePPOExp` with our generator and these trainers (fully async when
`trainer.fully_async.enabled`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

import numpy as np
import ray
import torch

from aac.skyrl._skyrl import (
    AdvantageEstimatorRegistry,
    BasePPOExp,
    FullyAsyncRayPPOTrainer,
    RayPPOTrainer,
    TrainingInputBatch,
    resolve_policy_model_name,
)
from aac.skyrl.estimator import episodes_of, register_estimator
from aac.skyrl.generator import AACGymGenerator
from aac.skyrl.translate import ESTIMATOR

if TYPE_CHECKING:
    from skyrl.backends.skyrl_train.inference_servers.base import InferenceEngineInterface
    from skyrl.train.config import SkyRLTrainConfig
    from skyrl.train.dataset import PromptDataset
    from skyrl.train.generators.base import GeneratorInterface
    from skyrl.train.utils.tracking import Tracking
    from skyrl.train.utils.utils import ResolvedPlacementGroup
    from transformers import PreTrainedTokenizerBase

    from aac.skyrl.config import AACTrainConfig


class StepCredit:
    """Mixin over a SkyRL trainer: the "aac" estimator scores every step row."""

    @torch.no_grad()
    def compute_advantages_and_returns(self, data: TrainingInputBatch) -> TrainingInputBatch:
        algorithm = self.cfg.trainer.algorithm
        if algorithm.advantage_estimator != ESTIMATOR:
            return super().compute_advantages_and_returns(data)
        last = [bool(x) for x in data.metadata["is_last_step"]]
        advantages, returns = AdvantageEstimatorRegistry.get(ESTIMATOR)(
            token_level_rewards=data["rewards"], response_mask=data["response_mask"],
            index=np.array(data.metadata["uids"]), is_last_step=last, config=algorithm)
        data["advantages"], data["returns"] = advantages, returns
        # SkyRL's metrics under its names; "final rewards" is the episode's return here (its rewards
        # are per turn), over real rows only (SkyRL pads the batch at its end)
        real = len(last) - data.metadata.get("pad_size", 0)
        step_rewards = data["rewards"].sum(dim=-1)[:real].tolist()
        episode_returns = [sum(step_rewards[r] for r in rows) for rows in episodes_of(last[:real])]
        mask = data["response_mask"][:real].bool()
        valid = advantages[:real][mask]
        metrics = {"avg_final_rewards": float(np.mean(episode_returns)),
                   "avg_response_length": data.metadata["avg_response_length"],
                   "avg_advantages": valid.mean().item(), "avg_advantages_abs": valid.abs().mean().item()}
        data.metadata.setdefault("metrics", {}).update(metrics)
        self.all_metrics.update({"loss/avg_final_rewards": metrics["avg_final_rewards"],
                                 "loss/avg_raw_advantages": metrics["avg_advantages"],
                                 "loss/avg_raw_advantages_abs": metrics["avg_advantages_abs"]})
        return data


class StepCreditTrainer(StepCredit, RayPPOTrainer):
    pass


class StepCreditAsyncTrainer(StepCredit, FullyAsyncRayPPOTrainer):
    pass


class AACExp(BasePPOExp):
    def get_generator(self, cfg: SkyRLTrainConfig, tokenizer: PreTrainedTokenizerBase,
                      inference_engine_client: InferenceEngineInterface) -> AACGymGenerator:
        return AACGymGenerator(cfg.generator, cfg.environment.skyrl_gym, inference_engine_client, tokenizer,
                               policy_model_name=resolve_policy_model_name(cfg))

    def get_trainer(self, cfg: SkyRLTrainConfig, tracker: Tracking, tokenizer: PreTrainedTokenizerBase,
                    train_dataset: Optional[PromptDataset], eval_dataset: Optional[PromptDataset],
                    inference_engine_client: InferenceEngineInterface, generator: GeneratorInterface,
                    colocate_pg: Optional[ResolvedPlacementGroup]) -> RayPPOTrainer:
        trainer = StepCreditAsyncTrainer if cfg.trainer.fully_async.enabled else StepCreditTrainer
        return trainer(cfg=cfg, tracker=tracker, tokenizer=tokenizer, train_dataset=train_dataset,
                       eval_dataset=eval_dataset, inference_engine_client=inference_engine_client,
                       generator=generator, colocate_pg=colocate_pg)


@ray.remote(num_cpus=1)
def run_experiment(skyrl_cfg: AACTrainConfig, estimator: tuple[str, float, float]) -> None:
    """SkyRL's entrypoint task (off the head node, as SkyRL's own), with our estimator registered in it
    (importing this module registered "aac-pau-critic": aac/skyrl/generator.py)."""
    register_estimator(*estimator)
    AACExp(skyrl_cfg).run()
