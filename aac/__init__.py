"""aac: asymmetric actor-critic RL for LLM agents that explore black-box Python APIs.

What a notebook needs, loaded on first use so that `import aac` stays cheap (no torch, Hydra, Ray or vLLM):

    cfg = aac.compose("+recipe=tiny", "max_steps=2")  # the composed, validated training config
    run = aac.build_run(cfg)                          # its pieces: engines, critic, learner, rollout workers
    aac.Trainer(cfg, out_dir).run()                   # the AAC loop (python -m aac.train's), on pieces of its own
    aac.evaluate(aac.compose("model=tiny_qwen3", "eval.limit=2", config_name="eval_config"))  # python -m aac.eval's
"""

import importlib
import os
from typing import TYPE_CHECKING, Any

# Engine, learner, rollout workers and sandboxes share few cores: OpenMP threads that spin while
# waiting slow generation ~10x on a busy 2-core machine. Must be set before torch loads.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

__version__ = "0.1.0"

# name -> the module that defines it
_LAZY = {"compose": "aac.config", "TrainConfig": "aac.config", "build_run": "aac.assembly",
         "Trainer": "aac.training.trainer", "evaluate": "aac.eval.harness"}
__all__ = ["compose", "TrainConfig", "build_run", "Trainer", "evaluate", "__version__"]

if TYPE_CHECKING:  # what type checkers and editors resolve the lazy names to
    from aac.assembly import build_run
    from aac.config import TrainConfig, compose
    from aac.eval.harness import evaluate
    from aac.training.trainer import Trainer


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'aac' has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value  # the next access skips this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
