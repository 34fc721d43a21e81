"""The GRPO learner: LoRA policy, PPO mini-batches, micro-batches by token budget.

One `update(samples)` trains on the turns of one rollout batch in `learner.ppo_minibatches`
optimizer steps (docs/method.md §7.2). pi_old is the learner's own log-prob under the weights that generated
the batch (the engine served them): with one mini-batch it is this pass's, detached, so the ratio is
exactly 1 and the clip inactive; with several it is computed for every mini-batch before the first
step, and the clip is a trust region for the later ones. The engine's sampling log-probs differ from
the learner's by kernel numerics (bf16): they enter only the truncated importance weight
min(pi_old / pi_engine, learner.tis_cap) on each token's surrogate, logged as `sampling/*`.

Within a mini-batch the token-mean loss is over all its completion tokens, so micro-batching changes
memory, not the gradient; so does `learner.prefix_sharing` (a micro-batch's shared prompt prefixes
computed once, `aac.learner.packing`) and `learner.logprob_chunk` (logits a chunk at a time). A batch whose advantages are all zero carries no policy signal and is
skipped without a forward pass (weights, optimizer and scheduler untouched).
"""

from __future__ import annotations

import logging
import math
import os
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional, Protocol, TypeVar

import torch
from peft import get_peft_model_state_dict, set_peft_model_state_dict
from transformers import PreTrainedModel

from aac.learner.allocator import check_process_env, set_mmap_threshold
from aac.learner.backends import make_backend
from aac.learner.batching import MicroBatch, Sample, collate, completion_logps, plan_micro_batches
from aac.learner.collective import all_reduce
from aac.learner.grpo import grpo_loss, truncated_is_weight
from aac.learner.packing import PackedBatch, PackedRow, collate_packed, pack_plan
from aac.learner.policy import add_lora, load_adapter_weights, load_base_model, packed_logps, token_logps
from aac.learner.sft_loss import sft_loss
from aac.learner.tree_attention import use_prefix_tree

if TYPE_CHECKING:
    from aac.config import LearnerConfig

log = logging.getLogger(__name__)
LOSS_METRICS = ("loss", "pg_loss", "kl", "clip_frac")
SAMPLING_METRICS = ("sampling/logprob_gap", "sampling/is_weight_mean", "sampling/is_weight_max",
                    "sampling/is_truncated_frac")



_T = TypeVar("_T")


