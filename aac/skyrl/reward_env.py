"""AAC's rewards under SkyRL: the PAU env whose step rewards are the privileged critic's scores put
through the schedule of `aac.train`, registered with `skyrl_gym` as "aac-pau-critic".

    import aac.skyrl.reward_env  # registers the id (skyrl_gym only: no SkyRL trainer needed)
    env = skyrl_gym.make("aac-pau-critic", extras={"instance": row_or_instance}, env_config={
        "max_steps": 12,  # ProtocolConfig fields, as for "aac-pau"
        "critic": {"backend": "openai", "model": "qwen3-8b", "openai": {"base_url": "http://127.0.0.1:8000/v1"}},
        "rewards": {"schedule": "aac_potential"},
    })

Where it lives: the env room (aac/env/skyrl_env.py, "aac-pau", reward 0) sits below the critic and
the rewards, so the env that scores turns lives in the SkyRL room, above the build path: its critic is
built by `aac.assembly.standalone_critic`, as a rollout worker's is by `aac.assembly`. It asks the critic
the questions `aac.train`'s rollout workers ask (aac/rollout/judgments.py) and computes rewards with the
same `aac.rewards.episode_rewards`: no copy of the schedule.

env_config: the `ProtocolConfig` fields of "aac-pau", plus two of `aac.train`'s sections, composed
over `TrainConfig`'s defaults with OmegaConf and checked by `aac.config.validate` as a run's are
(`rewards.t_max` resolves from `max_steps`, as `${env.max_steps}` does; an unknown or ill-typed key
is a one-line ValueError naming it):
- `critic` (`CriticConfig`): `backend=openai` scores through an OpenAI-compatible endpoint
  (`openai.base_url`; served name `openai.model` or `model`); `backend=vllm|hf` through an engine in
  this process serving `model` (`aac.assembly.standalone_critic`: the process's own engines, with
  `TrainConfig`'s model and rollout defaults); `kind=scripted` needs no engine. An LLM critic must name its backend: under
  SkyRL there is no aac actor engine to share. `critic: null`: no critic, every judgment is masked
  (docs/method.md §7.1 P5), so the rewards are the schedule's unjudged terms (length, parse, call,
  timeout).
- `rewards` (`RewardConfig`): the schedule and its constants.
SkyRL makes one env per episode, so a critic (its engine and its cache) is built once per process
and shared by every env with the same sections.

Reward scheme (online, exact). `episode_rewards` is defined per episode: under `aac_potential` the
timeout penalty is spread over the episode's NO reflects, and under every schedule a plan's
informativeness judges the input its input turn then called (`Judgment.query`). So each step pays
what became determined at that step: after step t the env scores the judgments now askable (a
plan's waits for the next turn), computes `episode_rewards` over the steps whose scores are known,
and returns the increase of that prefix's rewards over what it paid before. Hence:
- the rewards returned over an episode sum to `sum(episode_rewards(steps, scores))` exactly;
- a step's reward is its own `aac.train` reward, except that a judged plan (reasoning turn) returns
  0 and its reward is paid with the next step's (its input turn); and the last step also pays
  whatever the end decided (`aac_potential`'s timeout shares on earlier turns);
- `metadata` of the last step holds `rewards` (each step's reward exactly as `aac.train` assigns it,
  for a trainer that keeps turn-level credit), `scores` (the critic's, None where none) and `masked`.
An episode the trainer cuts off before it is done leaves at most its last plan unpaid.

`extras["on_done"]` (optional, a callable): given that last step's `metadata` when the episode ends,
for a generator that keeps only each step's reward (SkyRL's: aac/skyrl/generator.py restamps the
steps with `rewards`).
"""

from __future__ import annotations

import functools
import json
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Optional

from skyrl_gym.envs.base_text_env import BaseTextEnvStepOutput
from skyrl_gym.envs.registration import register, registry

from aac.env.observation import Observation
from aac.env.protocol import Caller, StepRecord
from aac.env.skyrl_env import PAUTextEnv
from aac.rewards.schedule import episode_rewards, masked_judgments
from aac.rollout.judgments import reads_next_turn, score_each, turn_judgment

if TYPE_CHECKING:
    from aac.config import CriticConfig, RewardConfig
    from aac.critic import Critic

ENV_ID = "aac-pau-critic"
SECTIONS = ("critic", "rewards")
ON_DONE = "on_done"  # extras key: called with the last step's metadata


@dataclass
class _Turn:
    step: StepRecord
    hypothesis: str  # what the actor had seen when it wrote the turn
    observations: list[Observation]


def reward_sections(critic: Optional[Mapping[str, object]], rewards: Optional[Mapping[str, object]], max_steps: int,
                    domain: str = "pau") -> tuple[Optional[CriticConfig], RewardConfig]:
    """The `critic` (None: none) and `rewards` sections as `CriticConfig` / `RewardConfig`, composed
    over `TrainConfig`'s defaults and validated as `aac.train` validates a run of `domain`."""
    from omegaconf import DictConfig, OmegaConf

    plain = []
    for name, section in (("critic", critic), ("rewards", rewards)):
        if section is not None and not isinstance(section, (Mapping, DictConfig)):
            raise ValueError(f"{ENV_ID}: env_config.{name} must be a mapping, got {section!r}")
        plain.append(OmegaConf.to_container(OmegaConf.create(section)) if section is not None else None)
    return _composed(json.dumps(plain, sort_keys=True), max_steps, domain)


