"""Training-signal accounting of a batch, on a hand-built batch whose numbers are counted by hand."""

from __future__ import annotations

import pytest

from aac.rewards import signal_accounting

R, I, F = "reasoning", "input", "reflect"  # noqa: E741

# group A: two episodes with equal returns (no GRPO signal); group B: returns 3.0 and 1.0
BATCH = dict(
    groups=["A", "A", "B", "B"],
    phases=[[R, I, F], [R, I, F], [R, I, F, R, I, F], [R, I, F]],
    tokens=[[10, 2, 8], [12, 3, 5], [10, 2, 8, 20, 4, 6], [9, 1, 10]],
    advantages=[[0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [1.0, -0.5, 2.0, 0.5, 1.0, 1.5], [-1.0, -1.0, -3.0]],
    rewards=[[0.5, 0.0, 1.5], [1.0, 0.0, 1.0], [0.5, 0.5, 1.0, 0.0, 0.0, 1.0], [0.2, 0.3, 0.5]],
    scores={"hypothesis": [0.0, 0.05, 0.95, 1.0, None, 0.5], "informativeness": [0.31, None, None]},
)


def test_accounting_counts():
    m, warnings = signal_accounting(**BATCH)
    assert m["signal/generated_tokens"] == 110
    assert m["signal/zero_adv_token_frac"] == pytest.approx((20 + 20) / 110)  # group A's 40 tokens
    assert m["signal/abs_adv/reasoning"] == pytest.approx((0 + 0 + 1.0 + 0.5 + 1.0) / 5)
    assert m["signal/abs_adv/reflect"] == pytest.approx((0 + 0 + 2.0 + 1.5 + 3.0) / 5)
    assert m["signal/abs_adv/turn_0"] == pytest.approx((0 + 0 + 1.0 + 1.0) / 4)
    assert m["signal/abs_adv/turn_5"] == pytest.approx(1.5)
    assert m["signal/zero_spread_group_frac"] == 0.5
    hist = [m[f"critic/hypothesis/bin_{k}"] for k in range(10)]
    assert hist == [2, 0, 0, 0, 0, 1, 0, 0, 0, 2]  # 0.0 and 0.05 in bin 0; 1.0 in the last bin
    assert m["critic/hypothesis/masked"] == 1 and m["critic/informativeness/masked"] == 2
    assert m["critic/informativeness/bin_3"] == 1
    assert m["critic/hypothesis/mean"] == pytest.approx((0.0 + 0.05 + 0.95 + 1.0 + 0.5) / 5)  # masked left out
    assert m["critic/informativeness/mean"] == pytest.approx(0.31)
    assert warnings == []
    m5, _ = signal_accounting(**BATCH, bins=5)
    assert "critic/hypothesis/bin_5" not in m5 and m5["critic/hypothesis/bin_4"] == 2


def test_accounting_warns_on_a_no_op_and_a_mostly_empty_update():
    flat = {**BATCH, "advantages": [[0.0] * len(p) for p in BATCH["phases"]]}
    _, warnings = signal_accounting(**flat)
    assert len(warnings) == 1 and warnings[0].startswith("no-op update")
    mostly = {**BATCH, "advantages": [[0.0] * len(p) for p in BATCH["phases"][:3]] + [[0.0, 0.0, 0.1]]}
    m, warnings = signal_accounting(**mostly)
    assert m["signal/zero_adv_token_frac"] == pytest.approx(100 / 110)
    assert warnings == ["91% of the batch's generated tokens have zero advantage"]
    assert signal_accounting(**mostly, warn_zero_share=0.95).warnings == []


def test_accounting_bad_input():
    with pytest.raises(ValueError, match="episode 1 has 3 phases, 2 token counts"):
        signal_accounting(**{**BATCH, "tokens": [[1, 1, 1], [1, 1], [1] * 6, [1] * 3]})
    with pytest.raises(ValueError, match="4 group ids, 3 phase lists"):
        signal_accounting(**{**BATCH, "phases": BATCH["phases"][:3]})
