"""The answer format of each protocol phase as a grammar, for constrained decoding (`env.constrained_format`).

A policy that cannot write the protocol's formats cannot act at all: the `tiny` recipe's random
model never writes a parsable input or decision. Under `env.constrained_format=true` the engine
decodes each turn inside its phase's grammar (aac/engines/constrained.py), so every reply parses
(tests/test_grammar.py checks every admitted string against `aac.env.prompts`' parsers) and what the
policy still chooses is what RL is about: which literals to call with, and YES or NO.

- reasoning: 1-`PLAN_WORDS` words of `WORDS` (any non-empty plan parses);
- input: `Input: (lit, ...)` with one literal of `LITERALS` (or `env.input_literals`) per parameter
  of the header (`(lit,)` for one);
- reflect: `Decision: YES|NO`, a newline, `Summary: ` and 1-`SUMMARY_WORDS` words of `WORDS`.

The grammars are small finite languages on purpose: short replies (a few tokens each) and a
literal alphabet a function's validator can accept (ints, strings, lists). `turn_grammar(phase,
arity, prefix)` is the grammar of what is left after `prefix`, a text already given in the
assistant turn (an answer cue), which must end on a slot boundary or inside a fixed text.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Optional

from aac.env.protocol import Phase

if TYPE_CHECKING:
    from aac.engines.constrained import Grammar

LITERALS = ("0", "1", "2", "3", "5", "7", "-1", "10", "'a'", "'ab'", "[]", "[1, 2]")
WORDS = ("returns", "the", "input", "sum", "count", "sign", "of", "a", "list", "number", "string", "even",
         "odd", "value", "when", "is", "zero", "big")
PLAN_WORDS = 2
SUMMARY_WORDS = 2


def _words(n: int) -> tuple[tuple[str, ...], ...]:
    """One to `n` words, space-separated."""
    return (WORDS,) + ((("",) + tuple(" " + w for w in WORDS)),) * (n - 1)


def _full(phase: Phase, arity: int, literals: Sequence[str]) -> Grammar:
    if phase is Phase.REASONING:
        return _words(PLAN_WORDS)
    if phase is Phase.INPUT:
        if arity < 1:
            raise ValueError(f"an input grammar needs at least one parameter, got arity {arity}")
        lits = tuple(literals)
        args = (lits,) + ((", ",), lits) * (arity - 1)
        return (("Input: (",), *args, (",)",) if arity == 1 else (")",))
    if phase is Phase.REFLECT:
        return (("Decision: ",), ("YES", "NO"), ("\nSummary: ",), *_words(SUMMARY_WORDS))
    raise ValueError(f"no grammar for phase {phase!r}")


def turn_grammar(phase: Phase, arity: int, prefix: str = "", literals: Optional[Sequence[str]] = None) -> Grammar:
    """The grammar of a `phase` reply for a function of `arity` parameters, after `prefix`; input
    literals from `literals` (default `LITERALS`)."""
    slots = list(_full(phase, arity, LITERALS if literals is None else literals))
    rest = prefix
    while rest:
        if not slots or len(slots[0]) != 1:
            raise ValueError(f"prefix {prefix!r} does not end inside the fixed text of the {phase.value} format")
        fixed = slots[0][0]
        if fixed.startswith(rest):
            slots[0] = (fixed[len(rest):],)
            rest = ""
        elif rest.startswith(fixed):
            slots.pop(0)
            rest = rest[len(fixed):]
        else:
            raise ValueError(f"prefix {prefix!r} is not the start of the {phase.value} format")
    slots = [s for s in slots if s != ("",)]
    if not slots:
        raise ValueError(f"prefix {prefix!r} leaves nothing of the {phase.value} format to write")
    return tuple(slots)


def header_arity(header: str) -> int:
    """The number of parameters of a `def test_func(arg0, ...):` header."""
    inside = header[header.index("(") + 1: header.rindex(")")]
    return len([p for p in inside.split(",") if p.strip()])
