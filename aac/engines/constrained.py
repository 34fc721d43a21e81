"""Constrained decoding of a finite slot grammar: the reply must spell one string of the grammar.

A grammar here is plain, hashable data, so it rides in `Sampling` and knows nothing of prompts:
a tuple of slots, each a tuple of alternative strings; the language is every concatenation of one
alternative per slot (an alternative "" makes a slot optional). `aac.env.grammar` builds the
protocol's grammars in this form.

`SlotMatcher` runs the grammar as a DFA over characters (subset construction on the fly, memoised),
and knows for each DFA state which vocabulary tokens keep the text inside the language and whether
EOS may end it there. Which tokens can appear at all is worked out once per grammar (a token whose
characters are not all in the grammar's alphabet never can), so a step checks only those; each
state's allowed set is computed once and then looked up. `GrammarLogitsProcessor` applies it in HF
`generate`, one grammar per batch row (None: unconstrained). The engine's returned log-probs stay
those of the raw logits (docs: aac/engines/base.py), so the learner's policy is the same distribution.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:
    import torch
    from transformers import PreTrainedTokenizerBase

Grammar = tuple[tuple[str, ...], ...]
_State = frozenset  # of (slot index, text consumed in that slot); slot index == len(slots): the end


def check_grammar(grammar: Grammar) -> None:
    if not grammar or any(not slot for slot in grammar):
        raise ValueError("a grammar needs at least one slot, and every slot at least one alternative")
    if all(alt == "" for slot in grammar for alt in slot):
        raise ValueError("a grammar must admit a non-empty string")


def grammar_regex(grammar: Grammar) -> str:
    """The same language as a regular expression (for engines with regex structured outputs)."""
    return "".join("(?:" + "|".join(re.escape(a) for a in slot) + ")" for slot in grammar)


class SlotMatcher:
    """The DFA of one grammar over one tokenizer's vocabulary (`token_texts[i]`: token i's text)."""

    def __init__(self, grammar: Grammar, token_texts: list[str], eos_ids: list[int]):
        check_grammar(grammar)
        self.grammar = grammar
        self.eos_ids = list(eos_ids)
        alphabet = {c for slot in grammar for alt in slot for c in alt}
        self._candidates = [(i, t) for i, t in enumerate(token_texts)
                            if t and i not in self.eos_ids and set(t) <= alphabet]
        self._alternatives = [set(slot) for slot in grammar]
        self._prefixes = [{a[:k] for a in slot for k in range(len(a) + 1)} for slot in grammar]
        self._allowed: dict[_State, list[int]] = {}
        self._next: dict[tuple[_State, int], Optional[_State]] = {}
        self._char: dict[tuple[_State, str], Optional[_State]] = {}
        self._texts = dict(self._candidates)
        self.start = self._closure({(0, "")})

    def _closure(self, states: set) -> _State:
        """Add, for every state that completed its slot's alternative, the start of the next slot."""
        todo, seen = list(states), set(states)
        while todo:
            i, done = todo.pop()
            if i < len(self.grammar) and done in self._alternatives[i] and (i + 1, "") not in seen:
                seen.add((i + 1, ""))
                todo.append((i + 1, ""))
        return frozenset(seen)

    def step_text(self, state: _State, text: str) -> Optional[_State]:
        """The state after reading `text`, or None when it leaves the language."""
        for c in text:
            key = (state, c)
            if key not in self._char:
                moved = {(i, done + c) for i, done in state if i < len(self.grammar) and done + c in self._prefixes[i]}
                self._char[key] = self._closure(moved) if moved else None
            state = self._char[key]
            if state is None:
                return None
        return state

    def accepts(self, state: _State) -> bool:
        return (len(self.grammar), "") in state

    def allowed(self, state: _State) -> list[int]:
        """Token ids that may come next in `state` (EOS where the text may end)."""
        if state not in self._allowed:
            ids = [i for i, t in self._candidates if self.step_text(state, t) is not None]
            self._allowed[state] = ids + (self.eos_ids if self.accepts(state) else [])
        return self._allowed[state]

    def advance(self, state: _State, token: int) -> Optional[_State]:
        """The state after `token` (None after EOS or a token outside the language: row finished)."""
        key = (state, token)
        if key not in self._next:
            text = self._texts.get(token)
            self._next[key] = None if text is None else self.step_text(state, text)
        return self._next[key]


class MatcherCache:
    """One `SlotMatcher` per grammar for one tokenizer; the token texts are decoded once."""

    def __init__(self, tokenizer: PreTrainedTokenizerBase, eos_ids: list[int]):
        self.token_texts = [tokenizer.decode([i]) for i in range(len(tokenizer))]
        self.token_texts = ["" if "\ufffd" in t else t for t in self.token_texts]  # partial UTF-8: never
        self.eos_ids = eos_ids
        self._made: dict[Grammar, SlotMatcher] = {}

    def get(self, grammar: Grammar) -> SlotMatcher:
        if grammar not in self._made:
            self._made[grammar] = SlotMatcher(grammar, self.token_texts, self.eos_ids)
        return self._made[grammar]


class GrammarLogitsProcessor:
    """HF `generate` logits processor: row r's next token is one its grammar allows (None: any).

    It tracks each row's DFA state from the tokens generated since the prompt (`prompt_width`)."""

    def __init__(self, matchers: list[Optional[SlotMatcher]], prompt_width: int):
        self.matchers = matchers
        self.width = prompt_width
        self.states: list[Optional[_State]] = [m.start if m else None for m in matchers]
        self._seen = prompt_width

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        import torch

        if input_ids.shape[1] > self._seen:  # one token more per row since the last call
            last = input_ids[:, -1].tolist()
            for r, m in enumerate(self.matchers):
                if m is not None and self.states[r] is not None:
                    self.states[r] = m.advance(self.states[r], last[r])
            self._seen = input_ids.shape[1]
        mask = torch.zeros_like(scores, dtype=torch.bool)
        for r, m in enumerate(self.matchers):
            if m is None or self.states[r] is None:  # unconstrained, or finished (HF pads it)
                mask[r] = True
            else:
                mask[r, m.allowed(self.states[r])] = True
        return scores.masked_fill(~mask, float("-inf"))
