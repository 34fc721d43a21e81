"""The PAU protocol as a `skyrl_gym` text environment, registered as "aac-pau".

    import aac.env.skyrl_env  # registers the id
    env = skyrl_gym.make("aac-pau", env_config={"max_steps": 40}, extras={"instance": row_or_instance})
    messages, info = env.init(prompt)  # our first prompt; the dataset's prompt is not used
    out = env.step(reply)              # observations = the next turn's prompt (a user message)

`extras` holds the instance: `extras["instance"]` (an `Instance` or a PAU row), or the PAU columns
at the top level of `extras` (a SkyRL dataset row). `env_config` holds `ProtocolConfig` fields and
`domain` (`pau` by default, or `stateful` / `library` / `web`: the row is read and checked as one of it). Calls
go through `aac.sandbox.pool.run_function` (one shared sandbox pool per process) unless
`make(..., caller=f)`.

Our prompts are self-contained per turn, while SkyRL appends each observation to the conversation:
the context grows with the episode, so keep `max_steps` and the window small there.

No reward: the environment knows none (it sits below the critic and the rewards), so every step's
reward is 0.0. AAC's rewards (critic scores through the schedule of `aac.train`) come with the env
"aac-pau-critic" (aac/skyrl/reward_env.py), which extends this one. The step's `StepRecord` is in
`metadata["step"]`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from typing import Any

from skyrl_gym.envs.base_text_env import BaseTextEnv, BaseTextEnvStepOutput, ConversationType
from skyrl_gym.envs.registration import register, registry

from aac.env.domains import get_domain
from aac.env.instance import Instance
from aac.env.protocol import Caller, Episode, ProtocolConfig

ENV_ID = "aac-pau"
_PROTOCOL_KEYS = {f.name for f in fields(ProtocolConfig)}


def _instance(extras: dict, domain: str) -> Instance:
    item = extras.get("instance", extras)
    if isinstance(item, Instance):
        if item.domain != domain:
            raise ValueError(f"{ENV_ID}: the instance is of domain {item.domain!r}, not {domain!r} "
                             f"(set env_config domain={item.domain})")
        return item
    d = get_domain(domain)
    return Instance.from_row(dict(item), int(extras.get("index", 0)), d.check_instance, d.name)


class PAUTextEnv(BaseTextEnv):
    env_id = ENV_ID  # named in errors (a subclass registers its own)

    def __init__(self, env_config: Mapping[str, object] | None = None, extras: dict | None = None, caller: Caller | None = None):
        super().__init__()
        settings = dict(env_config or {})
        domain = str(settings.pop("domain", "pau"))
        unknown = set(settings) - _PROTOCOL_KEYS
        if unknown:
            raise ValueError(f"{self.env_id}: unknown env_config keys: {', '.join(sorted(unknown))}")
        self.episode = Episode(_instance(extras or {}, domain), ProtocolConfig(**settings), caller)
        self.max_turns = self.episode.cfg.max_steps

    def init(self, prompt: ConversationType | None = None) -> tuple[ConversationType, dict[str, Any]]:
        return self.episode.prompt(), {"uid": self.episode.instance.uid, "phase": self.episode.phase.value}

    def step(self, action: str) -> BaseTextEnvStepOutput:
        self.turns += 1
        record = self.episode.step(action)
        observations = [] if record.done else [self.episode.prompt()[-1]]
        metadata: dict[str, Any] = {"step": record, "phase": record.phase.value, "parse_ok": record.parse_ok}
        if record.done:
            metadata["summary"] = self.episode.summary()
        return BaseTextEnvStepOutput(observations=observations, done=record.done, metadata=metadata, reward=0.0)

    def get_metrics(self) -> dict[str, Any]:
        s = self.episode.summary()
        return {k: float(s[k]) for k in ("num_queries", "concluded", "timed_out", "steps", "parse_failures")}


if ENV_ID not in registry:
    register(id=ENV_ID, entry_point="aac.env.skyrl_env:PAUTextEnv")
