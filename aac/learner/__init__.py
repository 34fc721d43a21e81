"""The GRPO learner: a peft LoRA policy over a frozen base, trained with torch or DeepSpeed. Its names load on
first use (aac/lazy.py): `aac.learner.batching` alone does not import peft."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aac.lazy import lazy_names

if TYPE_CHECKING:
    from aac.learner.batching import Sample
    from aac.learner.grpo import grpo_loss
    from aac.learner.learner import Learner, LearnerLike

__all__ = ["Learner", "LearnerLike", "Sample", "grpo_loss"]
__getattr__ = lazy_names(__name__, {"Sample": "aac.learner.batching", "grpo_loss": "aac.learner.grpo",
                                    "Learner": "aac.learner.learner", "LearnerLike": "aac.learner.learner"})
