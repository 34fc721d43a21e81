"""Generation engines (vLLM, HF, OpenAI-compatible) behind one interface, and the rollout workers."""

from aac.rollout.engine import (
    Engine,
    EngineError,
    GenRequest,
    GenResult,
    Sampling,
    engine_from_config,
    make_engine,
)

__all__ = ["Engine", "EngineError", "GenRequest", "GenResult", "Sampling", "engine_from_config", "make_engine"]
