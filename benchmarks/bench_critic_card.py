"""The critic's report card for SmolLM2, generate vs logprob scoring, in-process and through an endpoint.

Runs `python -m aac.critic.check` (a fresh process, so a cold engine and prefix cache, for each) on
the built HumanEval test split with `critic.scoring=generate` and `critic.scoring=logprob`: first with
the in-process vLLM engine (the embedded critic), then against a local vLLM OpenAI-compatible server
(bound to 127.0.0.1) serving the same model with `critic.backend=openai` - the path a user with a
stronger model takes. Prints the cards side by side and the cost ratio logprob / generate.

Runs in turn see whatever else loads the machine; `--paired N` measures the cost ratio itself under
one load: one in-process vLLM engine, cards on the first N functions scored generate, logprob,
logprob, generate (prefix cache reset before each), ratio of the summed times.

    python benchmarks/bench_critic_card.py                    # all 33 test functions, both backends
    python benchmarks/bench_critic_card.py --limit 8 --no-endpoint
    python benchmarks/bench_critic_card.py --paired 8
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def check(out: Path, limit: int | None, *overrides: str) -> dict:
    cmd = [sys.executable, "-m", "aac.critic.check", f"out={out}", *([f"limit={limit}"] if limit else []),
           "rollout.kv_cache_gb=1", *overrides]
    print("$", " ".join(cmd[1:]), flush=True)
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"check failed ({done.returncode}):\n{done.stderr[-3000:]}")
    print(next(line for line in done.stdout.splitlines() if line.startswith("critic card")), flush=True)
    return json.loads((out / "card.json").read_text())


def serve(model_path: str, log_path: Path) -> tuple[subprocess.Popen, str]:
    """A vLLM OpenAI-compatible server on 127.0.0.1 serving the model as "smollm2"; (process, /v1 URL)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cmd = [sys.executable, "-m", "vllm.entrypoints.launchers.api_server.entry", "--model", model_path,
           "--served-model-name", "smollm2", "--host", "127.0.0.1", "--port", str(port), "--dtype", "float32",
           "--max-model-len", "2048", "--enforce-eager", "--seed", "0"]
    with open(log_path, "w") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                env=dict(os.environ, VLLM_CPU_KVCACHE_SPACE="1"))
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            sys.exit(f"the server exited with {proc.returncode}; see {log_path}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
                if r.status == 200:
                    return proc, f"http://127.0.0.1:{port}/v1"
        except OSError:
            time.sleep(1.0)
    stop(proc)
    sys.exit(f"the server was not ready after 600 s; see {log_path}")


def stop(proc: subprocess.Popen) -> None:
    for sig, wait in ((signal.SIGINT, 30), (signal.SIGKILL, 10)):
        if proc.poll() is not None:
            return
        os.killpg(proc.pid, sig)
        try:
            proc.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            pass


def paired(n: int) -> None:
    from aac.config import CriticConfig
    from aac.critic import PrivilegedCritic
    from aac.critic.card import run_card
    from aac.datasets import load_instances
    from aac.engines import make_engine
    from aac.models import resolve_model

    instances = load_instances("builtin:humaneval", split="test", limit=n)
    engine = make_engine("vllm", resolve_model("smollm2_135m"), dtype="float32", max_model_len=4096, kv_cache_gb=1,
                         enable_lora=False)
    seconds: dict[str, list[float]] = {"generate": [], "logprob": []}
    try:
        for scoring in ("generate", "logprob", "logprob", "generate"):
            engine.llm.reset_prefix_cache()
            card = run_card(PrivilegedCritic(engine, CriticConfig(scoring=scoring)), instances, {"scoring": scoring})
            seconds[scoring].append(card["seconds_per_judgment"])
            print(f"{scoring:9s} {card['judgments']} judgments: {card['seconds_per_judgment']:.3f} s/judgment, "
                  f"parse failures {card['parse_failure_rate']:.0%}", flush=True)
    finally:
        engine.close()
    print(f"\npaired ({n} functions, vllm in-process, load avg {os.getloadavg()[0]:.1f}): s/judgment generate "
          f"{' '.join(f'{x:.3f}' for x in seconds['generate'])}, logprob {' '.join(f'{x:.3f}' for x in seconds['logprob'])}"
          f"; cost per judgment, logprob / generate: {sum(seconds['logprob']) / sum(seconds['generate']):.2f}")


def _f(value, fmt: str) -> str:
    return "n/a" if value is None else format(value, fmt)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--limit", type=int, default=None, help="first N test functions (default: all)")
    ap.add_argument("--out", default="runs/bench_critic_card")
    ap.add_argument("--no-endpoint", action="store_true", help="skip the OpenAI-compatible server runs")
    ap.add_argument("--paired", type=int, default=None, metavar="N", help="only the paired cost ratio on N functions")
    args = ap.parse_args()
    if args.paired:
        return paired(args.paired)
    from aac.models import resolve_model

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    cards = {f"vllm/{s}": check(out / f"vllm-{s}", args.limit, f"critic.scoring={s}") for s in ("generate", "logprob")}
    if not args.no_endpoint:
        proc, url = serve(resolve_model("smollm2_135m"), out / "serve.log")
        try:
            for s in ("generate", "logprob"):
                cards[f"openai/{s}"] = check(out / f"openai-{s}", args.limit, "critic.backend=openai",
                                             f"critic.openai.base_url={url}", "critic.openai.model=smollm2",
                                             f"critic.scoring={s}")
        finally:
            stop(proc)

    print(f"\nbench_critic_card: smollm2_135m, builtin:humaneval test, {next(iter(cards.values()))['instances']} "
          f"functions, load avg {os.getloadavg()[0]:.1f}")
    print(f"{'critic':18s} {'judg.':>5s} {'AUC mism.':>9s} {'AUC degr.':>9s} {'spread':>6s} {'parse fail':>10s} "
          f"{'fallback':>8s} {'digit mass':>10s} {'s/judg.':>7s} {'prompt tok':>10s} {'gen tok':>7s}")
    for name, c in cards.items():
        print(f"{name:18s} {c['judgments']:5d} {_f(c['auc_gold_vs_mismatched'], '.3f'):>9s} "
              f"{_f(c['auc_gold_vs_degraded'], '.3f'):>9s} {_f(c['score_spread'], '.3f'):>6s} "
              f"{_f(c['parse_failure_rate'], '.1%'):>10s} {_f(c['fallback_rate'], '.1%'):>8s} "
              f"{_f(c['digit_mass_mean'], '.2f'):>10s} {c['seconds_per_judgment']:7.3f} "
              f"{c['prompt_tokens_per_judgment']:10.0f} {c['generated_tokens_per_judgment']:7.1f}")
    for backend in ("vllm", "openai"):
        if f"{backend}/logprob" in cards:
            ratio = cards[f"{backend}/logprob"]["seconds_per_judgment"] / cards[f"{backend}/generate"]["seconds_per_judgment"]
            print(f"[{backend}] cost per judgment, logprob / generate: {ratio:.2f}")


if __name__ == "__main__":
    main()
