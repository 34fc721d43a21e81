"""How a setting is declared and checked; the groups that declare them are aac/config.py's.

    # what it means (the comment above the field, or beside it: the reference joins both)
    workers: int = setting(2, "> 0")
    max_calls: Optional[int] = setting(None, "> 0")  # null: no cap (None always passes the range)

- a range is `>= N`, `> N`, `<= N`, `< N`, `[a, b]`, `[a, b)`, `(a, b]`, `one of a, b, c`, or `exists` (a path),
  with an optional note on a sentinel: counts `> 0` (or `>= 0 (0: never)` where 0 is a sentinel), timeouts
  `> 0`, fractions `[0, 1]`. `check_settings` checks each: `KEY=VALUE must be RANGE`, one line;
- a set of allowed values is a `Choice` (`choice("Name", "a", "b")`): OmegaConf checks a field typed with it;
- a check across keys is a function decorated `@rule("group.key", "other.key", ...)`, written right after the
  class of its first key, whose docstring states the rule; it raises one-line `ConfigError`s;
- `python -m aac.config_reference write=true` regenerates docs/config.md from all of this;
  tests/test_config_reference.py fails when a key has no meaning or a numeric one no range, or the file is stale.

Standard library only (omegaconf where a composed config is read): the config's schema loads without it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import Field, dataclass, field, fields, is_dataclass
from enum import Enum
from pathlib import Path
from typing import Any, Optional

from aac.errors import UserError

_NUMBER = r"-?\d+(?:\.\d+)?(?:e-?\d+)?"


class Choice(str, Enum):
    """A value from a fixed set. Typed fields of this kind are checked by OmegaConf itself (its error
    names the key); a member compares, hashes, prints and serialises as its plain string."""

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)


def choice(name: str, *values: str, module: str) -> Any:
    """The `Choice` named `name` of `values`, defined in `module` (where pickling finds it by name)."""
    return Choice(name, [(v, v) for v in values], module=module)


@dataclass(frozen=True)
class SettingRange:
    """The values a setting may take, written as the reference shows it: `> 0`, `>= 0`, `<= 0`, `[0, 1]`,
    `[0, 1)`, `(0, 1]`, `one of 0, 1, 2`, or `exists` (a path), optionally followed by a note on a
    sentinel, `>= 0 (0: never)`. None, for an Optional field, is always allowed: the field's comment says
    what it means."""

    text: str

    def __post_init__(self) -> None:
        if self.text != "exists" and self._parts() is None:
            raise ValueError(f"not a range: {self.text!r}")

    def _parts(self) -> Optional[tuple[str, list[float]]]:
        spec = re.sub(r" \(.+\)$", "", self.text)  # the note is for the reader
        if m := re.fullmatch(rf"(>=|>|<=|<) ({_NUMBER})", spec):
            return m.group(1), [float(m.group(2))]
        if m := re.fullmatch(rf"([\[(])({_NUMBER}), ({_NUMBER})([\])])", spec):
            return m.group(1) + m.group(4), [float(m.group(2)), float(m.group(3))]
        if m := re.fullmatch(rf"one of ({_NUMBER}(?:, {_NUMBER})*)", spec):
            return "in", [float(v) for v in m.group(1).split(", ")]
        return None

    def allows(self, value: object) -> bool:
        if value is None:
            return True
        if self.text == "exists":
            return Path(str(value)).exists()
        kind, bounds = self._parts()  # type: ignore[misc]
        v = float(value)  # type: ignore[arg-type]
        if kind == "in":
            return v in bounds
        if len(bounds) == 1:
            return {">=": v >= bounds[0], ">": v > bounds[0], "<=": v <= bounds[0], "<": v < bounds[0]}[kind]
        low, high = bounds
        return (v >= low if kind[0] == "[" else v > low) and (v <= high if kind[1] == "]" else v < high)

    def describe(self) -> str:
        if self.text == "exists":
            return "does not exist (it must be a path that exists)"
        return f"must be {'in ' if self.text[0] in '[(' else ''}{self.text}"

    def outside(self) -> object:
        """A value of the range's kind that it refuses (what the tests feed each setting)."""
        if self.text == "exists":
            return "/nonexistent/aac-path"
        kind, bounds = self._parts()  # type: ignore[misc]
        value = bounds[0] - 1 if kind in (">=", ">") else max(bounds) + 1
        return int(value) if all(b == int(b) for b in bounds) else value


def setting(default: object, range: str) -> Any:
    """A config field with its range (a `SettingRange`); typed `Any` so that the field's annotation is its
    type (the default may be an interpolation such as `${env.max_steps}`)."""
    return field(default=default, metadata={"range": SettingRange(range)})


class ConfigError(UserError, ValueError):
    """A bad key or value, reported as one line naming the key."""

    what = "config error"


@dataclass(frozen=True)
class Rule:
    """A check across keys: `check(cfg)` raises a one-line `ConfigError`; `keys` are those it reads
    (the reference lists the rule under each), `text` what it asks (its function's docstring)."""

    keys: tuple[str, ...]
    text: str
    check: Callable[..., None]


RULES: list[Rule] = []


def rule(*keys: str) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Register a cross-key check, written right after the class of the first key it reads."""

    def register(check: Callable[..., None]) -> Callable[..., None]:
        RULES.append(Rule(keys, " ".join((check.__doc__ or "").split()), check))
        return check

    return register


def setting_fields(schema: type, prefix: str = "") -> Iterator[tuple[str, Field]]:
    """Every setting of the dataclass `schema` as (dotted key, its dataclass field), groups walked in order."""
    for f in fields(schema):
        if isinstance(f.default_factory, type) and is_dataclass(f.default_factory):
            yield from setting_fields(f.default_factory, f"{prefix}{f.name}.")
        else:
            yield prefix + f.name, f


def check_settings(cfg: object, schema: type) -> None:
    """Every setting's range in `cfg` (a config composed from `schema`), then every cross-key rule; the first
    broken one as a one-line `ConfigError`."""
    from omegaconf import OmegaConf

    for key, f in setting_fields(schema):
        bounds = f.metadata.get("range")
        if bounds is not None and not bounds.allows(value := OmegaConf.select(cfg, key)):
            raise ConfigError(f"{key}={value!r} {bounds.describe()}")
    for r in RULES:
        r.check(cfg)


def named_error(e: Optional[BaseException]) -> Optional[ConfigError]:
    """An OmegaConf validation error anywhere in `e`'s chain, as one line naming the key (or None)."""
    from omegaconf.errors import ValidationError

    while e is not None:
        if isinstance(e, ValidationError) and e.full_key:
            return ConfigError(f"{e.full_key}: {str(e.msg).splitlines()[0]}")
        e = e.__cause__ or e.__context__
    return None