@functools.lru_cache(maxsize=64)
def _composed(sections: str, max_steps: int, domain: str) -> tuple[Optional[CriticConfig], RewardConfig]:
    """Composing costs ~0.1 s, and SkyRL makes one env per episode: once per distinct env_config."""
    from omegaconf import OmegaConf
    from omegaconf.errors import ConfigKeyError

    from aac.config import TrainConfig, validate
    from aac.settings import named_error

    critic, rewards = json.loads(sections)
    try:
        cfg = OmegaConf.merge(OmegaConf.structured(TrainConfig),
                              {"env": {"max_steps": max_steps, "domain": domain}, "critic": critic or {}, "rewards": rewards or {}})
        validate(cfg)
        return (None if critic is None else OmegaConf.to_object(cfg.critic)), OmegaConf.to_object(cfg.rewards)
    except ConfigKeyError as e:
        raise ValueError(f"{ENV_ID}: unknown env_config key {e.full_key}") from None
    except Exception as e:
        named = named_error(e)
        if named is None and not isinstance(e, ValueError):
            raise
        raise ValueError(f"{ENV_ID}: {named or e}") from None


_CRITICS: dict[str, Critic] = {}
_LOCK = threading.Lock()


def _check_critic(critic: CriticConfig) -> None:
    """An LLM critic names its backend and model: there is no actor engine of ours to share."""
    if critic.kind != "llm":
        return
    if critic.backend is None:
        raise ValueError(f"{ENV_ID}: critic.backend must be set (openai: an endpoint; vllm or hf: an engine in "
                         "this process): under SkyRL there is no aac actor engine to share")
    if not (critic.model or (critic.backend == "openai" and critic.openai.model)):
        raise ValueError(f"{ENV_ID}: critic.model must name the critic's model"
                         + (" (or critic.openai.model its served name)" if critic.backend == "openai" else ""))


def shared_critic(critic: CriticConfig, stop_threshold: float, spread_list: bool) -> Critic:
    """The process's critic for these sections, built on first use by `aac.assembly.standalone_critic`."""
    from aac.assembly import standalone_critic

    _check_critic(critic)
    key = repr((critic, stop_threshold, spread_list))
    with _LOCK:
        if key not in _CRITICS:
            _CRITICS[key] = standalone_critic(critic, stop_threshold=stop_threshold, spread_list=spread_list)
        return _CRITICS[key]


class CriticRewardEnv(PAUTextEnv):
    env_id = ENV_ID

    def __init__(self, env_config: Mapping[str, object] | None = None, extras: dict | None = None,
                 caller: Caller | None = None):
        settings = dict(env_config or {})
        sections = {name: settings.pop(name, {}) for name in SECTIONS}
        super().__init__(settings, extras, caller)
        critic, self.rewards = reward_sections(sections["critic"], sections["rewards"], self.episode.cfg.max_steps,
                                              self.episode.instance.domain)
        self.critic = None if critic is None else shared_critic(critic, self.rewards.stop_threshold,
                                                                self.episode.cfg.spread_list)
        self._turns: list[_Turn] = []
        self._scores: list[Optional[float]] = []  # of the steps whose judgment was asked (a prefix)
        self._paid: list[float] = []  # per step, what has been paid for it so far
        self._on_done = (extras or {}).get(ON_DONE)

    def step(self, action: str) -> BaseTextEnvStepOutput:
        hypothesis, observations = self.episode.hypothesis, self.episode.observations
        out = super().step(action)
        self._turns.append(_Turn(out["metadata"]["step"], hypothesis, observations))
        out["reward"] = self._settle(out["done"])
        if out["done"]:
            steps = [t.step for t in self._turns]
            out["metadata"].update(rewards=list(self._paid), scores=list(self._scores),
                                   masked=masked_judgments(steps, self._scores, self.rewards))
            if self._on_done is not None:
                self._on_done(out["metadata"])
        return out

    def _settle(self, done: bool) -> float:
        """Score the judgments now determined; pay the increase of the settled prefix's rewards."""
        turns = self._turns
        settled = len(turns) if done or not reads_next_turn(turns[-1].step, self.rewards) else len(turns) - 1
        asks = [turn_judgment(self.episode.instance, turns[t], turns[t + 1].step if t + 1 < len(turns) else None,
                              self.rewards) for t in range(len(self._scores), settled)]
        self._scores += [None] * len(asks) if self.critic is None else score_each(self.critic, asks)
        rewards = episode_rewards([t.step for t in turns[:settled]], self._scores, self.rewards)
        paid = self._paid + [0.0] * (settled - len(self._paid))
        self._paid = rewards
        # a settled step's reward does not change until the end, so this is 0.0 for those paid before
        return sum((r - p for r, p in zip(rewards, paid)), 0.0)

    def get_metrics(self) -> dict[str, Any]:
        steps = [t.step for t in self._turns[:len(self._scores)]]
        masked = sum(m is not None for m in masked_judgments(steps, self._scores, self.rewards))
        return {**super().get_metrics(), "return": float(sum(self._paid)), "masked_judgments": float(masked)}


if ENV_ID not in registry:
    register(id=ENV_ID, entry_point="aac.skyrl.reward_env:CriticRewardEnv")
