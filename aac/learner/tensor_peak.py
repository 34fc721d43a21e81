"""The peak bytes of live tensor storage while a block runs, counted op by op (a torch dispatch mode):
what the memory model (`aac.learner.memory`) predicts, measured exactly on the CPU, where no allocator
keeps the count (`torch.cuda.max_memory_allocated` is CUDA's). Storages alive before the block (weights,
optimizer states) are not counted: `peak` is what the block adds at its highest point."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Optional

import torch
from torch.multiprocessing.reductions import StorageWeakRef
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

if TYPE_CHECKING:
    from aac.learner.batching import Sample
    from aac.learner.learner import Learner


class TensorPeak(TorchDispatchMode):
    """`with TensorPeak(existing) as tp: ...` then `tp.peak` (bytes); `existing`: tensors whose storage
    lives before the block and is not to be counted (weights, optimizer states)."""

    def __init__(self, existing: Iterable[torch.Tensor] = ()):
        super().__init__()
        self.skip = {StorageWeakRef(t.untyped_storage()).cdata for t in existing}
        self.live: dict[int, tuple[StorageWeakRef, int]] = {}
        self.current = self.peak = 0

    def __torch_dispatch__(self, func: Callable[..., object], types: object, args: tuple = (),
                           kwargs: Optional[dict] = None) -> object:
        out = func(*args, **(kwargs or {}))
        for dead in [k for k, (ref, _) in self.live.items() if ref.expired()]:
            self.current -= self.live.pop(dead)[1]
        for t in tree_leaves(out):
            if isinstance(t, torch.Tensor) and t.device.type != "meta":
                storage = t.untyped_storage()
                ref = StorageWeakRef(storage)
                if ref.cdata not in self.skip and ref.cdata not in self.live:
                    self.live[ref.cdata] = (ref, storage.nbytes())
                    self.current += storage.nbytes()
        self.peak = max(self.peak, self.current)
        return out


def update_peak(learner: Learner, samples: Sequence[Sample]) -> dict[str, Any]:
    """The bytes a learner holds at the highest point of an update of `samples` on the CPU: its weights,
    adapter and optimizer state (counted), plus what the update adds (`TensorPeak`, after one warm-up update
    that creates the optimizer's moments); and that update's `seconds` (slowed by the count) and `metrics`."""
    learner.update(samples)
    state = [v for s in learner.backend.optimizer.state.values() for v in s.values() if torch.is_tensor(v)]
    existing = [*learner.policy.parameters(), *learner.policy.buffers(), *state]
    held = sum(StorageWeakRef(t.untyped_storage()).cdata and t.untyped_storage().nbytes() for t in
               {StorageWeakRef(t.untyped_storage()).cdata: t for t in existing}.values())
    t0 = time.perf_counter()
    with TensorPeak(existing) as tp:
        metrics = learner.update(samples)
    return {"held": held, "update": tp.peak, "total": held + tp.peak, "seconds": time.perf_counter() - t0,
            "metrics": metrics}
