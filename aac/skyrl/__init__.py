"""AAC under SkyRL's trainer (`python -m aac.skyrl +recipe=NAME`): SkyRL's generator drives the env
"aac-pau-critic" (aac/skyrl/reward_env.py, our privileged critic and reward schedule) and SkyRL's
PPO trainer (FSDP, optionally fully async) updates the LoRA actor with our per-turn credit.

- translate.py: our composed config -> SkyRL's config overrides (pure: no SkyRL needed)
- estimator.py: our advantage estimators as one SkyRL advantage estimator ("aac"), registered with
  SkyRL's `AdvantageEstimatorRegistry`
- generator.py / trainer.py: the SkyRL subclasses (steps paid what aac.train pays them; every step
  handed to the estimator) and the experiment that wires them
- client.py / endpoint.py: an aac engine behind SkyRL's inference interface, and an OpenAI-compatible
  endpoint in front of it (CPU runs and tests; on GPUs SkyRL's own vLLM servers play both parts)
- _skyrl.py: the one module that imports SkyRL. Nothing else in `aac` imports this package, so
  `import aac` never needs SkyRL (docs/skyrl.md, "Running it", has the install command).
"""
