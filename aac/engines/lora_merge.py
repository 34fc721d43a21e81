"""Merging a saved peft LoRA into its base weights: W' = W + scale * B @ A, by checkpoint name.

`merged_checkpoint` yields the merged tensors under the base checkpoint's own names (e.g.
`model.layers.0.self_attn.q_proj.weight`), so an engine's loader that reads the base checkpoint
(vLLM's `load_weights`, which stacks q/k/v and gate/up itself) reads them unchanged. Only plain LoRA
is merged; a variant whose merge is not `B @ A` times one scale (DoRA, per-module rank or alpha
patterns, trained biases or extra modules) is refused with one line.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aac.errors import UserError

ADAPTER_PREFIX = "base_model.model."  # peft's prefix on a saved adapter's keys


class LoRAMergeError(UserError, ValueError):
    """An adapter folder that cannot be merged as plain LoRA."""

    what = "cannot merge adapter"


@dataclass
class LoRADelta:
    """One adapted linear layer: its base weight's name and the low-rank update."""

    weight_name: str
    a: Any  # torch.Tensor [r, in]
    b: Any  # torch.Tensor [out, r]
    scale: float


def adapter_deltas(path: str | Path) -> list[LoRADelta]:
    """The LoRA updates saved in the peft folder `path`, one per adapted layer."""
    from safetensors.torch import load_file

    folder = Path(path)
    config = json.loads((folder / "adapter_config.json").read_text())
    _check_plain(config, folder)
    r, alpha = config["r"], config["lora_alpha"]
    scale = alpha / math.sqrt(r) if config.get("use_rslora") else alpha / r
    tensors = load_file(str(folder / "adapter_model.safetensors"))
    deltas = []
    for key in sorted(tensors):
        if not key.endswith(".lora_A.weight"):
            continue
        module = key[: -len(".lora_A.weight")]
        b_key = module + ".lora_B.weight"
        if b_key not in tensors:
            raise LoRAMergeError(f"{folder}: {key} has no matching {b_key}")
        name = module[len(ADAPTER_PREFIX):] if module.startswith(ADAPTER_PREFIX) else module
        deltas.append(LoRADelta(name + ".weight", tensors[key], tensors[b_key], scale))
    if not deltas:
        raise LoRAMergeError(f"{folder}: no lora_A/lora_B weights in adapter_model.safetensors")
    return deltas


def _check_plain(config: dict, folder: Path) -> None:
    if config.get("peft_type", "LORA") != "LORA":
        raise LoRAMergeError(f"{folder}: peft_type {config.get('peft_type')!r} is not LORA")
    for key in ("use_dora", "rank_pattern", "alpha_pattern", "modules_to_save"):
        if config.get(key):
            raise LoRAMergeError(f"{folder}: {key}={config[key]!r} cannot be merged as plain LoRA")
    if config.get("bias", "none") != "none":
        raise LoRAMergeError(f"{folder}: bias={config['bias']!r} cannot be merged as plain LoRA")


class Checkpoint:
    """A model folder's safetensors weights by name, each opened lazily when asked for."""

    def __init__(self, model_path: str | Path):
        from safetensors import safe_open

        self.folder = Path(model_path)
        files = sorted(self.folder.glob("*.safetensors"))
        if not files:
            raise LoRAMergeError(f"{self.folder}: no *.safetensors weights to merge into")
        self._where: dict[str, Path] = {}
        for f in files:
            with safe_open(str(f), framework="pt") as handle:
                self._where.update((k, f) for k in handle.keys())

    def names(self) -> list[str]:
        return list(self._where)

    def tensor(self, name: str) -> Any:
        from safetensors import safe_open

        with safe_open(str(self._where[name]), framework="pt") as handle:
            return handle.get_tensor(name)


def merged_checkpoint(deltas: list[LoRADelta], base: Checkpoint) -> Iterator[tuple[str, Any]]:
    """Every weight of `base`, with W + scale * B @ A in place of each adapted one (computed in
    float32, cast back to the base's dtype). All of them, not just the adapted: an engine that
    reloads a fused layer (q/k/v) needs each of its parts."""
    by_name = {d.weight_name: d for d in deltas}
    missing = sorted(set(by_name) - set(base.names()))
    if missing:
        raise LoRAMergeError(f"{base.folder}: the adapter adapts {missing[0]}, which the checkpoint does not "
                             f"hold (tied embeddings cannot be merged apart)")
    for name in base.names():
        w = base.tensor(name)
        d = by_name.get(name)
        yield name, w if d is None else (w.float() + d.scale * (d.b.float() @ d.a.float())).to(w.dtype)