def _snapshot(value: _T) -> _T:
    """Copy every tensor of a nested state to the CPU: optimizer state dicts hold views of live (GPU)
    buffers, and the state travels to a driver that may have no GPU (or whose cuda:0 is the engine's)."""
    if isinstance(value, torch.Tensor):
        return value.detach().to("cpu", copy=True)
    if isinstance(value, dict):
        return {k: _snapshot(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_snapshot(v) for v in value)
    return value


def _device(num_gpus: float = 0.0) -> torch.device:
    """cuda (this rank's) where torch sees a GPU, else the CPU. A learner that asked for a GPU and gets the
    CPU says so: `aac.train` refuses that machine before any piece starts (`aac.hardware`), so only a CPU
    rehearsal with declared GPUs (a Ray cluster's fake GPU resources) trains here."""
    if torch.cuda.is_available():
        return torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
    if num_gpus:
        log.warning("learner.num_gpus=%g but torch sees no CUDA device (torch %s): the learner trains on the CPU",
                    num_gpus, torch.__version__)
    return torch.device("cpu")


def _sampling_metrics(sums: dict[str, float]) -> dict[str, float]:
    """The `sampling/*` statistics from pooled `truncated_is_weight` sums (NaN without engine log-probs)."""
    n = sums["tokens"]
    if not n:
        return dict.fromkeys(SAMPLING_METRICS, math.nan)
    return {"sampling/logprob_gap": sums["gap"] / n, "sampling/is_weight_mean": sums["weight"] / n,
            "sampling/is_weight_max": sums["weight_max"], "sampling/is_truncated_frac": sums["truncated"] / n}


def _pool(total: Optional[dict[str, float]], sums: dict[str, float]) -> dict[str, float]:
    """Pool `truncated_is_weight` sums of two token sets (None: nothing yet)."""
    if total is None:
        return dict(sums)
    return {k: max(total[k], sums[k]) if k == "weight_max" else total[k] + sums[k] for k in total}


IS_SUMS = ("tokens", "gap", "weight", "weight_max", "truncated")  # truncated_is_weight's sums


def token_shards(lengths: Sequence[int], ranks: int) -> list[list[int]]:
    """Sample indices per learner rank, balanced by token count: longest first, each to the rank with
    the fewest tokens so far (the same split on every rank)."""
    loads, out = [0] * ranks, [[] for _ in range(ranks)]
    for i in sorted(range(len(lengths)), key=lambda i: (-lengths[i], i)):
        r = min(range(ranks), key=lambda r: (loads[r], r))
        out[r].append(i)
        loads[r] += lengths[i]
    return [sorted(o) for o in out]


def minibatch_indices(n: int, minibatches: int) -> list[list[int]]:
    """Strided split of n samples into PPO mini-batches (each gets turns of every group)."""
    return [list(range(k, n, minibatches)) for k in range(min(minibatches, n))]


class LearnerLike(Protocol):
    """What a run calls on its learner, wherever it lives: a `Learner` here, or one in a Ray actor
    behind `aac.placement.Placed` (whose attribute calls are synchronous)."""

    def update(self, samples: Sequence[Sample]) -> dict[str, Any]: ...

    def sft_update(self, samples: Sequence[Sample]) -> dict[str, Any]: ...

    def token_logprobs(self, prompt_ids: list[int], completion_ids: list[int]) -> list[float]: ...

    def save_adapter(self, path: str | Path) -> None: ...

    def save_state(self, path: str | Path) -> None: ...

    def load_state(self, path: str | Path) -> None: ...


class Learner:
    """`cfg` is a `LearnerConfig`; `base_model` (a loaded HF model) replaces loading `model_path`."""

    def __init__(self, cfg: LearnerConfig, model_path: str, seed: int = 0, *, base_model: Optional[PreTrainedModel] = None):
        self.cfg = cfg
        self.device = _device(cfg.num_gpus)
        if self.device.type == "cpu":
            set_mmap_threshold(cfg.malloc_mmap_threshold_kb)
            check_process_env(cfg)
        base = base_model if base_model is not None else load_base_model(model_path, cfg.dtype)
        self.pad_id = base.config.pad_token_id if base.config.pad_token_id is not None else 0
        self.policy = add_lora(base, cfg, seed)
        if getattr(cfg, "init_adapter", None):  # a warm start (e.g. aac.sft's adapter) instead of B = 0
            load_adapter_weights(self.policy, cfg.init_adapter)
        self.backend = make_backend(self.policy, cfg, self.device)
        self.head = self.policy.get_output_embeddings()
        if cfg.prefix_sharing:
            use_prefix_tree(self.policy)
        self.steps = 0  # optimizer steps taken
        self.rank, self.world = 0, 1  # this learner's place among learner.num_workers ranks (`join`)

    def join(self, address: str, port: int, rank: int, world: int) -> None:
        """Become rank `rank` of `world` learners (one torch.distributed group: gloo on CPU, NCCL on GPU):
        every update then trains on this rank's token share of each mini-batch and steps on the
        gradients summed over the ranks, the same step as one learner on the whole batch."""
        import torch.distributed as dist

        dist.init_process_group("nccl" if self.device.type == "cuda" else "gloo", init_method=f"tcp://{address}:{port}",
                                rank=rank, world_size=world)
        self.rank, self.world = rank, world

    def _share(self, samples: Sequence[Sample]) -> list[Sample]:
        """This rank's samples of a mini-batch (all of them for one rank)."""
        if self.world == 1:
            return list(samples)
        return [samples[i] for i in token_shards([len(s) for s in samples], self.world)[self.rank]]

    def _all_reduce(self, m: dict[str, Any]) -> dict[str, Any]:
        """Sum the gradients and the loss metrics of a mini-batch over the ranks (max for weight_max), each
        through `collective.all_reduce` (on the group's device: NCCL takes no CPU tensor)."""
        import torch.distributed as dist

        for p in self.backend.params:
            if p.grad is None:
                p.grad = torch.zeros_like(p)
            all_reduce(p.grad)
        sums = m["is_sums"] or dict.fromkeys(IS_SUMS, 0.0)
        added = [k for k in IS_SUMS if k != "weight_max"]
        flat = torch.tensor([m[k] for k in (*LOSS_METRICS, "tokens", "micro_batches")] + [sums[k] for k in added],
                            dtype=torch.float64)
        top = torch.tensor([float(sums["weight_max"])], dtype=torch.float64)
        all_reduce(flat)
        all_reduce(top, op=dist.ReduceOp.MAX)
        values = flat.tolist()
        out = {**m, **dict(zip(LOSS_METRICS, values)), "tokens": int(values[len(LOSS_METRICS)]),
               "micro_batches": int(values[len(LOSS_METRICS) + 1])}
        out["is_sums"] = {**dict(zip(added, values[len(LOSS_METRICS) + 2:])), "weight_max": top.item()}
        return out

    def trainable_parameters(self) -> dict[str, torch.nn.Parameter]:
        return {n: p for n, p in self.policy.named_parameters() if p.requires_grad}

    def _micro_batches(self, samples: Sequence[Sample], old_logprobs: Optional[Sequence[list[float]]] = None
                       ) -> Iterator[tuple[list[int], MicroBatch | PackedBatch]]:
        """(sample indices, their micro-batch on the device): prefix-shared rows or padded rows."""
        cfg = self.cfg
        if cfg.prefix_sharing:
            for row in self._plan(samples):
                part = [samples[i] for i in row.samples]
                old = None if old_logprobs is None else [old_logprobs[i] for i in row.samples]
                batch = collate_packed(row, [len(s.prompt_ids) for s in part], [s.sampling_logprobs for s in part],
                                       [s.advantage for s in part], old)
                yield row.samples, batch.to(self.device)
            return
        for indices in plan_micro_batches([len(s) for s in samples], cfg.micro_batch_tokens):
            old = None if old_logprobs is None else [old_logprobs[i] for i in indices]
            yield indices, collate([samples[i] for i in indices], self.pad_id, old).to(self.device)

    def _plan(self, samples: Sequence[Sample]) -> list[PackedRow]:
        """The prefix-shared rows `_micro_batches` runs."""
        return pack_plan([s.prompt_ids + s.completion_ids for s in samples], self.cfg.micro_batch_tokens)

    def _planned_tokens(self, samples: Sequence[Sample]) -> int:
        """The tokens `_micro_batches` would run, without running them (a skipped update still reports
        what an update of its batch costs: aac.preflight's update tokens)."""
        if self.cfg.prefix_sharing:
            return sum(len(row.tokens) for row in self._plan(samples))
        return sum(len(s) for s in samples)

    def _logps(self, batch: MicroBatch | PackedBatch) -> torch.Tensor:
        if isinstance(batch, PackedBatch):
            return packed_logps(self.backend, self.head, batch, self.cfg.logprob_chunk)
        return token_logps(self.backend, batch, self.head, self.cfg.logprob_chunk)

    @torch.no_grad()
    def old_logprobs(self, samples: Sequence[Sample]) -> list[list[float]]:
        """pi_old per completion token under the current weights, micro-batched exactly as
        `compute_gradients` will batch these samples (same shapes, so the same numbers)."""
        out: list[list[float]] = [[] for _ in samples]
        self.policy.eval()
        for indices, batch in self._micro_batches(samples):
            logp = self._logps(batch)
            rows = batch.split(logp) if isinstance(batch, PackedBatch) else \
                completion_logps(batch, [samples[i] for i in indices], logp)
            for i, row in zip(indices, rows):
                out[i] = row
        return out

    def compute_gradients(self, samples: Sequence[Sample], old_logprobs: Optional[Sequence[list[float]]] = None,
                          loss_tokens: Optional[int] = None) -> dict[str, Any]:
        """This mini-batch's gradients (micro-batches accumulated) on the trainable parameters; no step.

        `old_logprobs[i]`: sample i's pi_old (default: this pass's log-probs, detached: ratio 1).
        `loss_tokens`: the mini-batch's completion tokens when `samples` are one rank's share of it
        (default: theirs). Returns the loss metrics, token counts and `is_sums` (pooled
        `truncated_is_weight` sums)."""
        if not samples and loss_tokens is None:
            raise ValueError("Learner: no samples")
        for s in samples:
            s.check()
        cfg = self.cfg
        loss_tokens = sum(len(s.completion_ids) for s in samples) if loss_tokens is None else loss_tokens
        totals = dict.fromkeys(LOSS_METRICS, 0.0)
        is_sums = None
        tokens = micro_batches = 0
        self.backend.zero_grad()
        self.policy.train()
        for _, batch in self._micro_batches(samples, old_logprobs):
            ref = None
            if cfg.kl_coef != 0.0:
                with torch.no_grad(), self.policy.disable_adapter():
                    ref = self._logps(batch)
            logp = self._logps(batch)
            old = torch.where(torch.isnan(batch.old_logp), logp.detach(), batch.old_logp)
            weight, sums = truncated_is_weight(old, batch.sampling_logp, batch.loss_mask, cfg.tis_cap)
            loss, metrics = grpo_loss(logp, old, ref, batch.adv, batch.loss_mask, cfg.clip_eps, cfg.kl_coef,
                                      num_tokens=loss_tokens, is_weight=weight)
            self.backend.backward(loss)
            totals["loss"] += loss.item()
            for key, value in metrics.items():
                totals[key] += value.item()
            is_sums = _pool(is_sums, {k: v.item() for k, v in sums.items()})
            tokens += batch.tokens
            micro_batches += 1
        return {**totals, "tokens": tokens, "loss_tokens": loss_tokens, "micro_batches": micro_batches,
                "is_sums": is_sums}

    def update(self, samples: Sequence[Sample]) -> dict[str, Any]:
        """`learner.ppo_minibatches` optimizer steps on one rollout batch.

        Metrics: loss, pg_loss, kl, clip_frac (token-weighted over the mini-batches; NaN when
        skipped), the `sampling/*` statistics (NaN without engine log-probs), tokens, loss_tokens,
        micro_batches, minibatches, tokens_per_s, grad_norm (mean), skipped, steps, and `per_minibatch`
        (each mini-batch's loss metrics and grad_norm, in order)."""
        if not samples:
            raise ValueError("Learner.update: no samples")
        if all(s.advantage == 0.0 for s in samples):
            return {**dict.fromkeys(LOSS_METRICS + SAMPLING_METRICS, math.nan), "tokens": self._planned_tokens(samples),
                    "loss_tokens": sum(len(s.completion_ids) for s in samples), "micro_batches": 0,
                    "minibatches": 0, "tokens_per_s": 0.0, "grad_norm": math.nan, "skipped": True,
                    "steps": self.steps, "per_minibatch": []}
        for s in samples:
            s.check()
        start = time.perf_counter()
        parts = [[samples[i] for i in idx] for idx in minibatch_indices(len(samples), self.cfg.ppo_minibatches)]
        shares = [self._share(part) for part in parts]
        # several steps: pi_old of every part before the first one changes the weights
        olds = [self.old_logprobs(share) for share in shares] if len(parts) > 1 else [None]
        per_minibatch = []
        is_sums = None
        for part, share, old in zip(parts, shares, olds):
            m = self.compute_gradients(share, old, loss_tokens=sum(len(s.completion_ids) for s in part))
            if self.world > 1:
                m = self._all_reduce(m)
            m["grad_norm"] = self.backend.step()
            self.steps += 1
            is_sums = _pool(is_sums, m.pop("is_sums"))
            per_minibatch.append(m)
        elapsed = time.perf_counter() - start
        loss_tokens = sum(m["loss_tokens"] for m in per_minibatch)
        out: dict[str, Any] = {k: sum(m[k] * m["loss_tokens"] for m in per_minibatch) / loss_tokens
                               for k in LOSS_METRICS}
        tokens = sum(m["tokens"] for m in per_minibatch)
        out.update(_sampling_metrics(is_sums))
        out.update(tokens=tokens, loss_tokens=loss_tokens, micro_batches=sum(m["micro_batches"] for m in per_minibatch),
                   minibatches=len(parts), tokens_per_s=tokens / elapsed,
                   grad_norm=sum(m["grad_norm"] for m in per_minibatch) / len(per_minibatch), skipped=False,
                   steps=self.steps, per_minibatch=per_minibatch)
        return out

    def sft_update(self, samples: Sequence[Sample]) -> dict[str, Any]:
        """One optimizer step of token-mean NLL on the completion tokens (prompt tokens masked);
        metrics: loss (the batch's mean NLL per completion token), loss_tokens, grad_norm, steps."""
        if not samples:
            raise ValueError("Learner.sft_update: no samples")
        for s in samples:
            s.check()
        loss_tokens = sum(len(s.completion_ids) for s in samples)
        total = 0.0
        self.backend.zero_grad()
        self.policy.train()
        for _, batch in self._micro_batches(samples):
            loss = sft_loss(self._logps(batch), batch.loss_mask, num_tokens=loss_tokens)
            self.backend.backward(loss)
            total += loss.item()
        grad_norm = self.backend.step()
        self.steps += 1
        return {"loss": total, "loss_tokens": loss_tokens, "grad_norm": grad_norm, "steps": self.steps}

    @torch.no_grad()
    def token_logprobs(self, prompt_ids: list[int], completion_ids: list[int]) -> list[float]:
        """Per-token log-probs of `completion_ids` after `prompt_ids` under the current policy."""
        sample = Sample(list(prompt_ids), list(completion_ids))
        sample.check()
        batch = collate([sample], self.pad_id).to(self.device)
        self.policy.eval()
        logp = token_logps(self.backend, batch)
        start = len(prompt_ids) - 1
        return logp[0, start:start + len(completion_ids)].tolist()

    def save_adapter(self, path: str | Path) -> None:
        """peft format (adapter_config.json + adapter_model.safetensors): PeftModel.from_pretrained
        and vLLM's LoRARequest both load it."""
        self.policy.save_pretrained(str(path), safe_serialization=True)

    def state_dict(self) -> dict[str, Any]:
        """A snapshot (copies, not views of live tensors): adapter, optimizer, scheduler, steps."""
        adapter = {k: v.detach().cpu().clone() for k, v in get_peft_model_state_dict(self.policy).items()}
        return {"adapter": adapter, **_snapshot(self.backend.state_dict()), "steps": self.steps}

    def save_state(self, path: str | Path) -> None:
        """`state_dict()` written atomically to `path`, here where the learner lives (nothing crosses to
        the driver): what a rebuilt learner restores after its process died."""
        path = Path(path)
        tmp = path.with_name(path.name + ".tmp")
        torch.save(self.state_dict(), tmp)
        os.replace(tmp, path)

    def load_state(self, path: str | Path) -> None:
        self.load_state_dict(torch.load(path, weights_only=False))

    def load_state_dict(self, state: dict[str, Any]) -> None:
        result = set_peft_model_state_dict(self.policy, state["adapter"])
        unexpected = getattr(result, "unexpected_keys", [])
        if unexpected:
            raise ValueError(f"Learner.load_state_dict: adapter keys not in this model, e.g. {unexpected[0]}")
        self.backend.load_state_dict(state)
        self.steps = state["steps"]
