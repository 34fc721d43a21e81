"""The vLLM CPU engine's start-up and per-step latency under its thread settings, one fresh process each.

The demo's shape: SmolLM2-135M float32, LoRA off, 1 GiB KV cache, a group of 4 identical turn-4
protocol prompts, `--tokens` (48) tokens each (ignore_eos, so every call decodes the same steps).
Modes (the environment a Ray actor gives the engine):

- auto:    today's: OMP_NUM_THREADS=1 (Ray's for a num_cpus=0 actor), VLLM_CPU_OMP_THREADS_BIND=auto
           (vLLM keeps one core for its engine process: on 2 cores the worker gets 1);
- all:     VLLM_CPU_OMP_THREADS_BIND = every allowed core (`rollout.cpu_threads` None);
- inproc:  every allowed core, and the engine core and worker in the caller's process
           (VLLM_ENABLE_V1_MULTIPROCESSING=0: one process per engine instead of three).

Per mode: start-up wall and CPU seconds (the whole process tree), then per call the wall seconds per
decode step and the tree's CPU seconds, and the CPU the tree burns in `--idle` seconds after a call
(busy polling shows here). Modes alternate over `--rounds`; CPU seconds are robust to machine load.

    python benchmarks/bench_engine_threads.py [--modes auto all inproc] [--rounds 1] [--calls 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

MODES = ("auto", "all", "inproc")


def tree_cpu() -> float:
    import psutil

    me = psutil.Process()
    total = 0.0
    for p in [me, *me.children(recursive=True)]:
        try:
            t = p.cpu_times()
            total += t.user + t.system
        except psutil.Error:
            pass
    return total


def child(mode: str, tokens: int, calls: int, idle: float) -> dict:
    from aac.engines.cpu_threads import vllm_cpu_bind

    if mode == "auto":
        os.environ.update(OMP_NUM_THREADS="1", VLLM_CPU_OMP_THREADS_BIND="auto")
    else:
        os.environ.update(OMP_NUM_THREADS=str(len(os.sched_getaffinity(0))), VLLM_CPU_OMP_THREADS_BIND=vllm_cpu_bind())
    if mode == "inproc":
        os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"
    os.environ.update(VLLM_CPU_KVCACHE_SPACE="1", OMP_WAIT_POLICY="PASSIVE", VLLM_LOGGING_LEVEL="WARNING")
    from bench_actor_gen import turn4_prompts  # benchmarks/ is the script's folder, so on sys.path

    from aac.engines.base import render_chat
    from aac.models import resolve_model

    t0, c0 = time.perf_counter(), tree_cpu()
    from vllm import LLM, SamplingParams
    from vllm.inputs import TokensPrompt

    llm = LLM(model=resolve_model("smollm2_135m"), dtype="float32", max_model_len=2048, seed=0, enforce_eager=True)
    out = {"mode": mode, "start_s": time.perf_counter() - t0, "start_cpu_s": tree_cpu() - c0}
    tok = llm.get_tokenizer()
    prompts = turn4_prompts(calls)
    per_call = []
    for i, messages in enumerate(prompts):
        ids = render_chat(tok, messages, {})
        params = SamplingParams(temperature=1.0, max_tokens=tokens, ignore_eos=True, seed=i)
        t0, c0 = time.perf_counter(), tree_cpu()
        llm.generate([TokensPrompt(prompt_token_ids=ids)] * 4, params, use_tqdm=False)
        wall, cpu = time.perf_counter() - t0, tree_cpu() - c0
        c0 = tree_cpu()
        time.sleep(idle)
        per_call.append({"s_per_step": wall / tokens, "cpu_s": cpu, "idle_cpu_s": tree_cpu() - c0})
    out["calls"] = per_call
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--modes", nargs="+", default=list(MODES), choices=MODES)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--calls", type=int, default=3)
    ap.add_argument("--tokens", type=int, default=48)
    ap.add_argument("--idle", type=float, default=5.0)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        print("RESULT " + json.dumps(child(a.child, a.tokens, a.calls, a.idle)), flush=True)
        return
    rows = []
    for r in range(a.rounds):
        for mode in (a.modes if r % 2 == 0 else a.modes[::-1]):
            run = subprocess.run([sys.executable, __file__, "--child", mode, "--calls", str(a.calls), "--tokens",
                                  str(a.tokens), "--idle", str(a.idle)], capture_output=True, text=True)
            line = next((x for x in run.stdout.splitlines() if x.startswith("RESULT ")), None)
            if line is None:
                sys.exit(f"mode {mode} failed:\n{run.stderr[-3000:]}")
            rows.append(json.loads(line[7:]))
            print(json.dumps(rows[-1]), flush=True)
    print(f"load average at the end: {os.getloadavg()[0]:.1f}")
    print("mode | start s | start CPU s | s per decode step (batch 4) | CPU s per call | idle CPU s per "
          f"{a.idle:g} s after a call")
    for row in rows:
        calls = row["calls"][1:] or row["calls"]  # the first call pays one-off warm-up
        med = {k: statistics.median(c[k] for c in calls) for k in ("s_per_step", "cpu_s", "idle_cpu_s")}
        print(f"{row['mode']} | {row['start_s']:.1f} | {row['start_cpu_s']:.1f} | {med['s_per_step']:.3f} | "
              f"{med['cpu_s']:.1f} | {med['idle_cpu_s']:.2f}")


if __name__ == "__main__":
    main()
