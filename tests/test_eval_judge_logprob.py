"""The eval judge's log-prob option (`eval.judge_scoring=logprob`): the expected 1-5 rating from the
next token's log-probs, with the generate judge's interface."""

from __future__ import annotations

import math

import pytest

from aac.engines.base import TokenLogprobs
from aac.scorers.judge import Judge, LogprobJudge, make_judge
from aac.scorers.lm import EngineFailure


class DigitEngine:
    """Half the mass on 5, a quarter each on 4 and 1, or no rating digit / an error on cue."""

    def __init__(self):
        self.asked: list[str] = []

    def next_token_logprobs(self, requests, candidates):
        assert candidates == ["1", "2", "3", "4", "5"]
        out = []
        for r in requests:
            text = r.messages[-1]["content"]
            self.asked.append(text)
            if "DOWN" in text:
                out.append(TokenLogprobs({}, [], error="endpoint down"))
            elif "MUTE" in text:
                out.append(TokenLogprobs({}, [1]))
            else:
                out.append(TokenLogprobs({"5": math.log(0.5), "4": math.log(0.25), "1": math.log(0.25)}, [1]))
        return out


def test_logprob_judge_rates_the_expectation_and_skips_empty_predictions():
    engine = DigitEngine()
    judged, empty, mute = LogprobJudge(engine).rate([("def f(x):", "Doubles x.", "Doubles it."),
                                                     ("def f(x):", "Doubles x.", "  "),
                                                     ("def f(x):", "Doubles x.", "MUTE")])
    expected = 0.5 * 5 + 0.25 * 4 + 0.25 * 1
    assert judged.expected == pytest.approx(expected) and judged.score == 4 and judged.parsed
    assert (empty.score, empty.parsed, empty.expected) == (1, True, None)
    assert (mute.score, mute.parsed) == (1, False)
    assert len(engine.asked) == 2 and all(t.endswith("one digit from 1 to 5.\nRating:") for t in engine.asked)
    with pytest.raises(EngineFailure, match="1 of 1 requests failed: endpoint down"):
        LogprobJudge(engine).rate([("def f(x):", "Doubles x.", "DOWN")])


def test_make_judge_picks_the_scoring():
    engine = DigitEngine()
    assert isinstance(make_judge(engine, "logprob", 256), LogprobJudge)
    assert isinstance(make_judge(engine, "generate", 256), Judge)
    with pytest.raises(ValueError, match="eval.judge_scoring='both'"):
        make_judge(engine, "both", 256)
