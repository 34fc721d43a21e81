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


def rewrite_aliases(argv: list[str], aliases: dict[str, str] = ALIASES) -> list[str]:
    """`argv` with each `SHORT=VALUE` of `aliases` written as its full key (aac.describe has its own)."""
    out = []
    for arg in argv:
        key, sep, value = arg.partition("=")
        out.append(f"{aliases[key]}={value}" if sep and key in aliases else arg)
    return out
