"""Critic cost per rollout step: batching + cache vs one request at a time, and the critic's share.

One in-process vLLM engine on SmolLM2 (float32, LoRA on) serves the actor (a random LoRA adapter)
and the critic (base model through the identity adapter), as in training. One "rollout step" is: the
actor writes one turn for each of N episodes (one batch), then the critic grades each of those turns.
Measured in one run, side by side (all at the same machine load), for both routes of the critic's
base-model requests (through the identity adapter; LoRA off, `plain_base_batches`, the CPU default):
- one at a time: the critic sends one request at a time, no cache (a naive reward model);
- batched: all N judgments of the step in one engine call (cold cache);
- cache: the same step graded again (every judgment a cache hit), and a step whose judgments
  repeat within the GRPO group (`--repeat` copies of each), which batching dedupes;
- share: critic time / (actor generation + critic time).

    python benchmarks/bench_critic.py                 # 16 episodes, 64 actor / 48 critic tokens
    python benchmarks/bench_critic.py --episodes 8 --rounds 1   # quicker
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from dataclasses import replace
from pathlib import Path

# toy functions (source, gold description, header, calls seen): stand-ins for PAU instances
FUNCTIONS = [
    ("def test_func(arg0):\n    return sorted(arg0)[::-1]", "Sorts the list in descending order.",
     [("([3, 1, 2],)", "[3, 2, 1]"), ("([5],)", "[5]")]),
    ("def test_func(arg0, arg1):\n    return arg0 * arg1 if arg0 > 0 else arg1",
     "Multiplies the numbers when the first is positive, else returns the second.",
     [("(2, 3)", "6"), ("(-1, 4)", "4")]),
    ("def test_func(arg0):\n    return ''.join(c for c in arg0 if c.isalpha()).lower()",
     "Keeps only the letters of the string, lower-cased.", [("('A1b2',)", "'ab'"), ("('x',)", "'x'")]),
    ("def test_func(arg0):\n    return sum(x for x in arg0 if x % 2 == 0)", "Sums the even numbers of the list.",
     [("([1, 2, 4],)", "6"), ("([],)", "0")]),
]
PLANS = ["I will try an empty input to check the edge case.", "I will call it again with the same input.",
         "I will try a negative number to test the other branch.", "I will try a long input with repeats."]


def make_episodes(n: int):
    from aac.env.instance import Instance
    from aac.env.observation import Observation

    episodes = []
    for i in range(n):
        code, description, calls = FUNCTIONS[i % len(FUNCTIONS)]
        inst = Instance(uid=f"toy{i % len(FUNCTIONS)}", source="bench", code=code, description=description,
                        header=code.splitlines()[0], train_examples=list(calls), test_examples=[],
                        all_examples=[])
        episodes.append((inst, [Observation(a, b, None) for a, b in calls]))
    return episodes


def actor_prompt(inst, observations) -> list[dict]:
    calls = "\n".join(f"{o.input} -> {o.output_repr}" for o in observations)
    return [{"role": "system", "content": "You explore a hidden Python function by calling it."},
            {"role": "user", "content": f"Header: {inst.header}\nCalls:\n{calls}\nPlan the next call: what input, "
                                        "and what do you expect?"}]


def random_adapter(model_path: str, out: Path, r: int = 16, alpha: int = 16, std: float = 0.01) -> str:
    """A peft LoRA on every linear layer with random B (B = 0 would leave the outputs unchanged)."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    torch.manual_seed(0)
    model = get_peft_model(AutoModelForCausalLM.from_pretrained(model_path, dtype=torch.float32),
                           LoraConfig(r=r, lora_alpha=alpha, target_modules="all-linear"))
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.normal_(0.0, std)
    model.save_pretrained(str(out))
    return str(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="smollm2_135m")
    ap.add_argument("--episodes", type=int, default=16)
    ap.add_argument("--actor-tokens", type=int, default=64)
    ap.add_argument("--critic-tokens", type=int, default=48)
    ap.add_argument("--repeat", type=int, default=4, help="copies of each judgment in the dedupe case")
    ap.add_argument("--rounds", type=int, default=2, help="rounds per measurement (median kept)")
    args = ap.parse_args()

    from aac.config import CriticConfig
    from aac.critic import Judgment, PrivilegedCritic
    from aac.engines import GenRequest, Sampling, make_engine
    from aac.models import resolve_model

    path = resolve_model(args.model)
    tmp = Path(tempfile.mkdtemp(prefix="bench_critic-"))
    engine = make_engine("vllm", path, dtype="float32", max_model_len=2048, kv_cache_gb=2,
                         identity_cache_dir=str(tmp / "identity"))
    engine.load_adapter("actor", random_adapter(path, tmp / "actor"), 1)
    cfg = CriticConfig(max_tokens=args.critic_tokens, temperature=0.0)
    episodes = make_episodes(args.episodes)

    def actor_step(round_: int) -> tuple[float, list[str]]:
        sampling = Sampling(temperature=1.0, max_tokens=args.actor_tokens, logprobs=True)
        reqs = [GenRequest(actor_prompt(inst, obs), replace(sampling, seed=1000 * round_ + i),
                           "actor") for i, (inst, obs) in enumerate(episodes)]
        t0 = time.perf_counter()
        out = engine.generate(reqs)
        return time.perf_counter() - t0, [r.text for r in out]

    def judgments(texts: list[str], tag: str) -> list[Judgment]:
        # a plan plus the actor's text; `tag` makes each measurement's prompts new to vLLM's prefix cache
        # from the graded text on (what precedes it, shared by a function's episodes, stays cached)
        return [Judgment("informativeness", inst, "not yet formed", obs,
                         f"({tag}) {PLANS[i % len(PLANS)]} {text[:200]}")
                for i, ((inst, obs), text) in enumerate(zip(episodes, texts))]

    def timed(fn, *fn_args) -> float:
        t0 = time.perf_counter()
        fn(*fn_args)
        return time.perf_counter() - t0

    def one_at_a_time(critic, js) -> None:
        for j in js:
            critic.score([j])

    rows: dict[str, list[float]] = {}
    health = {}
    # warm-up: first-call costs stay out of the numbers, and both critic routes start with the shared
    # prompt prefix (system + worked examples) in vLLM's prefix cache, as in a running training job
    _, warm = actor_step(-1)
    for plain in (False, True):
        engine.plain_base_batches = plain
        PrivilegedCritic(engine, cfg).score(judgments(warm, "warm"))
    for r in range(args.rounds):
        t_actor, texts = actor_step(r)
        rows.setdefault("actor", []).append(t_actor)
        for route, plain in (("identity", False), ("plain", True)):
            engine.plain_base_batches = plain
            one_by_one = PrivilegedCritic(engine, replace(cfg, cache=False))
            rows.setdefault(f"sequential/{route}", []).append(
                timed(one_at_a_time, one_by_one, judgments(texts, f"s{route}{r}")))
            critic = PrivilegedCritic(engine, cfg)
            js = judgments(texts, f"b{route}{r}")
            rows.setdefault(f"batched/{route}", []).append(timed(critic.score, js))
        rows.setdefault("cached", []).append(timed(critic.score, js))
        unique = judgments(texts, f"d{r}")[: max(1, args.episodes // args.repeat)]
        rows.setdefault("dedupe", []).append(timed(critic.score, [j for j in unique for _ in range(args.repeat)]))
        health = critic.health
    med = {k: statistics.median(v) for k, v in rows.items()}
    engine.close()

    n = args.episodes
    print(f"\nbench_critic: {args.model} via vLLM ({'CPU' if _cpu() else 'GPU'}), {n} episodes/step, actor "
          f"{args.actor_tokens} tok/turn, critic {args.critic_tokens} tok, {args.rounds} rounds (median), "
          f"load avg {os.getloadavg()[0]:.1f}")
    print(f"{'measurement':48s} {'s/step':>8s} {'ms/episode':>11s}")
    for label, key in (("actor turn (batched generate, adapter)", "actor"),
                       ("critic, one request at a time, identity adapter", "sequential/identity"),
                       ("critic, batched, identity adapter", "batched/identity"),
                       ("critic, one request at a time, LoRA off", "sequential/plain"),
                       ("critic, batched, LoRA off (CPU default)", "batched/plain"),
                       ("critic, batched, all cache hits", "cached"),
                       (f"critic, batched, {args.repeat}x duplicated judgments", "dedupe")):
        print(f"{label:48s} {med[key]:8.2f} {1000 * med[key] / n:11.1f}")
    for route in ("identity", "plain"):
        seq, bat = med[f"sequential/{route}"], med[f"batched/{route}"]
        print(f"[{route}] speed-up batched vs one at a time: {seq / bat:.1f}x; critic share of a rollout step: "
              f"one at a time {seq / (med['actor'] + seq):.0%}, batched {bat / (med['actor'] + bat):.0%}")
    print(f"LoRA off vs identity adapter, batched: {med['batched/identity'] / med['batched/plain']:.1f}x; "
          f"one request at a time + identity (naive) vs batched + LoRA off: "
          f"{med['sequential/identity'] / med['batched/plain']:.1f}x")
    print(f"cache hit vs batched LoRA off: {med['batched/plain'] / max(med['cached'], 1e-9):.0f}x; "
          f"{args.repeat}x duplicates cost {med['dedupe'] / med['batched/plain']:.2f} of a batch of distinct ones")
    print(f"critic health (last round): parse failures {health['parse_failures']}/{health['replies']}, "
          f"cache hits {health['cache_hits']}/{health['judgments']}, fallbacks {health['fallbacks']}")


def _cpu() -> bool:
    from vllm.platforms import current_platform

    return current_platform.is_cpu()


if __name__ == "__main__":
    main()
