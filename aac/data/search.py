"""Structured input generation for the data builder, with hypothesis (nothing here runs the code).

Mutation stays near the seeds; what it rarely finds are inputs of the same *shape* but other
sizes, orders and contents: sorted or repeated lists, lists of matching lengths, strings drawn
from the characters the code tests, nested containers. `InputSearch` turns each seed value into
a hypothesis strategy of its shape (a list of `(str, int)` pairs stays one, with any length) and
draws argument tuples from them, seeded per function; the builder runs them in the sandbox and
keeps those that raise branch coverage or show a new output. `probe_calls` draws argument tuples
of common types for a function whose source gives no input at all (the builder keeps the type
signature that runs).
"""

from __future__ import annotations

import contextlib
import string
import warnings
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st
from hypothesis.errors import HypothesisException
from hypothesis.internal.conjecture import providers as _providers

from aac.data.inputs import parts_of, render

_ALPHABET = string.ascii_letters + string.digits + " .,!?-_"


@dataclass(frozen=True)
class SearchConfig:
    max_size: int = 12  # longest generated container / string
    int_range: int = 100  # ints within [-range, range] (and near the seeds' and the code's constants)


class InputSearch:
    """Strategies shaped like the seeds; `draw(n)` gives up to n new rendered argument tuples."""

    def __init__(self, seeds: list[tuple], constants: Iterable = (), cfg: SearchConfig = SearchConfig()):
        self.cfg = cfg
        self.ints = sorted({c + d for c in constants if type(c) is int for d in (-1, 0, 1)})
        self.strings = [c for c in constants if type(c) is str]
        chars = {ch for c in self.strings for ch in c}
        chars |= {ch for args in seeds for v in args for ch in _chars(v)}
        self.alphabet = "".join(sorted(chars | set(_ALPHABET)))
        shapes = [st.tuples(*(self.shaped(v) for v in args)) for args in seeds[:8]]
        self.strategy = st.one_of(shapes).flatmap(self._related) if shapes else None

    # ------------------------------------------------------------ strategies
    def shaped(self, v, depth: int = 0) -> st.SearchStrategy:
        """Values of the same shape as `v`: its type, and for containers the shapes of its items."""
        cfg = self.cfg
        if isinstance(v, bool):
            return st.booleans()
        if isinstance(v, int):
            near = st.integers(min(v, 0) - 3, max(v, 0) + 3)
            parts = [st.integers(-cfg.int_range, cfg.int_range), near]
            if self.ints:
                parts.append(st.sampled_from(self.ints))
            return st.one_of(parts)
        if isinstance(v, float):
            return st.floats(-cfg.int_range, cfg.int_range, allow_nan=False).map(lambda x: round(x, 2))
        if isinstance(v, str):
            return self._text()
        if v is None:
            return st.none()
        if depth >= 3:
            return st.just(v)
        if isinstance(v, tuple):
            return st.tuples(*(self.shaped(x, depth + 1) for x in v))
        if isinstance(v, (list, set)):
            items = list(v)[:4]
            item = st.one_of([self.shaped(x, depth + 1) for x in items]) if items else self._scalar()
            lists = st.lists(item, max_size=cfg.max_size)
            if isinstance(v, set):
                return lists.map(set)
            return st.one_of(lists, lists.map(_sorted), lists.map(lambda xs: xs + xs[: len(xs) // 2]))
        if isinstance(v, dict):
            keys = list(v)[:3]
            key = st.one_of([self.shaped(k, depth + 1) for k in keys]) if keys else st.text(max_size=4)
            values = list(v.values())[:3]
            value = st.one_of([self.shaped(x, depth + 1) for x in values]) if values else self._scalar()
            return st.dictionaries(key, value, max_size=cfg.max_size // 2)
        return st.just(v)

    def _text(self) -> st.SearchStrategy:
        chars = st.text(self.alphabet, max_size=self.cfg.max_size)
        words = st.lists(st.text(string.ascii_letters, min_size=1, max_size=6), max_size=5).map(" ".join)
        parts = [chars, words, st.text(string.digits, min_size=1, max_size=6)]
        if self.strings:
            # strings built around the code's own literals reach its `==`/`in`/`startswith` branches
            parts.append(st.lists(st.sampled_from(self.strings) | chars, max_size=4).map("".join))
        return st.one_of(parts)

    def _scalar(self) -> st.SearchStrategy:
        return st.one_of(st.integers(-self.cfg.int_range, self.cfg.int_range), self._text())

    @staticmethod
    def _related(args: tuple) -> st.SearchStrategy:
        """Relations between arguments that independent draws rarely hit: lists cut to the same
        length, and an argument replaced by a part of another (an item, a key, a character)."""
        lists = [i for i, v in enumerate(args) if isinstance(v, list)]
        options = [st.just(args)]
        if len(lists) > 1:
            n = min(len(args[i]) for i in lists)
            options.append(st.just(tuple(v[:n] if i in lists else v for i, v in enumerate(args))))
        for i, v in enumerate(args):
            for j, other in enumerate(args):
                parts = [p for p in parts_of(other) if type(p) is type(v)] if i != j else []
                if parts:
                    options.append(st.sampled_from(parts).map(
                        lambda p, i=i: args[:i] + (p,) + args[i + 1:]))
        return st.one_of(options)

    # ------------------------------------------------------------ drawing
    def draw(self, n: int, seed: int, seen: set[str]) -> list[tuple[str, tuple]]:
        """Up to n rendered argument tuples not in `seen` (which is updated), deterministic in seed."""
        if self.strategy is None or n <= 0:
            return []
        return _draw(self.strategy, n, seed, seen)


def probe_calls(arity: int, n: int, seed: int) -> list[tuple[str, tuple]]:
    """Argument tuples of common types (ints, strings, lists of ints or strings, floats), all
    arguments of one tuple often of one type, for a function whose source gives no input."""
    text = st.one_of(st.text(_ALPHABET, max_size=10), st.sampled_from(["hello world", "abc", "a1b2", ""]))
    scalars = [st.integers(-10, 100), text, st.lists(st.integers(-10, 50), max_size=8),
               st.lists(text, max_size=5), st.floats(-10, 10, allow_nan=False).map(lambda x: round(x, 2))]
    same = st.one_of([st.tuples(*([s] * arity)) for s in scalars])
    mixed = st.tuples(*([st.one_of(scalars)] * arity))
    return _draw(st.one_of(same, mixed), n, seed, set())


@contextlib.contextmanager
def _no_local_constants() -> Iterator[None]:
    """Hypothesis mixes the literals of every loaded module outside site-packages (aac's own, when
    installed editable) into its draws, so an edit anywhere in aac, or one more module imported,
    would change what the builder draws. Its draws must follow the seed alone: no local constants
    (hypothesis has no setting for this; its provider reads the module function at each draw)."""
    saved, empty = _providers._get_local_constants, _providers.Constants()
    _providers._get_local_constants = lambda: empty
    _providers.CONSTANTS_CACHE.cache.clear()  # its entries hold the local constants seen so far
    try:
        yield
    finally:
        _providers._get_local_constants = saved
        _providers.CONSTANTS_CACHE.cache.clear()


def _draw(strategy: st.SearchStrategy, n: int, seed: int, seen: set[str]) -> list[tuple[str, tuple]]:
    out: list[tuple[str, tuple]] = []

    @settings(max_examples=3 * n, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck), derandomize=False)
    @hypothesis_seed(seed)
    @given(strategy)
    def collect(args):
        if len(out) < n:
            text = render(args)
            if text is not None and text not in seen:
                seen.add(text)
                out.append((text, args))

    with warnings.catch_warnings(), _no_local_constants():
        warnings.simplefilter("ignore")
        try:
            collect()
        except HypothesisException:  # an unsatisfiable strategy: what was drawn so far is kept
            pass
    return out


def _chars(v) -> set[str]:
    if isinstance(v, str):
        return set(v)
    if isinstance(v, (list, tuple, set)):
        return {ch for x in v for ch in _chars(x)}
    if isinstance(v, dict):
        return {ch for k, x in v.items() for ch in _chars(k) | _chars(x)}
    return set()


def _sorted(xs: list) -> list:
    try:
        return sorted(xs)
    except TypeError:
        return xs
