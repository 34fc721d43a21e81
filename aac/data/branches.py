"""Synthetic PAU rows for controlled experiments: small integer classifiers with many branches.

With `critic.kind=scripted` (aac/critic/scripted.py) a call is informative when it reaches branch
arcs the episode had not reached, so a function needs more unexplored branches than the K the
experiment asks for, reachable from the constrained input alphabet (aac/env/grammar.py: the ints
0, 1, 2, 3, 5, 7, -1, 10 among its literals). The functions of real sets rarely have that: on the
builtin HumanEval train split, 12 random calls from that alphabet reached a new arc in 20 of 130
functions, never 3 times. These rows do, so the optimum (stop after the K-th informative call) is
reachable in every episode. Each row is the PAU schema (docs/method.md §2); the code is ours and
trusted, so its outputs are computed here.
"""

from __future__ import annotations

import json
from pathlib import Path

_VALIDATOR = '''def validate_input_args(arg0):
    if not isinstance(arg0, int) or isinstance(arg0, bool):
        raise TypeError("arg0 must be an int")
'''
_BODY = '''
def test_func(arg0):
    validate_input_args(arg0)
    n = arg0
    if n < {lo}:
        return {names[0]!r}
    if n % {m} == 0:
        if n > {hi}:
            return {names[1]!r}
        return {names[2]!r}
    if n > {hi}:
        return {names[3]!r}
    return {names[4]!r}
'''
# (lo, m, hi): every function splits 0..10 and -1 into five classes
_SHAPES = [(0, 2, 4), (1, 3, 5), (0, 3, 4), (2, 2, 6), (0, 2, 6), (1, 2, 4), (0, 3, 6), (2, 3, 5)]
_NAMES = ("low", "mult big", "mult small", "big", "other")
_INPUTS = (-1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10)


def branch_rows(n: int) -> list[dict]:
    """`n` rows (n <= 8), each with its own thresholds; context examples from the same class."""
    if not 1 <= n <= len(_SHAPES):
        raise ValueError(f"branch_rows: n must be in 1..{len(_SHAPES)}, got {n}")
    rows = []
    for k, (lo, m, hi) in enumerate(_SHAPES[:n]):
        code = _VALIDATOR + _BODY.format(lo=lo, m=m, hi=hi, names=_NAMES)
        namespace: dict = {}
        exec(compile(code, f"<branches {k}>", "exec"), namespace)  # our own code: outputs computed here
        outputs = {x: namespace["test_func"](x) for x in _INPUTS}
        # two context examples of one class (the "other" one), so most branches are left to explore
        others = [x for x in _INPUTS if outputs[x] == "other" and x not in (0, 1, 2, 3, 5, 7, -1, 10)]
        others += [x for x in _INPUTS if outputs[x] == "other" and x not in others]
        train = [[f"({x},)", outputs[x]] for x in others[:2]]
        test = [[f"({x},)", outputs[x]] for x in _INPUTS if x not in others[:2]]
        description = (f"Classifies an integer n: '{_NAMES[0]}' if n < {lo}; else, if n is a multiple of {m}, "
                       f"'{_NAMES[1]}' when n > {hi} and '{_NAMES[2]}' otherwise; else '{_NAMES[3]}' when "
                       f"n > {hi} and '{_NAMES[4]}' otherwise.")
        rows.append({
            "task_id": f"branches/{k}", "source": "branches", "test_func_validated": code,
            "description": description, "train_examples": json.dumps(train), "test_examples": json.dumps(test),
            "all_examples": json.dumps([[i, o, "None"] for i, o in train]), "direct_prompt": "",
            "interactive_starting_prompt": "", "header": "def test_func(arg0):",
        })
    return rows


def write_branch_rows(path: str | Path, n: int = 8) -> Path:
    """The rows as a jsonl file (`env.data=PATH`)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in branch_rows(n)))
    return path
