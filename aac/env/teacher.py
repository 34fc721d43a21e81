"""Teachers: the protocol played by a model that is shown the privileged information, for SFT traces.

`eval.teacher=answer_aware` is the CodeARC-SFT teacher (docs/method.md §6): every prompt of the
protocol (interactive turns and the in-context prompt) gets the gold description and the function's
source added, with the reply format unchanged, so its replies parse and replay like any actor's.
The student never sees this text: `aac.traces` rebuilds each turn's prompt through the ordinary
protocol, so SFT pairs the student's view with the teacher's reply. The ordinary actor
(`eval.teacher=none`) gets the protocol's prompts untouched: DISTILL is its traces from any model.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from aac.config import Teacher
from aac.env.domains import get_domain

if TYPE_CHECKING:
    from aac.env.instance import Instance

# what a teacher does to one prompt: (the episode's instance, the protocol's chat) -> the chat sent
PromptTransform = Callable[["Instance", list[dict]], list[dict]]

NO_DESCRIPTION = "(no reference description is available: rely on the source)"

_TEACHER_SYSTEM = (
    "You are also a teacher writing a worked demonstration for a student who will see only what the "
    "protocol shows: the header and the calls. You are given the function's source and a reference "
    "description. Use them to pick calls that reveal what the function does to someone who cannot read "
    "the code, and to write hypotheses that are correct, but reason only from evidence the student "
    "could see: never quote the source or the reference description, and never say you were given them."
)


def plain(instance: Instance, messages: list[dict]) -> list[dict]:
    """The ordinary actor: the protocol's chat as it is."""
    return messages


def privileged_block(instance: Instance) -> str:
    """The privileged information as the teacher reads it."""
    seen = get_domain(instance.domain).privileged(instance)
    description = seen.description.strip() or NO_DESCRIPTION
    return ("Privileged information (hidden from the student):\n"
            f"Reference description: {description}\n"
            f"{seen.source_label}:\n```python\n{seen.source.strip()}\n```")


def answer_aware(instance: Instance, messages: list[dict]) -> list[dict]:
    """The protocol's chat with the teacher's role added to the system message and the privileged
    information put before the user message (the turn's task stays last)."""
    out = []
    for m in messages:
        if m["role"] == "system":
            m = {**m, "content": f"{m['content']}\n\n{_TEACHER_SYSTEM}"}
        elif m["role"] == "user":
            m = {**m, "content": f"{privileged_block(instance)}\n\n{m['content']}"}
        out.append(m)
    return out


TEACHERS: dict[Teacher, PromptTransform] = {Teacher.none: plain, Teacher.answer_aware: answer_aware}


def teacher_prompts(kind: str) -> PromptTransform:
    """The prompt transform of `eval.teacher`."""
    try:
        return TEACHERS[Teacher(str(kind))]
    except ValueError:
        raise ValueError(f"eval.teacher={kind!r}: expected one of {', '.join(map(str, TEACHERS))}") from None
