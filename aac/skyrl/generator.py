"""SkyRL's `SkyRLGymGenerator` with each step of "aac-pau-critic" paid what `aac.train` pays it.

The env pays online: a judged plan's reward comes with the next step (its judgment reads the call it
led to), and `aac_potential`'s timeout penalty lands on earlier turns at the end
(aac/skyrl/reward_env.py). Only the sum is each step's own. SkyRL's generator keeps just the
reward each step returned, so this subclass (through SkyRL's two hooks) hands the env a callable that
receives the last step's metadata, and restamps every step row with `metadata["rewards"]`: exactly
`episode_rewards`, the rewards `aac.train` gives the same episode. An episode SkyRL cuts off (the
context is full) keeps its online pay.

Where the critic runs: `critic.openai.base_url=skyrl://policy` (aac/skyrl/translate.py) becomes the
inference client's OpenAI-compatible endpoint, and the critic asks for the base model there.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Optional, Union

from aac.skyrl._skyrl import SkyRLGymGenerator, StepWiseOutput
from aac.skyrl.reward_env import ON_DONE
from aac.skyrl.translate import ENV_CLASS, ENV_FIELD, POLICY_SERVERS

if TYPE_CHECKING:
    from skyrl.backends.skyrl_train.inference_servers.base import InferenceEngineInterface
    from skyrl.train.config import GeneratorConfig, SkyRLGymConfig
    from skyrl.train.generators.base import TrajectoryID
    from skyrl.train.generators.skyrl_gym_generator import TrajectoryOutput
    from transformers import PreTrainedTokenizerBase


class Settled:
    """The env's `on_done`: keeps the last step's rewards (None until the episode ends)."""

    def __init__(self) -> None:
        self.rewards: Optional[list[float]] = None

    def __call__(self, metadata: dict) -> None:
        self.rewards = list(metadata["rewards"])


def on_last_trained_token(loss_mask: list[int], reward: float) -> list[float]:
    """A step's token rewards: `reward` on its last token the loss trains (its first, if none)."""
    out = [0.0] * len(loss_mask)
    if out:
        out[max((i for i, m in enumerate(loss_mask) if m), default=0)] = float(reward)
    return out


def with_policy_critic(skyrl_gym_cfg: SkyRLGymConfig, client: InferenceEngineInterface) -> SkyRLGymConfig:
    """`skyrl_gym_cfg` with a critic on `POLICY_SERVERS` pointed at `client`'s endpoint (a copy)."""
    settings = getattr(skyrl_gym_cfg, ENV_FIELD, None)
    critic = (settings or {}).get("critic") or {}
    if critic.get("openai", {}).get("base_url") != POLICY_SERVERS:
        return skyrl_gym_cfg
    out = copy.deepcopy(skyrl_gym_cfg)
    openai = getattr(out, ENV_FIELD)["critic"]["openai"]
    openai["base_url"] = client.get_endpoint_url().rstrip("/") + "/v1"
    openai["model"] = client.model_name  # the base model as the servers name it (the policy is an adapter)
    return out


class AACGymGenerator(SkyRLGymGenerator):
    def __init__(self, generator_cfg: GeneratorConfig, skyrl_gym_cfg: SkyRLGymConfig,
                 inference_engine_client: InferenceEngineInterface, tokenizer: PreTrainedTokenizerBase,
                 policy_model_name: Optional[str] = None):
        if not generator_cfg.step_wise_trajectories or generator_cfg.merge_stepwise_output:
            raise ValueError("aac.skyrl's generator needs generator.step_wise_trajectories=true and "
                             "generator.merge_stepwise_output=false: each turn is a row with its own reward")
        super().__init__(generator_cfg, with_policy_critic(skyrl_gym_cfg, inference_engine_client),
                         inference_engine_client, tokenizer, policy_model_name)

    def _setup_env_extras(self, env_class: str, env_extras: dict, sampling_params: Optional[dict],
                          trajectory_id: Optional[TrajectoryID]) -> dict:
        env_extras = super()._setup_env_extras(env_class, env_extras, sampling_params, trajectory_id)
        if env_class == ENV_CLASS:
            env_extras[ON_DONE] = Settled()
        return env_extras

    def _post_process_agent_loop_output(self, agent_loop_output: Union[TrajectoryOutput, StepWiseOutput], env_extras: dict,
                                        trajectory_id: Optional[TrajectoryID]) -> Union[TrajectoryOutput, StepWiseOutput]:
        settled = env_extras.get(ON_DONE)
        if isinstance(agent_loop_output, StepWiseOutput) and isinstance(settled, Settled) and settled.rewards:
            for step, reward in zip(agent_loop_output.step_outputs, settled.rewards):
                step.reward = on_last_trained_token(step.loss_mask, reward)
        return super()._post_process_agent_loop_output(agent_loop_output, env_extras, trajectory_id)
