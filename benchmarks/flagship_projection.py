"""The flagship's five epochs projected, every input measured here or cited (issue 48) -- a **projection**:
no GPU has run the flagship.

Measured on this CPU with the real code, per flagship group (`+recipe=qwen3_8b`: its paper-style prompts, group 8,
scripted replies of an 8B model's length: plans of 50-80 words, summaries of 20-50; SmolLM2's tokenizer, the only
one here) and per episode length (--turns):
- generated tokens per turn, and update tokens per generated token (the learner's prefix tree, `pack_plan`, at the
  recipe's micro_batch_tokens);
- the actor's prefill the engine cannot take from its prefix cache: each turn's prompt beyond the longest prefix
  already computed in the step (vLLM's automatic prefix caching, whole 16-token blocks; turn-major order, as the
  group's episodes advance together);
- the critic's judgments (what `aac.rollout.judgments` asks of each turn under the recipe's schedule) and the
  prefill of their prompts (`critic.scoring=logprob`: a judgment is one prefill) beyond the cached prefix, on the
  same engine after the actor's turns; prompts longer than the context are counted.

Assumed, from public figures (flags): one H100 SXM, dense bf16 peak 989 TFLOP/s and HBM3 3.35 TB/s (NVIDIA's
datasheet). Decode is memory-bound: --decode-tps for the rollout's 64 episodes in flight in eager mode, x --graphs
with CUDA graphs; the roofline at 64 sequences (16.4 GB of weights and ~14 GB of KV read per step at 70% of the
bandwidth: ~13 ms a step) is ~4,900 tok/s, so the default 3,000 allows for the replies' ragged ends; a smaller batch
decodes proportionally fewer tokens per second (--eval-batch for evaluations). Prefill is compute-bound: 2N FLOPs a
token at --prefill-mfu. The learner's rate is `gpu_check.py`'s formula: --learner-mfu of the peak over the FLOPs of
a token (`gpu_learner.flops_per_token`, KL on: policy forward and backward, reference forward; checkpointing's
recompute not counted, as MFU is usually quoted). The tail after both phases, as the recipe sets it: --sync-s (the
adapter to the engine; written while the next rollout plays under the pipeline), the sync check every
`sync_check_every` steps (--check-s; under the pipeline it runs while the next rollout plays), the learner state at
the checkpoint cadence (`save_every`, --save-s).

A step is max(engine, learner + tail) with the off-policy pipeline (`rollout.max_off_policy_steps=1`), their sum in
lockstep. Evaluations (every --eval-every steps, --eval-limit greedy episodes, as long as training's, plus a judge's
and a coder's generation per episode) run with the learner idle.

    python benchmarks/flagship_projection.py                    # the recipe's settings
    python benchmarks/flagship_projection.py --gpu-check gpu_check.json   # the learner's rate as measured
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from statistics import mean

sys.path.insert(0, str(Path(__file__).parent))

from demo_batch import recipe_episodes  # noqa: E402
from update_tokens import EIGHT_B_WORDS  # noqa: E402

PEAK = 989e12  # H100 SXM dense bf16, FLOP/s
BLOCK = 16  # vLLM's KV block: the prefix cache shares whole blocks


class PrefixCache:
    """Which tokens of a prompt the engine's prefix cache holds: every whole block of every sequence computed
    before (prompt and reply), as chains from the start."""

    def __init__(self) -> None:
        self.blocks: set[tuple[int, ...]] = set()

    def uncached(self, prompt: list[int], reply: list[int] = ()) -> int:
        """Prompt tokens to compute; then `prompt + reply` is cached."""
        hit = 0
        while (hit + 1) * BLOCK <= len(prompt) and tuple(prompt[:(hit + 1) * BLOCK]) in self.blocks:
            hit += 1
        seq = [*prompt, *reply]
        self.blocks.update(tuple(seq[:k * BLOCK]) for k in range(1, len(seq) // BLOCK + 1))
        return len(prompt) - hit * BLOCK


def measure_group(tokenizer, cfg, overrides: list[str], turns: int) -> dict[str, float]:
    """One flagship group of `turns`-turn episodes: tokens generated, update tokens, uncached actor and critic
    prefill, judgments and those cut at the context limit (per group)."""
    from aac.critic.prompts import critic_messages
    from aac.engines.base import render_chat
    from aac.learner.packing import pack_plan
    from aac.rollout.judgments import turn_judgments

    instance, episodes = recipe_episodes(tokenizer, ("+recipe=qwen3_8b", *overrides), group=cfg.rollout.group_size,
                                         turns=turns, words=EIGHT_B_WORDS)
    cache, actor = PrefixCache(), 0
    for t in range(max(len(e) for e in episodes)):  # turn-major: the group's episodes advance together
        for played in episodes:
            if t < len(played):
                actor += cache.uncached(played[t].sample.prompt_ids, played[t].sample.completion_ids)
    samples = [turn.sample for played in episodes for turn in played]
    generated = sum(len(s.completion_ids) for s in samples)
    tree = sum(len(r.tokens) for r in pack_plan([s.prompt_ids + s.completion_ids for s in samples],
                                                cfg.learner.micro_batch_tokens))
    critic, judged, cut = 0, 0, 0
    for played in episodes:
        for j in turn_judgments(instance, played, cfg.rewards):
            if j is None:
                continue
            ids = render_chat(tokenizer, critic_messages(j, cfg.critic.mode, cfg.critic.examples, cfg.critic.scoring))
            judged += 1
            cut += len(ids) >= cfg.model.max_model_len
            critic += cache.uncached(ids)
    return {"turns": len(samples) / len(episodes), "generated": generated, "per_turn": generated / len(samples),
            "update_per_generated": tree / generated, "actor_prefill": actor, "critic_prefill": critic,
            "judgments": judged, "cut": cut, "seq_len": mean(len(s) for s in samples)}


def learner_tps(mfu: float, attended: float, kl: bool) -> float:
    """Update tokens/s of one Qwen3-8B learner rank at `mfu` (gpu_check.py's formula; `kl`: the reference forward)."""
    import torch
    from gpu_learner import build_random, flops_per_token

    from aac.models import QWEN3_8B

    model = build_random(QWEN3_8B, torch.bfloat16, torch.device("meta"))
    return mfu * PEAK / flops_per_token(model, attended, kl=kl)


def steps_total(a: argparse.Namespace, cfg) -> int:
    return math.ceil(a.functions * cfg.learner.epochs / cfg.rollout.functions_per_step)


def project(m: dict[str, float], cfg, a: argparse.Namespace, learn_tps: float) -> dict[str, float]:
    groups = cfg.rollout.functions_per_step
    engines = cfg.rollout.num_engines  # the episodes spread over the engines by load
    decode_tps, prefill_tps = a.decode_tps * a.graphs * engines, engines * a.prefill_mfu * PEAK / (2 * 8.2e9)
    gen = groups * m["generated"]
    engine = {"decode": gen / decode_tps, "actor_prefill": groups * m["actor_prefill"] / prefill_tps,
              "critic": groups * m["critic_prefill"] / prefill_tps}
    learner = m["update_per_generated"] * gen / (learn_tps * cfg.learner.num_workers)
    ahead = cfg.rollout.max_off_policy_steps > 0  # the sync and its check run while the next rollout plays
    tail = (0 if ahead else a.sync_s + a.check_s / cfg.sync_check_every) + a.save_s / (cfg.save_every or steps_total(a, cfg))
    engine_s = sum(engine.values())
    step = max(engine_s, learner + tail) if cfg.rollout.max_off_policy_steps else engine_s + learner + tail
    steps = steps_total(a, cfg)
    evals = steps // cfg.eval_every if cfg.eval_every else 0
    eval_tokens = cfg.eval_limit * (min(m["turns"], 3 * cfg.eval.max_calls) * m["per_turn"]
                                    + cfg.eval.judge_max_tokens + cfg.eval.coder_max_tokens)
    eval_s = eval_tokens / (decode_tps * min(1.0, cfg.eval.batch_size / (groups * cfg.rollout.group_size)))
    # a judgment generated instead: up to critic.max_tokens decoded per judgment, at the rollout's rate
    generate_critic_s = groups * m["judgments"] * a.generate_tokens / decode_tps
    return {**{f"engine_{k}_s": v for k, v in engine.items()}, "engine_s": engine_s, "learner_s": learner,
            "tail_s": tail, "step_s": step, "steps": steps, "evals": evals, "eval_s": eval_s,
            "critic_generate_s": generate_critic_s,
            "total_h": (steps * step + evals * eval_s + a.startup_s) / 3600}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("overrides", nargs="*", help="overrides of +recipe=qwen3_8b (e.g. eval_every=250)")
    ap.add_argument("--turns", default="12,24,40", help="episode lengths (turns) to project")
    ap.add_argument("--functions", type=int, default=3889, help="training functions (PAU train: 3,889)")
    ap.add_argument("--decode-tps", type=float, default=3000.0, help="eager decode, 64 sequences in flight")
    ap.add_argument("--graphs", type=float, default=1.35, help="CUDA graphs' decode speed-up")
    ap.add_argument("--prefill-mfu", type=float, default=0.5)
    ap.add_argument("--learner-mfu", type=float, default=0.30)
    ap.add_argument("--gpu-check", type=Path, help="gpu_check.json: the learner's update tokens/s measured on the flagship-shaped batch")
    ap.add_argument("--sync-s", type=float, default=5.0, help="the adapter (~87 MB) written and loaded by the engine")
    ap.add_argument("--check-s", type=float, default=3.0, help="the sync check: two learner passes, one engine pass")
    ap.add_argument("--save-s", type=float, default=6.0, help="a checkpoint: the learner state (~0.7 GB) written")
    ap.add_argument("--generate-tokens", type=int, default=128, help="a generated judgment's mean length")
    ap.add_argument("--startup-s", type=float, default=600.0, help="one 16 GB download, two loads, engine warm-up")
    a = ap.parse_args()
    from transformers import AutoTokenizer

    from aac.config import compose
    from aac.models import resolve_model

    cfg = compose("+recipe=qwen3_8b", *a.overrides)
    tok = AutoTokenizer.from_pretrained(resolve_model("smollm2_135m"))
    rows = []
    for turns in (int(t) for t in a.turns.split(",")):
        m = measure_group(tok, cfg, a.overrides, turns)
        # a token attends to the keys of its turn before it: half a turn on average ((L + 1) / 2)
        tps = (json.loads(a.gpu_check.read_text())["learner_update_flagship"]["tokens_per_s"] if a.gpu_check
               else learner_tps(a.learner_mfu, (m["seq_len"] + 1) / 2, cfg.learner.kl_coef != 0))
        rows.append((turns, m, project(m, cfg, a, tps), tps))
    print(f"+recipe=qwen3_8b {' '.join(a.overrides)}: {rows[0][2]['steps']} steps of "
          f"{cfg.rollout.functions_per_step} x {cfg.rollout.group_size} episodes; off-policy "
          f"{cfg.rollout.max_off_policy_steps}; critic {cfg.critic.scoring}; eval every {cfg.eval_every} steps x "
          f"{cfg.eval_limit} episodes at batch {cfg.eval.batch_size}; decode {a.decode_tps:.0f} x {a.graphs} tok/s, "
          f"prefill MFU {a.prefill_mfu}, learner {'measured' if a.gpu_check else f'MFU {a.learner_mfu}'}\n")
    print("| turns | gen. / turn | update / gen. | judgments (cut) | engine s: decode + actor prefill + critic "
          "| (a generated critic) | learner s (tok/s) | tail s | **step s** | evals h | **5 epochs h** |")
    print("|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|")
    for turns, m, p, tps in rows:
        print(f"| {turns} | {m['per_turn']:.0f} | {m['update_per_generated']:.2f} | {m['judgments']} ({m['cut']}) | "
              f"{p['engine_s']:.0f}: {p['engine_decode_s']:.0f} + {p['engine_actor_prefill_s']:.0f} + "
              f"{p['engine_critic_s']:.0f} | +{p['critic_generate_s']:.0f} | {p['learner_s']:.0f} ({tps:,.0f}) | "
              f"{p['tail_s']:.1f} | **{p['step_s']:.0f}** | {p['evals'] * p['eval_s'] / 3600:.1f} | "
              f"**{p['total_h']:.0f}** |", flush=True)


if __name__ == "__main__":
    main()
