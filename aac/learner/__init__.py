"""The GRPO learner: a peft LoRA policy over a frozen base, trained with torch or DeepSpeed."""

from aac.learner.batching import Sample
from aac.learner.grpo import grpo_loss
from aac.learner.learner import Learner, LearnerLike

__all__ = ["Learner", "LearnerLike", "Sample", "grpo_loss"]
