"""Progress lines (aac/progress.py): what a log or a pipe shows while work runs, on a fake clock."""

from __future__ import annotations

import logging

from aac.progress import ProgressLines, bar


def test_lines_count_rate_and_eta_at_most_every_interval():
    now = [100.0]
    lines = ProgressLines(8, "interactive episodes", "episodes", every_s=10.0, clock=lambda: now[0])
    now[0] = 105.0
    assert lines.add(0, turns=6, tokens=120) is None  # 5 s since the start: too soon
    now[0] = 112.0
    assert lines.add(0, calls=2) == ("interactive episodes: 0/8 episodes, 6 turns, 120 tokens, 2 calls, "
                                      "10.0 tok/s (12s elapsed, ETA ?)")
    now[0] = 130.0
    assert lines.add(2, turns=10, tokens=240) == ("interactive episodes: 2/8 episodes, 16 turns, 360 tokens, 2 calls, "
                                                  "12.0 tok/s (30s elapsed, ETA 1m30s)")
    now[0] = 131.0
    assert lines.add(6).endswith("(31s elapsed, done)")  # the last one is never held back


def test_a_resumed_bar_estimates_from_its_own_progress():
    now = [0.0]
    lines = ProgressLines(10, "scoring", "episodes", completed=6, every_s=0.0, clock=lambda: now[0])
    now[0] = 20.0
    assert lines.add(2).endswith("8/10 episodes (20s elapsed, ETA 20s)")


def test_the_bar_logs_its_lines(caplog):
    with caplog.at_level(logging.INFO, logger="aac.test"):
        with bar(2, "work", enabled=False, log=logging.getLogger("aac.test"), unit="items", every_s=0.0) as advance:
            advance(1, calls=3)
            advance(1)
        with bar(2, "quiet", enabled=False) as advance:  # no logger: no lines
            advance(2)
    assert [r.getMessage().split(" (")[0] for r in caplog.records] == ["work: 1/2 items, 3 calls", "work: 2/2 items, 3 calls"]
