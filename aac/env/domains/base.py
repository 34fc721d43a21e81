"""What a kind of black box is to the protocol: the domain interface.

A domain says what an instance is (on top of the PAU columns every domain stores), how one episode's
black box starts and takes one query, the query's grammar and how a reply is read into a query
(`ast.literal_eval`-safe: never `eval`), how observations and tasks read in prompts, what privileged
information the critic sees, and how code match runs. The protocol (aac/env/protocol.py), the critic,
the eval harness and the data builder ask the configured domain (`env.domain`), never a module of one.

Domains: `pau` (stateless functions, the paper's; aac/env/domains/pau.py), `stateful` (an object's
methods), `library` (a real library's function under an unseen name), `web` (an HTTP service).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from aac.env.instance import Instance
    from aac.env.observation import Observation
    from aac.env.prompts import Wording
    from aac.sandbox.result import CallResult

# (source, input literal, timeout_s) -> CallResult: one stateless call in the sandbox
Caller = Callable[[str, str, float], "CallResult"]


class BlackBox:
    """One episode's black box. The default is stateless: each query is one sandbox call of the
    instance's source. A stateful domain keeps the episode's state here, and `close` ends it."""

    def __init__(self, instance: Instance, caller: Caller):
        self.instance = instance
        self.caller = caller

    def call(self, query: str, timeout_s: float) -> CallResult:
        return self.caller(self.instance.code, query, timeout_s)

    def close(self) -> None:
        """Nothing to tear down for a stateless black box."""


@dataclass(frozen=True)
class Privileged:
    """What the privileged critic (and an answer-aware teacher) sees that the actor does not."""

    description: str  # the gold description (library: the real documentation)
    source: str  # the code behind the black box
    source_label: str = "Source of test_func"  # how the source is introduced in a prompt


class Domain:
    """The interface, with the stateless-function behaviour where a domain has nothing to add."""

    name: str = ""
    subject: str = "function"  # what the critic is told the agent is working out
    preload: tuple[str, ...] = ()  # modules the sandbox's zygote imports besides its defaults
    black_box: type[BlackBox] = BlackBox
    wordings: dict[str, Wording] = {}  # prompt style (paper | compact) -> the domain's words in it

    def check_instance(self, instance: Instance) -> None:
        """Raise ValueError (one line: what is wrong) for an instance this domain cannot play."""
        raise NotImplementedError

    def context(self, instance: Instance, max_chars: int = 2000) -> list[Observation]:
        """The context examples, as observations shown from the first turn on (`max_chars`: how
        much of each output is kept; prompts clip again)."""
        raise NotImplementedError

    def wording(self, style: str) -> Wording:
        """The words of the prompts in `style` (paper | compact)."""
        return self.wordings[style]

    def in_context_prompt(self, instance: Instance, max_chars: int = 200) -> list[dict]:
        """PAU's in-context mode: the header and the context examples, one description asked for."""
        from aac.env.prompts import in_context_prompt

        return in_context_prompt(instance, max_chars, wording=self.wording("paper"),
                                 context=self.context(instance, max_chars))

    def extract_query(self, reply: str) -> str | None:
        """The query in an input-turn reply (canonical text), or None when there is none."""
        raise NotImplementedError

    def check_query(self, query: str, *, spread_list: bool, max_chars: int, max_depth: int) -> None:
        """Raise `aac.sandbox.values.InputParseError` for a query that cannot be run."""
        raise NotImplementedError

    def open(self, instance: Instance, caller: Caller) -> BlackBox:
        """A fresh black box for one episode."""
        return self.black_box(instance, caller)

    def privileged(self, instance: Instance) -> Privileged:
        return Privileged(instance.description, instance.code)

    # ---------------------------------------------------------------- code match
    def coder_prompt(self) -> str:
        """The coder's task, a template with {header}, {description} and {examples}."""
        raise NotImplementedError

    def match_program(self, code: str) -> str:
        """The source the sandbox runs to compare a coder's `code` with the gold on `match_cases`."""
        return code

    def match_cases(self, instance: Instance) -> list[tuple[str, Any]]:
        """Held-out (input literal, expected output) pairs for `match_program`."""
        return list(instance.test_examples)
