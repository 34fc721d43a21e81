"""A memory model of the LoRA learner's update: the peak bytes on its device for a setting, from the
model's shape and `LearnerConfig`, counted tensor by tensor as the update holds them at its highest point
(the backward of one decoder layer, recomputed under gradient checkpointing):

- weights: the frozen base in `learner.dtype`;
- LoRA: the adapter in float32, its gradients and AdamW's two moments (16 bytes a parameter);
- ZeRO (DeepSpeed stage >= 1; DeepSpeed runs one rank here, so ZeRO partitions nothing and only adds):
  its float32 copy of the adapter, 4 bytes a parameter, and at stage 1 a flat float32 gradient beside
  the parameters' own (8); its gradient bucket takes the place of the gradients it gathers, sized to the
  adapter by aac.learner.backends (DeepSpeed's default, 5e8 elements, would add 1.9 GB every backward);
- checkpoints: each checkpointed layer's input [T, H]; a layer left un-checkpointed keeps all of its own;
- the final hidden states; with the CPU's segments kernel also the segments' masks (bool and additive
  bias) and the dense [T, T] causal mask transformers builds for the row (the flex kernel's block mask
  replaces it), kept for the whole micro-batch;
- then the higher of backward's two phases: one `logprob_chunk` of float32 logits with their gradient, or
  one layer's activations, recomputed: what autograd saves in a Qwen3 decoder layer with LoRA on every
  linear (peft casts each adapter's input to float32: a copy where the base is bf16; the RMSNorms' float32
  copies; the MLP's gate, up, silu and product), and the keys and values attention keeps
  (`aac.learner.tree_attention`): the row's own with the flex kernel (CUDA), those gathered along each
  segment's root path with the segments kernel (the CPU: `path_tokens`, more than T where turns share
  prefixes), with the gradients in flight through that layer.

T is `learner.micro_batch_tokens` (a micro-batch's unique tokens). `predict` is checked against the peak
measured on the CPU (`aac.learner.tensor_peak`) at small shapes (tests/test_memory_model.py, RESULTS
"Learner memory model"); `check_fit` refuses a run predicted not to fit its learner's device.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

from aac.config import ConfigError

if TYPE_CHECKING:
    from transformers import PretrainedConfig

    from aac.config import TrainConfig
    from aac.learner.packing import PackedRow
    from aac.models import Shape

log = logging.getLogger(__name__)
GiB = 2**30
DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}
# turns of a GRPO group share their prompt: the keys a micro-batch's segments gather along their root paths,
# per unique token, when no plan is at hand (a group of 8 turns of a 2000-token prompt and 200-token
# replies gathers 5.4x its unique tokens; 4 is the flagship's per_turn rollouts' order of magnitude)
ASSUMED_PATH_RATIO = 4.0
HEADROOM = 0.9  # the share of a device's memory the prediction may fill (allocator fragmentation, CUDA context)


@dataclass(frozen=True)
class Dims:
    """A decoder's dimensions (a Qwen3 / Llama config's fields)."""

    vocab: int
    hidden: int
    intermediate: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    tied: bool = False

    @classmethod
    def of(cls, config: PretrainedConfig) -> Dims:
        heads = config.num_attention_heads
        return cls(config.vocab_size, config.hidden_size, config.intermediate_size, config.num_hidden_layers, heads,
                   getattr(config, "num_key_value_heads", None) or heads,
                   getattr(config, "head_dim", None) or config.hidden_size // heads,
                   bool(getattr(config, "tie_word_embeddings", False)))

    @classmethod
    def of_shape(cls, s: Shape) -> Dims:
        return cls(s.vocab_size, s.hidden_size, s.intermediate_size, s.num_hidden_layers, s.num_attention_heads,
                   s.num_key_value_heads, s.head_dim)

    def linears(self) -> list[tuple[int, int]]:
        """(in, out) of each linear of one layer: q, k, v, o, gate, up, down."""
        h, q, kv, i = self.hidden, self.heads * self.head_dim, self.kv_heads * self.head_dim, self.intermediate
        return [(h, q), (h, kv), (h, kv), (q, h), (h, i), (h, i), (i, h)]

    def base_params(self) -> int:
        per_layer = sum(a * b for a, b in self.linears()) + 2 * self.hidden + 2 * self.head_dim  # + the norms
        return self.vocab * self.hidden * (1 if self.tied else 2) + self.layers * per_layer + self.hidden

    def lora_params(self, r: int) -> int:
        return self.layers * r * sum(a + b for a, b in self.linears())


@dataclass(frozen=True)
class Batch:
    """What one micro-batch holds beyond its token count: the keys gathered along the segments' root
    paths, and the segments' mask entries (new tokens x path tokens)."""

    tokens: int
    path_tokens: int
    mask_entries: int

    @classmethod
    def assumed(cls, tokens: int, max_model_len: int) -> Batch:
        """`ASSUMED_PATH_RATIO`, and each token's mask row as long as the context (an upper bound)."""
        return cls(tokens, int(tokens * ASSUMED_PATH_RATIO), tokens * max_model_len)

    @classmethod
    def of_row(cls, row: PackedRow) -> Batch:
        """The exact figures of a `PackedRow` (`aac.learner.packing`)."""
        from aac.learner.packing import segments

        segs = segments(row)
        return cls(len(row.tokens), sum(len(s.path) for s in segs), sum(s.mask.numel() for s in segs))


