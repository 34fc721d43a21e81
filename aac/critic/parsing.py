"""Reading the critic's `Rating: n` out of a free-form reply.

Robust to case, spaces, markdown emphasis (`**Rating:** 7`), brackets (`Rating: [7]`), a scale
suffix (`Rating: 7/9`), trailing text, and `<think>` blocks (thinking is dropped first, so a rating
mentioned while thinking does not count). When several ratings appear the last one wins: a reply
that restates the format before answering is still read right.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

from aac.env.prompts import strip_think

RATING_MIN, RATING_MAX = 0, 9
_RATING = re.compile(r"rating[\s*_]*[:=][\s*_\[(\"']*(-?\d+(?:\.\d+)?)", re.I)


@dataclass(frozen=True)
class ParsedRating:
    value: Optional[int]  # None unless status == "ok"
    status: str  # "ok" | "missing" (no `Rating:` number) | "invalid" (not an integer in 0..9)

    @property
    def score(self) -> Optional[float]:
        """The rating scaled to [0, 1]; None for a reply without a valid rating (masked: docs/method.md §7.1 P5)."""
        return self.value / RATING_MAX if self.value is not None else None


def parse_rating(reply: str) -> ParsedRating:
    matches = _RATING.findall(strip_think(reply or ""))
    if not matches:
        return ParsedRating(None, "missing")
    number = matches[-1]
    if "." in number:  # 7.0 is still an integer rating; 7.5 is not
        as_float = float(number)
        if not as_float.is_integer():
            return ParsedRating(None, "invalid")
        number = str(int(as_float))
    value = int(number)
    if not RATING_MIN <= value <= RATING_MAX:
        return ParsedRating(None, "invalid")
    return ParsedRating(value, "ok")
