"""The ablation table compares two trained arms on the seeds both trained: a seed one arm lacks would carry that
seed's luck into the difference (issue 50: SYM-INFO's third seed moved AAC - SYM-INFO from +0.13 to +0.03)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from ablation_table import summarize  # noqa: E402

FUNCTIONS = [f"f{i}" for i in range(6)]


def _run(arm: str, seed: int | None, informative: float) -> dict:
    """A result file's record: every held-out function with `informative` calls (plus a per-function spread)."""
    rows = [{"uid": u, "informative": informative + i / 10} for i, u in enumerate(FUNCTIONS)]
    return {"arm": arm, "heldout": rows, **({} if seed is None else {"seed": seed, "steps": 32})}


def test_trained_arms_are_paired_on_their_shared_seeds_and_the_base_with_every_seed():
    arms = {"base": [_run("base", None, 0.0)],
            "sym_info": [_run("sym_info", 0, 0.2), _run("sym_info", 1, 0.2)],
            "aac": [_run("aac", 0, 0.3), _run("aac", 1, 0.3), _run("aac", 2, 0.9)]}  # seed 2: a lucky seed
    informative = summarize(arms)["aac"]["informative"]
    assert abs(informative["mean"] - 0.75) < 1e-9  # the arm's own mean takes every seed
    assert abs(informative["vs_sym_info"][0] - 0.1) < 1e-9  # seeds 0-1 only: not (0.3 + 0.3 + 0.9) / 3 - 0.2
    assert abs(informative["vs_base"][0] - 0.5) < 1e-9  # the untrained base pairs with all three