def layer_bytes(d: Dims, b: int, r: int, batch: Batch, *, fused_mlp: bool, kernel: str) -> dict[str, int]:
    """What autograd keeps of one decoder layer for backward, and backward's gradients in flight."""
    t, h, i = batch.tokens, d.hidden, d.intermediate
    q, kv = d.heads * d.head_dim, d.kv_heads * d.head_dim
    # float32 copies where the base is bf16: the RMSNorms' inputs (each layer norm, q_norm, k_norm), and peft's
    # cast of each adapter's input (q, k, v and gate, up read the normed hidden states; o the attention
    # output); where it is float32 those are the tensors themselves, saved once (norm2's, q's, k's inputs,
    # the two normed states, the attention output); + each RMSNorm's rsqrt and each adapter's A output
    if b < 4:
        norms, adapters = (2 * h + q + kv) * 4, (5 * h + q) * 4
    else:
        norms, adapters = (h + q + kv) * 4, (2 * h + q) * 4
    norms += (2 + d.heads + d.kv_heads) * 4
    adapters += 7 * r * 4
    attention = q * b * 2 + d.heads * 4  # rotated queries, the output (and its logsumexp)
    keys = 2 * kv * b * (batch.path_tokens if kernel == "segments" else t)
    # gate and up (fused: all the op keeps) or gate, silu, up and the product down's adapter reads in float32
    mlp = 2 * i * b if fused_mlp else 3 * i * b + 4 * i
    saved = t * (norms + adapters + attention + mlp) + keys
    # backward through the layer: the gradient of its widest activations (the MLP's, in float32 where peft's
    # adapter terms promote them) beside the incoming hidden-state gradient; the fused op also recomputes
    # silu, its sigmoid and the product, and forms the gate's and up's gradients (seven [T, I] in learner.dtype)
    working = t * (2 * i * 4 + 2 * h * 4 + (7 * i * b if fused_mlp else 0))
    return {"layer_saved": saved, "backward_working": working}


