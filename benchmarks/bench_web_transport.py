"""The web domain's sandbox cost: an episode's query (its requests replayed on a fresh service) as the
history grows, and a service-call function's first call in a fresh sandbox child vs its later calls.

On a built `builtin:web` service (`--service`, default weather), in one warm pool preloaded as the domain
preloads it: the `serve` program with 1, 10 and 27 identical requests (27 = the two examples and an
evaluation's 25 calls), and the first httpx gold function's program, timed on its first call (wall
time: a new child loads the transport and the service) and after (in-child). Medians of `--rounds`;
the ratio column is each row against the one-request query.

    python benchmarks/bench_web_transport.py [--service weather] [--rounds 20]
"""

from __future__ import annotations

import argparse
import statistics
import time

from aac.datasets import load_instances
from aac.env.domains import pool_preload
from aac.env.domains.web import function_name, parse_intent, parse_request, program
from aac.sandbox.pool import SandboxPool


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--service", default="weather")
    ap.add_argument("--rounds", type=int, default=20)
    a = ap.parse_args()
    rows = [*load_instances("builtin:web", split="train", domain="web"),
            *load_instances("builtin:web", split="test", domain="web")]
    inst = next(i for i in rows if i.uid == f"web/{a.service}")
    request = parse_request(inst.train_examples[0][0])
    gold = next(parse_intent(lit) for lit, _ in inst.test_examples if "import httpx" in parse_intent(lit)["gold"])
    with SandboxPool(workers=1, preload=pool_preload("web")) as pool:
        serve = program(inst.code, "serve")
        pool.call(serve, repr((request,)))  # the child up
        out = []
        for n in (1, 10, 27):
            times = [pool.call(serve, repr((request,) * n)).duration_s for _ in range(a.rounds)]
            out.append((f"episode query, {n} request(s)", statistics.median(times)))
        call = program(inst.code, "call", gold["gold"], function_name(gold["signature"]))
        args = repr(tuple(gold["inputs"][0]))
        start = time.perf_counter()
        pool.call(call, args)
        first = time.perf_counter() - start
        warm = statistics.median(pool.call(call, args).duration_s for _ in range(a.rounds))
    base = out[0][1]
    print(f"service {inst.uid} ({inst.header.split(':')[0]}), {a.rounds} rounds")
    print(f"{'what':<40} {'ms':>8} {'ratio':>7}")
    for what, seconds in [*out, ("httpx gold call, first (wall, new child)", first),
                          ("httpx gold call, after (in-child)", warm)]:
        print(f"{what:<40} {1000 * seconds:8.2f} {seconds / base:7.1f}")


if __name__ == "__main__":
    main()
