"""Every reduction of the learner ranks' torch.distributed group goes through `all_reduce` here: NCCL
reduces CUDA tensors only (a CPU tensor fails the first update), gloo CPU ones, so a tensor is put on
the group's device for the collective and comes back where it was."""

from __future__ import annotations

from typing import Optional

import torch
import torch.distributed as dist

# the device a backend's collectives take: "cuda" is this process's current CUDA device
BACKEND_DEVICE = {"nccl": "cuda", "gloo": "cpu"}


def group_device(group: Optional[dist.ProcessGroup] = None) -> torch.device:
    """The device `group`'s backend reduces on (the default group's when None)."""
    backend = str(dist.get_backend(group))
    kind = BACKEND_DEVICE.get(backend)
    if kind is None:
        raise ValueError(f"learner ranks: no device known for the torch.distributed backend {backend!r} "
                         f"(known: {', '.join(BACKEND_DEVICE)})")
    return torch.device("cuda", torch.cuda.current_device()) if kind == "cuda" else torch.device(kind)


def all_reduce(tensor: torch.Tensor, op: dist.ReduceOp = dist.ReduceOp.SUM,
               group: Optional[dist.ProcessGroup] = None) -> torch.Tensor:
    """`tensor` reduced over `group` in place, through the group's device (a copy there and back where
    `tensor` lives elsewhere); returns `tensor`."""
    device = group_device(group)
    moved = tensor if tensor.device == device else tensor.to(device)
    dist.all_reduce(moved, op=op, group=group)
    if moved is not tensor:
        tensor.copy_(moved)
    return tensor