def predict(dims: Dims, cfg: TrainConfig, *, device: str = "cuda", batch: Optional[Batch] = None,
            max_model_len: int = 4096) -> dict[str, int]:
    """Peak bytes of an update of `cfg` (a `LearnerConfig`) on `dims`, by component, and their `total`."""
    b = DTYPE_BYTES[str(cfg.dtype)]
    r = cfg.lora_r
    batch = batch or Batch.assumed(cfg.micro_batch_tokens, max_model_len)
    lora = dims.lora_params(r)
    from aac.learner.tree_attention import tree_kernel

    zero = str(cfg.backend) == "deepspeed" and cfg.zero_stage >= 1
    out = {"weights": dims.base_params() * b, "lora_adam": 16 * lora,
           "zero_buffers": (8 if cfg.zero_stage == 1 else 4) * lora if zero else 0}
    kernel = tree_kernel(device) if cfg.prefix_sharing else "segments"
    layer = layer_bytes(dims, b, r, batch, fused_mlp=cfg.fused_mlp, kernel=kernel)
    if cfg.gradient_checkpointing:
        checkpointed = dims.layers if cfg.checkpoint_layers is None else cfg.checkpoint_layers
    else:
        checkpointed = 0
    kept = dims.layers - checkpointed
    out["checkpoints"] = checkpointed * batch.tokens * dims.hidden * b
    out["layers_kept"] = kept * layer["layer_saved"]
    # the final hidden states and the loss tokens' gather of them; the segments' masks and the dense causal
    # mask transformers builds for the row ([T, T] bool) live through the whole pass
    masks = batch.mask_entries * (1 + b) + batch.tokens ** 2 if kernel == "segments" else 0
    out["hidden_and_masks"] = 2 * batch.tokens * dims.hidden * b + masks
    # then the highest of backward's two phases: a chunk of float32 logits (and their exp, shifted copy and
    # gradient), or one layer's backward (recomputed when checkpointed) with the gradients in flight
    chunk = min(cfg.logprob_chunk or batch.tokens, batch.tokens)
    head = chunk * dims.vocab * (4 * 4 + (b if b < 4 else 0))  # + the bf16 logits float() copies
    layer_phase = (layer["layer_saved"] if checkpointed else 0) + layer["backward_working"]
    out["backward_peak"] = max(head, layer_phase)
    out["total"] = sum(out.values())
    return out


def model_dims(name: str) -> Optional[Dims]:
    """The dimensions of a model the registry knows the shape of, or whose config.json is on this disk;
    None otherwise (a hub id not downloaded: nothing to predict from)."""
    import json
    from pathlib import Path

    from aac.models import REGISTRY, aac_home

    spec = REGISTRY.get(name)
    if spec is not None and spec.shape is not None:
        return Dims.of_shape(spec.shape)
    folder = aac_home() / "models" / name if spec is not None else Path(name).expanduser()
    config = folder / "config.json"
    if not config.is_file():
        return None
    from types import SimpleNamespace

    return Dims.of(SimpleNamespace(**json.loads(config.read_text())))


def device_memory(num_gpus: float) -> tuple[str, int]:
    """The learner's device and its memory in bytes: the first GPU where the learner asks for one, else
    this machine's RAM."""
    import torch

    if num_gpus and torch.cuda.is_available():
        return "cuda", torch.cuda.get_device_properties(0).total_memory
    import psutil

    return "cpu", psutil.virtual_memory().total


class MemoryFitError(ConfigError):
    """A learner setting predicted not to fit its device (one line)."""


def check_fit(cfg: TrainConfig, capacity: Optional[tuple[str, int]] = None) -> Optional[dict[str, int]]:
    """Refuse (`MemoryFitError`) a run whose learner is predicted
    to need more than `HEADROOM` of its device; the prediction, or None where the model's shape is unknown."""
    dims = model_dims(cfg.model.name)
    if dims is None:
        log.info("learner memory: no shape known for %s here, not predicted", cfg.model.name)
        return None
    device, total = capacity or device_memory(cfg.learner.num_gpus)
    p = predict(dims, cfg.learner, device=device, max_model_len=cfg.model.max_model_len)
    if p["total"] > HEADROOM * total:
        parts = ", ".join(f"{k} {v / GiB:.1f}" for k, v in p.items() if k != "total" and v >= GiB / 10)
        raise MemoryFitError(f"the learner is predicted to need {p['total'] / GiB:.1f} GiB at learner.micro_batch_tokens="
                            f"{cfg.learner.micro_batch_tokens} ({parts} GiB) but its {device} has {total / GiB:.1f} "
                            f"GiB ({HEADROOM:.0%} usable): lower learner.micro_batch_tokens or turn on "
                            "learner.gradient_checkpointing")
    return p
