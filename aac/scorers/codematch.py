"""Code match (docs/method.md §9): a coder model writes `test_func` from a description, the header and the
examples the agent observed; the code runs in the sandbox on the held-out `test_examples`; the
score is the fraction whose output equals the stored one after the one normalisation of
`aac.sandbox.values` (applied to both sides, so tuple-returning functions can match JSON lists).

The domain (aac/env/domains) words the coder's task, turns the code into the program that is run
(`match_program`: a stateful domain replays held-out call sequences on the coder's class) and gives
the held-out cases (`match_cases`).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from aac.env.domains import get_domain
from aac.env.observation import Observation
from aac.env.prompts import strip_think
from aac.scorers.lm import Completer

if TYPE_CHECKING:
    from aac.sandbox.pool import SandboxPool

SYSTEM = "You are an expert Python programmer. You reply with code only."

_FENCE = re.compile(r"```[ \t]*([\w+.-]*)[^\n]*\n(.*?)(?:```|\Z)", re.DOTALL)
_DEFINES_TEST_FUNC = re.compile(r"^\s*def\s+test_func\s*\(", re.MULTILINE)
_CODE_START = re.compile(r"^(?:def |async def |class |import |from \S+ import |@)")
_PY_LANGS = {"", "python", "python3", "py"}


def _line(o: Observation) -> str:
    """One observed call as the coder is shown it."""
    return f"input: {o.input}  ->  {f'raises {o.error}' if o.error else o.output_repr}"


def coder_messages(header: str, description: str, examples: Sequence[Observation], domain: str = "pau") -> list[dict]:
    shown = "\n".join(_line(e) for e in examples) or "(none)"
    user = get_domain(domain).coder_prompt().format(header=header.strip(), description=description.strip() or "(none)",
                                                    examples=shown)
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


def _parses(code: str) -> bool:
    try:
        ast.parse(code)
    except (SyntaxError, ValueError):
        return False
    return True


def _parsing_prefix(lines: list[str]) -> str:
    """The longest prefix of `lines` that parses (a reply cut by the token limit, trailing prose),
    else all of it (the sandbox then reports the syntax error)."""
    for end in range(len(lines), 0, -1):
        code = "\n".join(lines[:end]).rstrip()
        if _parses(code):
            return code
    return "\n".join(lines).strip()


def extract_code(reply: str) -> str:
    """The code in a coder reply: the first Python fence defining `test_func` (else the first
    Python fence); without fences, from the first line that starts code. Cut to the longest
    prefix that parses. '' when there is no code at all."""
    text = strip_think(reply)
    blocks = [body for lang, body in _FENCE.findall(text) if lang.lower() in _PY_LANGS]
    if blocks:
        defining = [b for b in blocks if _DEFINES_TEST_FUNC.search(b)]
        return _parsing_prefix((defining or blocks)[0].strip().splitlines())
    lines = text.splitlines()
    start = next((i for i, ln in enumerate(lines) if _CODE_START.match(ln)), None)
    return "" if start is None else _parsing_prefix(lines[start:])


@dataclass(frozen=True)
class CodeMatch:
    score: float  # fraction of test examples matched, in [0, 1]
    matches: int
    total: int
    errors: int  # test calls that raised or timed out (they never match)
    code: str
    note: str | None = None  # why nothing ran, e.g. no code in the reply

    def to_dict(self) -> dict:
        return {"score": self.score, "matches": self.matches, "total": self.total, "errors": self.errors,
                "code": self.code, "note": self.note}


@dataclass(frozen=True)
class CoderTask:
    header: str
    description: str
    examples: list[Observation]
    test_examples: list[tuple[str, Any]] = field(default_factory=list)
    domain: str = "pau"
    source: str = ""  # the black box's code: what a web service call runs against


def score_code(code: str, test_examples: Sequence[tuple[str, object]], pool: SandboxPool, *, timeout_s: float,
               spread_list: bool = True) -> CodeMatch:
    """Run `code` (defining `test_func`) on every test input in the sandbox pool."""
    return score_codes([code], [test_examples], pool, timeout_s=timeout_s, spread_list=spread_list)[0]


def score_codes(codes: Sequence[str], tests: Sequence[Sequence[tuple[str, object]]], pool: SandboxPool, *,
                timeout_s: float, spread_list: bool = True) -> list[CodeMatch]:
    """`score_code` for many (code, test_examples) pairs with one batch of sandbox calls."""
    from aac.sandbox.values import outputs_match

    calls = [(code, inp) for code, examples in zip(codes, tests) if code for inp, _ in examples]
    results = iter(pool.call_many(calls, timeout_s=timeout_s, spread_list=spread_list) if calls else [])
    out = []
    for code, examples in zip(codes, tests):
        if not examples:
            raise ValueError("code match needs at least one test example")
        if not code:
            out.append(CodeMatch(0.0, 0, len(examples), 0, code, note="no code in the coder's reply"))
            continue
        matches = errors = 0
        for _, expected in examples:
            res = next(results)
            if not res.ok:
                errors += 1
            elif outputs_match(res.normalized, expected):
                matches += 1
        out.append(CodeMatch(matches / len(examples), matches, len(examples), errors, code))
    return out


class CodeMatcher:
    """Coder model + sandbox: descriptions in, code-match scores out, one batch at a time."""

    reference_rows: tuple[str, ...] = ()  # rows aac.eval always adds beside the agent's (eval.gold adds "gold")

    def __init__(self, completer: Completer, pool: SandboxPool, *, timeout_s: float = 0.5, spread_list: bool = True):
        self.completer = completer
        self.pool = pool
        self.timeout_s = timeout_s
        self.spread_list = spread_list

    def score(self, tasks: Sequence[CoderTask]) -> list[CodeMatch]:
        replies = self.completer([coder_messages(t.header, t.description, t.examples, t.domain) for t in tasks])
        codes = [extract_code(r) for r in replies]
        matched = score_codes([get_domain(t.domain).match_program(c) if c else c for c, t in zip(codes, tasks)],
                              [t.test_examples for t in tasks], self.pool, timeout_s=self.timeout_s,
                              spread_list=self.spread_list)
        return [replace(m, code=c) for m, c in zip(matched, codes)]  # the coder's code, not the program run
