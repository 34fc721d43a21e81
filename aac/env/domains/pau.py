"""The PAU domain: a stateless Python function `test_func`, queried with a tuple of its arguments."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aac.env import compact_prompts, prompts
from aac.env.domains.base import Domain
from aac.env.instance import check_function_header
from aac.sandbox.values import parse_input

if TYPE_CHECKING:
    from aac.env.instance import Instance
    from aac.env.observation import Observation

CODER_PROMPT = """\
Write the Python function described below.

Header: {header}

Description:
{description}

Observed calls (each input is the tuple of arguments):
{examples}

Reply with one ```python code block holding the complete function with exactly this header, plus any
imports and helper functions it needs. Do not print anything and do not add test code."""


class FunctionDomain(Domain):
    name = "pau"
    wordings = {"paper": prompts.PAPER, "compact": compact_prompts.COMPACT}

    def check_instance(self, instance: Instance) -> None:
        check_function_header(instance.code, instance.header)

    def context(self, instance: Instance, max_chars: int = 2000) -> list[Observation]:
        return prompts.context_observations(instance, max_chars)

    def extract_query(self, reply: str) -> str | None:
        return prompts.extract_input(reply)

    def check_query(self, query: str, *, spread_list: bool, max_chars: int, max_depth: int) -> None:
        parse_input(query, spread_list=spread_list, max_chars=max_chars, max_depth=max_depth)

    def coder_prompt(self) -> str:
        return CODER_PROMPT
