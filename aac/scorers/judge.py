"""The description score (docs/method.md §9): an LM judge rates predicted vs gold description on 1–5.

Greedy; the reply ends with `Rating: n`; a reply without a rating in 1..5 scores 1 and is
counted as unparsable (a health number of the judge, reported next to the score).
`eval.judge_scoring=logprob` (`LogprobJudge`): the same rubric ends with the rating cue and the
engine returns the next token's log-probs over 1..5; the rating is their probability-weighted mean
(G-Eval): one forward pass per item, nothing to parse.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from aac.engines.base import Engine, GenRequest
from aac.env.prompts import strip_think
from aac.scorers.lm import Completer, EngineCompleter, EngineFailure

_SYSTEM = "You are a careful grader of descriptions of Python {subjects}. You answer concisely."
SYSTEM = _SYSTEM.format(subjects="functions")  # the function domains' (pau, library)

RUBRIC = """\
Someone explored an unknown Python {subject} only by calling it, then described what it does.
Compare their predicted description with the reference description of the same {subject} and rate
how accurately the prediction describes the {subject}'s behaviour (what it returns, for which inputs,
edge cases). Judge behaviour, not wording or style.

1 = completely inaccurate, empty, or unrelated
2 = mostly inaccurate: at most superficial aspects are right
3 = partially accurate: the main idea is right but important details are missing or wrong
4 = mostly accurate: only small details are missing or wrong
5 = completely accurate

{Subject} header: {header}

Reference description:
{gold}

Predicted description:
{predicted}

{answer}"""
ANSWER = {
    "generate": "Explain your judgement in at most three sentences, then end with a final line `Rating: <1-5>`.",
    "logprob": "Answer with the rating alone: one digit from 1 to 5.\nRating:",
}
RATINGS = {str(k): k for k in range(1, 6)}

_RATING = re.compile(r"rating\W{0,6}([1-5])(?![\d.]*\d)", re.IGNORECASE)


def judge_messages(header: str, gold: str, predicted: str, scoring: str = "generate",
                   subject: str = "function") -> list[dict]:
    """The judge's chat; `subject`: what was explored (the domain's: function, class, web service)."""
    user = RUBRIC.format(header=header.strip(), gold=gold.strip(), predicted=predicted.strip(),
                         answer=ANSWER[scoring], subject=subject, Subject=subject[:1].upper() + subject[1:])
    return [{"role": "system", "content": _SYSTEM.format(subjects=f"{subject}s")}, {"role": "user", "content": user}]


def parse_rating(text: str) -> int | None:
    """The last `Rating: n` with n in 1..5 (markdown and `/5` tolerated); None if there is none."""
    found = _RATING.findall(strip_think(text))
    return int(found[-1]) if found else None


@dataclass(frozen=True)
class Rating:
    score: int  # 1..5; unparsable -> 1 (logprob: the expected rating, rounded)
    parsed: bool
    text: str  # the judge's reply, kept for inspection
    expected: float | None = None  # logprob: the probability-weighted mean rating in [1, 5]


def rating_from_reply(text: str) -> Rating:
    value = parse_rating(text)
    return Rating(score=value if value is not None else 1, parsed=value is not None, text=text)


class Judge:
    """Rates (header, gold, predicted) triples in one batch. An empty prediction scores 1 unasked."""

    def __init__(self, completer: Completer, subject: str = "function"):
        self.completer = completer
        self.subject = subject

    def rate(self, items: list[tuple[str, str, str]]) -> list[Rating]:
        asked = [i for i, (_, _, pred) in enumerate(items) if pred.strip()]
        replies = self.completer([judge_messages(*items[i], subject=self.subject) for i in asked])
        out = [Rating(score=1, parsed=True, text="(empty prediction)")] * len(items)
        for i, reply in zip(asked, replies):
            out[i] = rating_from_reply(reply)
        return out


class LogprobJudge:
    """`Judge` by next-token log-probs: the same interface, one forward pass per item."""

    def __init__(self, engine: Engine, adapter: str | None = None, subject: str = "function"):
        self.engine = engine
        self.adapter = adapter
        self.subject = subject

    def rate(self, items: list[tuple[str, str, str]]) -> list[Rating]:
        asked = [i for i, (_, _, pred) in enumerate(items) if pred.strip()]
        requests = [GenRequest(judge_messages(*items[i], scoring="logprob", subject=self.subject), adapter=self.adapter)
                    for i in asked]
        results = self.engine.next_token_logprobs(requests, list(RATINGS)) if requests else []
        failed = [r for r in results if r.error is not None]
        if failed:  # as EngineCompleter: an outage must not be stored as real scores
            raise EngineFailure(f"{len(failed)} of {len(results)} requests failed: {failed[0].error}")
        out = [Rating(score=1, parsed=True, text="(empty prediction)")] * len(items)
        for i, r in zip(asked, results):
            mean, mass = r.expectation(RATINGS)
            out[i] = (Rating(score=1, parsed=False, text="(no rating digit among the log-probs)") if mean is None
                      else Rating(score=int(mean + 0.5), parsed=True, expected=mean,
                                  text=f"expected rating {mean:.3f} (rating digits hold {mass:.0%})"))
        return out


def make_judge(engine: Engine, scoring: str, max_tokens: int, adapter: str | None = None,
               subject: str = "function") -> Judge | LogprobJudge:
    """The eval judge for `eval.judge_scoring` (generate | logprob) on `engine`; `subject`: the domain's."""
    if scoring == "logprob":
        return LogprobJudge(engine, adapter, subject)
    if scoring != "generate":
        raise ValueError(f"eval.judge_scoring={scoring!r} is not one of: {', '.join(ANSWER)}")
    return Judge(EngineCompleter(engine, max_tokens, adapter=adapter), subject)
