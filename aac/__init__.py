"""aac: asymmetric actor-critic RL for LLM agents that explore black-box Python APIs."""

import os

# Engine, learner, rollout workers and sandboxes share few cores: OpenMP threads that spin while
# waiting slow generation ~10x on a busy 2-core machine. Must be set before torch loads.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

__version__ = "0.1.0"
