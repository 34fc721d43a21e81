"""Command-line short forms of `python -m aac.eval`.

The schema is the training one (`aac.config.TrainConfig`, its `eval` group), so `+recipe=NAME`
and `model=` mean the same in both; `mode=`, `data=`, `checkpoint=`, ... stand for `eval.*` keys.
"""

from __future__ import annotations

# command-line short forms of `python -m aac.eval`
ALIASES = {"mode": "eval.mode", "data": "eval.data", "split": "eval.split", "limit": "eval.limit",
           "checkpoint": "eval.checkpoint", "engine": "eval.engine", "judge": "eval.judge_model",
           "coder": "eval.coder_model", "gold": "eval.gold", "name": "eval.name",
           "protocol_from": "eval.protocol_from"}


def rewrite_aliases(argv: list[str]) -> list[str]:
    out = []
    for arg in argv:
        key, sep, value = arg.partition("=")
        out.append(f"{ALIASES[key]}={value}" if sep and key in ALIASES else arg)
    return out
