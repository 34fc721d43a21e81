"""`python -m aac.sft data=RUN_DIR[,RUN_DIR...] [+recipe=NAME] [sft.min_score=4]`: supervised warm start.

Trains the LoRA actor (the same `aac.learner.Learner` as RL) on the actor turns of `aac.eval` runs:
every turn of every episode whose judged description score is >= `sft.min_score` is one chat
sample (its prompt, rebuilt by replaying the episode, and its reply); the loss is the token-mean
NLL of the reply tokens, prompt tokens masked. DISTILL = traces of another model, CodeARC-SFT =
traces of an answer-aware teacher. Writes OUT/metrics.jsonl and OUT/checkpoints/step_N/ in the
training format (aac/checkpoint.py): `aac.eval checkpoint=OUT` evaluates it and
`aac.train learner.init_adapter=OUT/checkpoints/step_N/adapter` starts RL from it.
"""

from __future__ import annotations

import json
import logging
import random
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

from omegaconf import DictConfig, OmegaConf

import aac.checkpoint as checkpoint
from aac.cli import ALIASES, output_dir, run_hydra
from aac.config import ConfigError, validate
from aac.run_dir import CHECKPOINTS, METRICS, SUMMARY, write_config

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

    from aac.env.replay import TraceTurn

log = logging.getLogger("aac.sft")
DEFAULT_RECIPE = "smollm2_cpu"


@dataclass
class Tokenized:
    prompt_ids: list[int]
    completion_ids: list[int]


def tokenize_turns(turns: list[TraceTurn], tokenizer: PreTrainedTokenizerBase, chat_template_kwargs: dict,
                   max_reply_tokens: int | None, max_len: int) -> list[Tokenized]:
    """Prompt ids through the engines' chat rendering (the tokens the actor saw) and reply ids.

    A reply shorter than the run's per-turn token limit ended by itself: it gets the end-of-turn
    token, so the model learns to stop there; a reply cut at the limit does not (it never ended).
    Samples longer than `max_len` tokens are dropped."""
    from aac.engines.base import render_chat

    out = []
    for t in turns:
        prompt = render_chat(tokenizer, t.messages, chat_template_kwargs)
        reply = tokenizer(t.reply, add_special_tokens=False)["input_ids"]
        if max_reply_tokens is None or len(reply) < max_reply_tokens:
            reply = reply + [tokenizer.eos_token_id]
        if reply and len(prompt) + len(reply) <= max_len:
            out.append(Tokenized(prompt, reply))
    return out


def batches(n: int, size: int, epoch: int, seed: int) -> list[list[int]]:
    """A seeded permutation of the samples per epoch, cut into optimizer steps."""
    order = list(range(n))
    random.Random(f"{seed}:{epoch}").shuffle(order)
    return [order[i:i + size] for i in range(0, n, size)]


def sft(cfg: DictConfig, out_dir: Path) -> dict[str, Any]:
    from transformers import AutoTokenizer

    from aac.assembly import build_learner
    from aac.learner import Sample
    from aac.models import chat_template_kwargs, resolve_model
    from aac.traces import TraceError, load_turns

    s = cfg.sft
    run_dirs = [d for d in str(s.data).split(",") if d.strip()]
    if not run_dirs:
        raise ConfigError("sft.data is empty: give the aac.eval run directories (data=RUN_DIR[,RUN_DIR])")
    try:
        turns, summary = load_turns(run_dirs, s.min_score, cfg.env)
    except OSError as e:
        raise TraceError(str(e)) from None
    log.info("traces: %s", summary.text())
    if not turns:
        raise TraceError(f"{s.data}: no episode has a judged score >= sft.min_score={s.min_score}; lower it, or "
                         "give runs that scored higher")
    identity = json.loads((Path(run_dirs[0]) / "run.json").read_text())
    model_path = resolve_model(cfg.model.name)
    tokenizer = AutoTokenizer.from_pretrained(model_path)
    samples = tokenize_turns(turns, tokenizer, chat_template_kwargs(cfg.model.name, dict(cfg.model.chat_template_kwargs)),
                             identity.get("max_tokens_per_turn"), cfg.model.max_model_len)
    learner_cfg = cfg.learner if s.lr is None else OmegaConf.merge(cfg.learner, {"lr": s.lr})
    learner = build_learner(cfg, use_ray=False, learner=learner_cfg)
    metrics_path = out_dir / METRICS
    step, t0, last = 0, time.perf_counter(), {}
    with open(metrics_path, "a") as f:
        for epoch in range(s.epochs):
            for idx in batches(len(samples), s.batch_turns, epoch, cfg.seed):
                m = learner.sft_update([Sample(samples[i].prompt_ids, samples[i].completion_ids) for i in idx])
                step += 1
                last = {"step": step, "epoch": epoch, "losses/sft_nll": m["loss"], "loss_tokens": m["loss_tokens"],
                        "grad_norm": m["grad_norm"], "time/elapsed_s": round(time.perf_counter() - t0, 2)}
                f.write(json.dumps(last) + "\n")
                f.flush()
                log.info("step %d (epoch %d): nll %.4f over %d tokens", step, epoch, m["loss"], m["loss_tokens"])
    path = checkpoint.save(out_dir / CHECKPOINTS, step, learner=learner, keep=1, trainer_state={
        "step": step, "kind": "sft", "data": run_dirs, "min_score": s.min_score, "samples": len(samples),
        **vars(summary)})
    result = {**last, "samples": len(samples), "episodes_kept": summary.kept, "adapter": str(path / "adapter")}
    (out_dir / SUMMARY).write_text(json.dumps(result, indent=1))
    log.info("done: %d steps on %d samples; adapter %s", step, len(samples), path / "adapter")
    return result


def task(cfg: DictConfig) -> dict[str, Any]:
    validate(cfg)
    out_dir = output_dir(cfg)
    write_config(out_dir, OmegaConf.to_yaml(cfg, resolve=True))  # what an eval of its checkpoint plays (aac/run_dir.py)
    return sft(cfg, out_dir)


def main(argv: Optional[list[str]] = None) -> None:
    run_hydra(task, "config", DEFAULT_RECIPE, argv, aliases=ALIASES["aac.sft"])


if __name__ == "__main__":
    main()
