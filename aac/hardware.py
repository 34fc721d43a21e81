"""What a run asks of this machine's GPUs (its CPU's speed is aac/cpu_speed.py's), checked before any piece starts (before Ray, before the data):
a recipe that asks for GPUs where torch is a CPU build, where no NVIDIA driver is loaded, where the
driver's CUDA is older than the installed wheels' (vLLM 0.32's are CUDA 13: driver R580 or newer), where
torch cannot start CUDA, or where fewer GPUs are visible than the run asks for, stops in one line naming
what is missing instead of training on the CPU or waiting on Ray for GPUs that never come.

A run that joins a Ray cluster (`ray.address`, $RAY_ADDRESS) is placed on that cluster's GPUs, not this
machine's: there the cluster's count is checked when Ray starts (`aac.placement.check_gpus`)."""

from __future__ import annotations

import ctypes
import math
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

from aac.config import ConfigError

if TYPE_CHECKING:
    from aac.config import TrainConfig

# the oldest NVIDIA driver branch whose CUDA each CUDA major version needs (CUDA's minor-version
# compatibility: any 13.x build runs on a 13.0 driver)
DRIVER_FOR_CUDA = {13: "R580", 12: "R525"}


class HardwareError(ConfigError):
    """A run asks for GPUs this machine cannot give (one line naming what is missing)."""


@dataclass(frozen=True)
class Machine:
    """What this machine offers a run: torch's build, the driver's CUDA, the GPUs torch sees."""

    torch_version: str
    torch_cuda: Optional[str]  # the CUDA the torch wheel is built for (None: a CPU build)
    driver_cuda: Optional[tuple[int, int]]  # the newest CUDA the loaded driver supports (None: no driver)
    cuda_available: bool
    gpus: int  # devices torch sees (CUDA_VISIBLE_DEVICES applied)


def driver_cuda_version() -> Optional[tuple[int, int]]:
    """The CUDA version the loaded NVIDIA driver supports, asked of libcuda itself (no context is
    created, torch is not involved); None where no driver library loads."""
    try:
        lib = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return None
    version = ctypes.c_int(0)
    if lib.cuDriverGetVersion(ctypes.byref(version)) != 0:
        return None
    return version.value // 1000, (version.value % 1000) // 10


def this_machine() -> Machine:
    import torch

    available = torch.cuda.is_available()
    return Machine(torch.__version__, torch.version.cuda, driver_cuda_version(), available,
                   torch.cuda.device_count() if available else 0)


def gpus_asked(cfg: TrainConfig) -> tuple[int, str]:
    """The whole GPUs a run's pieces need on this machine, and which keys ask for them."""
    from aac.placement import gpu_asks

    asks = [a for a in gpu_asks(cfg) if a.total]
    parts = ", ".join(f"{a.name} {a.total:g}" for a in asks)
    return math.ceil(sum(a.total for a in asks)), parts


def _release(version: str) -> tuple[int, int]:
    major, minor = (version.split(".") + ["0"])[:2]
    return int(major), int(minor)


def check_machine(wanted: int, asks: str, m: Machine) -> None:
    """Raise `HardwareError` when `m` cannot give `wanted` GPUs (`asks`: the pieces asking)."""
    if wanted <= 0:
        return
    head = f"the run asks for {wanted} GPU{'s' * (wanted != 1)} ({asks})"
    if m.torch_cuda is None:
        raise HardwareError(f"{head} but torch {m.torch_version} is a CPU build: `make install-gpu` on a machine "
                            "with NVIDIA GPUs (or pick a CPU recipe, e.g. +recipe=smollm2_cpu)")
    if m.driver_cuda is None:
        raise HardwareError(f"{head} but no NVIDIA driver is loaded (libcuda.so.1 not found): install the NVIDIA "
                            f"driver ({DRIVER_FOR_CUDA.get(_release(m.torch_cuda)[0], 'a recent one')} or newer)")
    need = _release(m.torch_cuda)
    if m.driver_cuda[0] < need[0]:
        branch = DRIVER_FOR_CUDA.get(need[0], "a newer one")
        raise HardwareError(f"{head} but the NVIDIA driver supports CUDA {m.driver_cuda[0]}.{m.driver_cuda[1]} and "
                            f"torch {m.torch_version} is built for CUDA {m.torch_cuda}: update the driver to {branch} "
                            "or newer")
    if not m.cuda_available:
        raise HardwareError(f"{head} but torch cannot start CUDA (driver CUDA {m.driver_cuda[0]}.{m.driver_cuda[1]}, "
                            f"torch built for {m.torch_cuda}; CUDA_VISIBLE_DEVICES="
                            f"{os.environ.get('CUDA_VISIBLE_DEVICES', 'unset')}): check `nvidia-smi`")
    if m.gpus < wanted:
        raise HardwareError(f"{head} but this machine shows {m.gpus} (CUDA_VISIBLE_DEVICES="
                            f"{os.environ.get('CUDA_VISIBLE_DEVICES', 'unset')})")


def joins_a_cluster(cfg: TrainConfig) -> bool:
    """Whether the run is placed on a Ray cluster it did not start (whose GPUs are not this machine's)."""
    from omegaconf import OmegaConf

    return cfg.rollout.placement == "ray" and bool(OmegaConf.select(cfg, "ray.address") or os.environ.get("RAY_ADDRESS"))


def check_hardware(cfg: TrainConfig, machine: Optional[Machine] = None) -> None:
    """The GPUs `cfg` asks for, checked against this machine (`HardwareError`, one line); nothing to check
    where the run joins a Ray cluster or asks for no GPU."""
    if joins_a_cluster(cfg):
        return
    wanted, asks = gpus_asked(cfg)
    if wanted:
        check_machine(wanted, asks, machine or this_machine())


def check_run(cfg: TrainConfig) -> Optional[dict[str, int]]:
    """`check_hardware`, then whether the learner's predicted peak fits its device
    (`aac.learner.memory.check_fit`); a refusal is a `ConfigError` (one line through `aac.errors.entry_point`).
    Returns the learner's predicted peak by component (None: the model's shape is not known here, or the run
    joins a Ray cluster, whose learner's device is not this machine's)."""
    from aac.learner.memory import check_fit

    check_hardware(cfg)
    return None if joins_a_cluster(cfg) else check_fit(cfg)