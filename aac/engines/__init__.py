"""Generation engines behind one interface: vLLM (LoRA, identity adapter), HF, an OpenAI-compatible
endpoint, and the Ray host/proxy. They know nothing of RL or prompts; backends load lazily."""

from aac.engines.base import Engine, EngineError, EngineStats, GenRequest, GenResult, Sampling
from aac.engines.factory import engine_from_config, make_engine

__all__ = ["Engine", "EngineError", "EngineStats", "GenRequest", "GenResult", "Sampling",
           "engine_from_config", "make_engine"]
