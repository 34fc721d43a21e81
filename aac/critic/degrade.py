"""A near-miss of a gold description, for the critic's report card: a condition negated (an antonym
swapped, or a `not` inserted), else a sentence dropped. A critic that cannot rank the gold above
its near-miss cannot grade a hypothesis that is almost right."""

from __future__ import annotations

import re
from typing import Optional

# each word and its opposite, both ways; the first one found in the description is swapped
_ANTONYMS = [("less", "greater"), ("smaller", "larger"), ("smallest", "largest"), ("shortest", "longest"),
             ("minimum", "maximum"), ("even", "odd"), ("true", "false"), ("first", "last"),
             ("ascending", "descending"), ("increasing", "decreasing"), ("positive", "negative"),
             ("before", "after"), ("above", "below"), ("uppercase", "lowercase"), ("prefix", "suffix"),
             ("more", "fewer"), ("sum", "product"), ("all", "any")]
_OPPOSITE = {a: b for pair in _ANTONYMS for a, b in (pair, pair[::-1])}
_WORD = re.compile(r"\b(" + "|".join(sorted(_OPPOSITE, key=len, reverse=True)) + r")\b", re.I)
_NOT = re.compile(r"\b(is|are|does|do|can|should|will)\b", re.I)
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")


def degrade(description: str) -> Optional[tuple[str, str]]:
    """(the degraded description, how) or None when nothing applies."""
    match = _WORD.search(description)
    if match:
        word = match.group(1)
        other = _OPPOSITE[word.lower()]
        other = other.capitalize() if word[0].isupper() else other
        return description[:match.start()] + other + description[match.end():], f"negated: {word} -> {other}"
    match = _NOT.search(description)
    if match:
        return description[:match.end()] + " not" + description[match.end():], f"negated: {match.group(1)} not"
    sentences = _SENTENCE.split(description.strip())
    if len(sentences) >= 2:  # the longest one after the first: most of what it adds is lost
        k = max(range(1, len(sentences)), key=lambda i: len(sentences[i]))
        return " ".join(s for i, s in enumerate(sentences) if i != k), f"dropped sentence {k + 1}"
    return None
