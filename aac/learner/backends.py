"""Optimizer backends behind one small interface: plain torch (AdamW) or DeepSpeed (ZeRO 0-2).

Both use torch's AdamW with a constant learning rate (docs/method.md §8). DeepSpeed receives that
optimizer instead of building its own, so no DeepSpeed C++ op is compiled at start-up. Gradient
accumulation is ours: DeepSpeed runs with `managed_gradient_accumulation: false`, so each
`backward` only accumulates and `step()` is the boundary, whatever the micro-batch count.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import os
import socket
from collections.abc import Iterator
from typing import Any

import torch
from torch import nn

from aac.config import LearnerConfig


def _adamw(params: list[nn.Parameter], cfg: LearnerConfig) -> tuple[torch.optim.Optimizer, Any]:
    optimizer = torch.optim.AdamW(params, lr=cfg.lr, betas=tuple(cfg.betas), weight_decay=cfg.weight_decay)
    scheduler = torch.optim.lr_scheduler.ConstantLR(optimizer, factor=1.0, total_iters=0)
    return optimizer, scheduler


class TorchBackend:
    """AdamW + gradient-norm clipping on the trainable parameters."""

    def __init__(self, model: nn.Module, cfg: LearnerConfig, device: torch.device):
        self.module = model.to(device)
        self.params = [p for p in model.parameters() if p.requires_grad]
        self.optimizer, self.scheduler = _adamw(self.params, cfg)
        self.max_grad_norm = cfg.max_grad_norm

    def __call__(self, **kwargs: Any) -> Any:
        return self.module(**kwargs)

    def backward(self, loss: torch.Tensor) -> None:
        loss.backward()

    def step(self) -> float:
        norm = torch.nn.utils.clip_grad_norm_(self.params, self.max_grad_norm or float("inf"))
        self.optimizer.step()
        self.scheduler.step()
        self.optimizer.zero_grad(set_to_none=True)
        return float(norm)

    def zero_grad(self) -> None:
        self.optimizer.zero_grad(set_to_none=True)

    def state_dict(self) -> dict[str, Any]:
        return {"optimizer": self.optimizer.state_dict(), "scheduler": self.scheduler.state_dict()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.optimizer.load_state_dict(state["optimizer"])
        self.scheduler.load_state_dict(state["scheduler"])


def free_port() -> int:
    """A TCP port free on this host now (a rendezvous's)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def _without_shm_op() -> Iterator[None]:
    """On CPU DeepSpeed compiles a shared-memory all-reduce op (40 s to minutes, once per machine)
    that only multi-process CPU inference uses: a one-process learner skips the build."""
    module = importlib.import_module("deepspeed.comm.torch")  # the module, not deepspeed.comm's `torch`
    build = module.build_shm_op
    module.build_shm_op = lambda: None
    try:
        yield
    finally:
        module.build_shm_op = build


def _init_process_group(backend: str) -> None:
    """DeepSpeed's comm layer over a one-process group, unless a launcher (deepspeed, torchrun) set one up."""
    import deepspeed
    import torch.distributed as dist

    os.environ.setdefault("LOCAL_RANK", "0")  # DeepSpeed asks for it, also of a group another library set up
    if not dist.is_initialized():  # (an in-process vLLM engine's)
        for key, value in (("MASTER_ADDR", "127.0.0.1"), ("RANK", "0"), ("WORLD_SIZE", "1")):
            os.environ.setdefault(key, value)
        if os.environ["WORLD_SIZE"] == "1":  # no one else joins: a port free now, never one inherited from
            os.environ["MASTER_PORT"] = str(free_port())  # another group (a Ray worker gets its driver's env)
        else:
            os.environ.setdefault("MASTER_PORT", str(free_port()))
    world = dist.get_world_size() if dist.is_initialized() else int(os.environ["WORLD_SIZE"])
    with _without_shm_op() if backend == "gloo" and world == 1 else contextlib.nullcontext():
        deepspeed.init_distributed(dist_backend=backend, verbose=False)


def import_deepspeed() -> Any:
    """Import DeepSpeed with its start-up chatter (accelerator detection, op probing) at ERROR level."""
    if not torch.cuda.is_available():
        os.environ.setdefault("DS_ACCELERATOR", "cpu")  # named, so DeepSpeed does not warn it guessed
    import deepspeed
    from deepspeed.utils import logger

    logger.setLevel(logging.ERROR)
    return deepspeed


class DeepSpeedBackend:
    """DeepSpeed engine (gloo on CPU, nccl on GPU), one learner process."""

    def __init__(self, model: nn.Module, cfg: LearnerConfig, device: torch.device):
        deepspeed = import_deepspeed()
        import torch.distributed as dist

        _init_process_group("nccl" if device.type == "cuda" else "gloo")
        if dist.get_world_size() != 1:
            raise ValueError(f"the DeepSpeed learner runs as one process, got world size {dist.get_world_size()}")
        self.params = params = [p for p in model.parameters() if p.requires_grad]
        optimizer, scheduler = _adamw(params, cfg)
        config = {
            "train_micro_batch_size_per_gpu": 1,
            "gradient_accumulation_steps": 1,
            "managed_gradient_accumulation": False,
            "gradient_clipping": cfg.max_grad_norm,
            # one rank: the reduce bucket need hold no more than the adapter's gradients (DeepSpeed's default,
            # 5e8 elements, allocates 1.9 GB of float32 every backward whatever the adapter's size)
            "zero_optimization": {"stage": cfg.zero_stage, "reduce_bucket_size": sum(p.numel() for p in params)},
            "zero_allow_untested_optimizer": True,  # torch AdamW: no DeepSpeed op to compile
            "steps_per_print": 2**31 - 1,
            "wall_clock_breakdown": False,
        }
        # parameter dtypes stay as loaded (frozen base in learner.dtype, LoRA in float32): no
        # DeepSpeed bf16/fp16 mode, whose master-weight copy a float32 adapter does not need
        self.ds, self.optimizer, _, self.scheduler = deepspeed.initialize(
            model=model, optimizer=optimizer, lr_scheduler=scheduler, model_parameters=params, config=config)
        self.module = self.ds.module

    def __call__(self, **kwargs: Any) -> Any:
        return self.ds(**kwargs)

    def backward(self, loss: torch.Tensor) -> None:
        self.ds.backward(loss, scale_wrt_gas=False)

    def step(self) -> float:
        # ZeRO reports the norm it clipped with; stage 0 clips without keeping it
        grads = None if self.ds.zero_optimization() else [p.grad for p in self.params if p.grad is not None]
        norm = torch.nn.utils.get_total_norm(grads) if grads else None
        self.ds.step()  # clips, steps the optimizer and the scheduler, zeroes the gradients
        if norm is None:
            norm = self.ds.get_global_grad_norm()
        return float(norm) if norm is not None else float("nan")

    def zero_grad(self) -> None:
        self.ds.zero_grad()

    def state_dict(self) -> dict[str, Any]:
        return {"optimizer": self.optimizer.state_dict(), "scheduler": self.scheduler.state_dict()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        # ZeRO keeps float32 partitions of the weights: load the adapter into the module first, this
        # restores those partitions from it (load_from_fp32_weights=False)
        if self.ds.zero_optimization():
            self.optimizer.load_state_dict([state["optimizer"]], load_from_fp32_weights=False)
        else:
            self.optimizer.load_state_dict(state["optimizer"])
        self.scheduler.load_state_dict(state["scheduler"])


def make_backend(model: nn.Module, cfg: LearnerConfig, device: torch.device) -> TorchBackend | DeepSpeedBackend:
    return (TorchBackend if cfg.backend == "torch" else DeepSpeedBackend)(model, cfg, device)
