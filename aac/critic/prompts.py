"""The critic's prompts: two judgments (docs/method.md §5), each in two modes.

- `privileged`: the critic sees the function's source and the gold description, which the actor
  never sees; it grades with that knowledge (the asymmetry of AAC).
- `symmetric`: the SYM-INFO ablation; the critic sees only what the actor sees (header, calls,
  hypothesis) and must grade from that alone.

Two scorings (`critic.scoring`): `generate` asks for reasons then `Rating: <0-9>` on the last line, parsed
by `parsing.parse_rating`; `logprob` ends the question with the rating cue `Rating:` and asks for the
digit alone, so the reply's first token is the rating and its next-token distribution is read.
Before the question come two worked examples on a toy function (a poor and a better answer), as
earlier chat turns built by the same code: they fix the reply format, which small models do not
follow from the instruction alone (SmolLM2-135M never wrote a rating without them), and anchor the
scale. `examples=False` drops them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from aac.env.domains import DOMAINS, get_domain

if TYPE_CHECKING:
    from aac.critic.judgment import Judgment

KINDS = ("informativeness", "hypothesis")
MAX_OBSERVATIONS = 12  # most recent calls shown; older ones rarely change a grade
MAX_FIELD_CHARS = 300  # per input / output / error shown
MAX_TEXT_CHARS = 2000  # the graded text (plan or hypothesis) and the source code are cut beyond this

_SYSTEM = {
    "privileged": (
        "You grade an agent that is working out what a hidden Python {subject} does by calling it. "
        "You are given privileged knowledge the agent does not have: the {subject}'s source code and "
        "a reference description. Use it to grade accurately. Be strict and consistent."
    ),
    "symmetric": (
        "You grade an agent that is working out what a hidden Python {subject} does by calling it. "
        "You see exactly what the agent sees: the {subject} header, the calls made so far and their "
        "results, and the agent's notes. Be strict and consistent."
    ),
}

_TASK = {
    ("informativeness", "privileged"): (
        "Grade the plan for the next call: how much would that call reveal about the {subject}'s true "
        "behaviour that the current hypothesis gets wrong or has not yet checked (an untested branch, "
        "edge case or argument type visible in the source)? A call that repeats what is already known "
        "is worth little.\n0 = reveals nothing new, 9 = the most revealing next call possible."
    ),
    ("informativeness", "symmetric"): (
        "Grade the plan for the next call: how well would that call test the current hypothesis "
        "(probe a case it predicts differently from plausible alternatives, an edge case, a new argument "
        "type) rather than repeat what the calls so far already show?\n"
        "0 = tests nothing new, 9 = the most decisive next call possible."
    ),
    ("hypothesis", "privileged"): (
        "Grade the agent's description against the reference description: does it state the same "
        "behaviour (what is computed, for which inputs, edge cases)? Judge meaning, not wording.\n"
        "0 = wrong or empty, 9 = equivalent to the reference."
    ),
    ("hypothesis", "symmetric"): (
        "Grade the agent's description of the {subject}: is it specific, and consistent with every "
        "call result listed above? Judge meaning, not wording.\n"
        "0 = empty or contradicted by the calls, 9 = precise and consistent with all of them."
    ),
}



def system_prompts() -> set[str]:
    """Every system prompt the critic sends (each mode, each domain's subject)."""
    return {text.format(subject=d.subject) for text in _SYSTEM.values() for d in DOMAINS.values()}


_ANSWER = {
    "generate": "Reply with at most two sentences of reasons, then a last line of the form `Rating: <integer 0-9>`.",
    "logprob": "Answer with the rating alone: one digit from 0 to 9.\nRating:",
}


def _cut(text: object, limit: int) -> str:
    text = "" if text is None else str(text)
    return text if len(text) <= limit else text[:limit] + " …[cut]"


def _cut_source(source: str) -> str:
    """A row's source within MAX_TEXT_CHARS, its end kept: the builders write the validator and helpers first and
    `test_func` (or the class, or the service) last, so a head cut would hide the very code being judged."""
    return source if len(source) <= MAX_TEXT_CHARS else "…[cut]\n" + source[-MAX_TEXT_CHARS:]


def format_observations(observations: list) -> str:
    shown = observations[-MAX_OBSERVATIONS:]
    lines = [f"({len(observations) - len(shown)} earlier calls not shown)"] if len(shown) < len(observations) else []
    for obs in shown:
        inp = _cut(obs.input, MAX_FIELD_CHARS)
        if obs.error:
            lines.append(f"- input {inp} -> error: {_cut(obs.error, MAX_FIELD_CHARS)}")
        else:
            lines.append(f"- input {inp} -> output: {_cut(obs.output_repr, MAX_FIELD_CHARS)}")
    return "\n".join(lines) if lines else "(no calls yet)"


def critic_messages(judgment: Judgment, mode: str, examples: bool = True, scoring: str = "generate") -> list[dict]:
    """The chat messages asking the critic for one judgment."""
    _check(judgment.kind, mode, scoring)
    subject = get_domain(judgment.instance.domain).subject
    turns = [{"role": "system", "content": _SYSTEM[mode].format(subject=subject)}]
    if examples:
        for demo, answer in _examples(judgment.kind, mode):
            if scoring == "logprob":  # the worked answer is the digit alone, as asked
                answer = answer.rsplit("Rating:", 1)[1].strip()
            turns += [{"role": "user", "content": _question(demo, mode, scoring)},
                      {"role": "assistant", "content": answer}]
    return turns + [{"role": "user", "content": _question(judgment, mode, scoring)}]


def _check(kind: str, mode: str, scoring: str) -> None:
    if kind not in KINDS:
        raise ValueError(f"unknown judgment kind {kind!r}: expected one of {', '.join(KINDS)}")


def _question(judgment: Judgment, mode: str, scoring: str) -> str:
    inst = judgment.instance
    domain = get_domain(inst.domain)
    parts = []
    if mode == "privileged":
        seen = domain.privileged(inst)
        parts += [f"Source code (hidden from the agent):\n```python\n{_cut_source(seen.source)}\n```",
                  f"Reference description (hidden from the agent):\n{seen.description.strip()}"]
    parts += [f"{domain.subject.capitalize()} header: {inst.header.strip()}",
              f"Calls so far (oldest first):\n{format_observations(judgment.observations)}"]
    if judgment.kind == "informativeness":
        parts += [f"Agent's current hypothesis: {_cut(judgment.hypothesis, MAX_TEXT_CHARS) or '(none yet)'}",
                  f"Agent's plan for its next call:\n{_cut(judgment.text, MAX_TEXT_CHARS) or '(empty)'}"]
    else:
        described = judgment.text or judgment.hypothesis
        parts.append(f"Agent's description of the {domain.subject}:\n{_cut(described, MAX_TEXT_CHARS) or '(empty)'}")
    parts += [_TASK[(judgment.kind, mode)].format(subject=domain.subject), _ANSWER[scoring]]
    return "\n\n".join(parts)


# ---------------------------------------------------------------- worked examples


@dataclass(frozen=True)
class _Obs:
    input: str
    output_repr: str
    error: str | None = None


@dataclass(frozen=True)
class _ToyInstance:
    uid: str = "example"
    code: str = "def test_func(arg0):\n    if arg0 < 0:\n        return 0\n    return arg0 * 2"
    description: str = "Doubles the number; a negative number gives 0."
    header: str = "def test_func(arg0):"
    domain: str = "pau"


_TOY_CALLS = (_Obs("(3,)", "6"), _Obs("(10,)", "20"))
# (kind, mode) -> two (graded text, answer) pairs: a poor one, then a better one
_ANSWERS = {
    ("informativeness", "privileged"): (
        ("Call it with (5,) to confirm that it doubles.",
         "The two calls already show doubling; this call adds nothing.\nRating: 1"),
        ("Call it with (-4,) to see what a negative number gives.",
         "A negative number reaches the branch the hypothesis misses.\nRating: 8")),
    ("informativeness", "symmetric"): (
        ("Call it with (5,) to confirm that it doubles.",
         "The two calls already show doubling; this call adds nothing.\nRating: 1"),
        ("Call it with (-4,) to see what a negative number gives.",
         "Negative numbers are untried, so this call can refute the hypothesis.\nRating: 7")),
    ("hypothesis", "privileged"): (
        ("It adds 3 to the number.", "Wrong: the function doubles its input.\nRating: 1"),
        ("It doubles the number.", "Right for non-negative numbers, but it misses that negatives give 0.\nRating: 6")),
    ("hypothesis", "symmetric"): (
        ("It adds 3 to the number.", "Contradicted by 10 -> 20.\nRating: 1"),
        ("It doubles the number.", "Specific and consistent with both calls.\nRating: 8")),
}


def _examples(kind: str, mode: str) -> list[tuple[Judgment, str]]:
    from aac.critic.judgment import Judgment

    return [(Judgment(kind, _ToyInstance(), "It doubles the number.", list(_TOY_CALLS), text), answer)  # type: ignore[arg-type]
            for text, answer in _ANSWERS[(kind, mode)]]
