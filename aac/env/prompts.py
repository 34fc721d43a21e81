"""Every prompt the actor sees, and the parsing of its replies (one place for training and evaluation).

Prompts are compact on purpose: small models with 2048-token contexts run them, so every piece of
model- or data-controlled text shown (plan, hypothesis, inputs, outputs, errors) is clipped.

Reply formats and parsing rules:
- any reply: `<think>…</think>` blocks are removed first; an unclosed `<think>` drops the rest of
  the reply; a lone `</think>` (template opened the block) drops everything before it.
- input turn: `Input: (a, b)`. Tolerated, in this order: the first `Input:` line, the first fenced
  block, the whole reply, the first parenthesised group that is a literal. A call written as
  `test_func(a, b)` is turned into the tuple of its arguments (so `test_func([1, 2])` stays one list).
  An `Input:` line whose brackets are left open is closed when the reply goes on after it (the model
  ended the line itself) and closing it gives a literal; at the reply's end it may have been cut
  mid-value, so it stays unparsable.
- reflect turn: a `Decision: YES|NO` line (a bare `YES`/`NO` line counts) and a `Summary:` line
  (its text runs on until a decision line or the end). Both are needed.
- in-context mode: `Description: …` (else `Summary: …`, else the whole reply).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from aac.env.observation import Observation
from aac.sandbox.values import InputParseError, parse_input, safe_repr

if TYPE_CHECKING:
    from aac.env.instance import Instance

INITIAL_HYPOTHESIS = "not yet formed"

SYSTEM_PROMPT = (
    "You are studying a hidden Python function called test_func. You cannot read its code. You learn "
    "what it does by choosing inputs, calling it, and reading the outputs and errors it gives back. "
    "Always use the reply format you are asked for."
)

_REASONING_TASK = (
    "Task: plan your next call. In at most 80 words, say which input you will try, what it checks "
    "about your hypothesis, and what output your hypothesis predicts. Do not write the final answer yet."
)
_INPUT_TASK = (
    "Task: give the input of your next call as one line:\n"
    "Input: (value_for_arg0, value_for_arg1, ...)\n"
    "Write a Python literal tuple with one value per parameter of the header; "
    "a single parameter needs a trailing comma, e.g. Input: ([3, 1, 2],)"
)
_REFLECT_TASK = (
    "Task: can you now describe test_func with high confidence? Reply with exactly two lines:\n"
    "Decision: YES or NO\n"
    "Summary: <what test_func does, in 1-3 sentences>"
)
_IN_CONTEXT_TASK = (
    "Task: describe what test_func does, in 1-3 sentences. Reply with one line:\n"
    "Description: <your description>"
)


@dataclass(frozen=True)
class Wording:
    """A domain's words in one prompt style: the system prompt, each turn's task, the answer cues
    (what opens a reply when `env.answer_cues` is on: the format's own first words) and, for the
    compact style, the worked example shown as chat turns. Defaults: the PAU function domain, paper style."""

    system: str = SYSTEM_PROMPT
    reasoning_task: str = _REASONING_TASK
    input_task: str = _INPUT_TASK
    reflect_task: str = _REFLECT_TASK
    in_context_task: str = _IN_CONTEXT_TASK
    cues: tuple[tuple[str, str], ...] = (("input", "Input: ("), ("reflect", "Decision:"))
    example: tuple[str, ...] = ()  # compact: context, plan, input, latest-call line, reflect answer

    def cue(self, phase: str) -> str:
        return dict(self.cues).get(phase, "")


PAPER = Wording()


def clip(text: str, max_chars: int) -> str:
    """`text` cut to `max_chars` characters (an ellipsis marks the cut)."""
    return text if len(text) <= max_chars else text[: max(max_chars - 1, 0)] + "…"


def example_repr(value: object, max_chars: int) -> str:
    """How a stored example output is shown: stored outputs are JSON values, shown as Python reprs."""
    return safe_repr(value, max_chars)


def format_call(input_str: str, output_repr: str, error: str | None, max_chars: int) -> str:
    """One observed call as the model sees it: `input -> output` or `input -> raised Error: …`."""
    result = f"raised {error}" if error is not None else output_repr
    return f"{clip(input_str.strip(), max_chars)} -> {clip(result, max_chars)}"


def calls_block(observations: Sequence[Observation], total: int, max_chars: int, budget: int, title: str) -> str:
    lines = [format_call(o.input, o.output_repr, o.error, max_chars) for o in observations]
    while len(lines) > 1 and sum(len(line) + 1 for line in lines) > budget:
        lines.pop(0)  # over the character budget: the oldest calls of the window go first
    if not lines:
        return f"{title}: none shown"
    shown = f"the last {len(lines)} of {total}" if total > len(lines) else f"all {total}"
    return f"{title} ({shown}; input -> result):\n" + "\n".join(lines)


@dataclass(frozen=True)
class TurnView:
    """What one turn's prompt shows; built by the protocol from its state."""

    header: str
    window: Sequence[Observation]  # the observation window (for reflect: without the latest call)
    total_observations: int  # how many observations the window is drawn from
    hypothesis: str
    plan: str | None = None  # the reasoning turn's text (input and reflect turns)
    latest: str | None = None  # reflect: the latest call's line, or why there was none
    latest_is_call: bool = False  # reflect: the latest call is shown apart from the window
    max_chars: int = 200  # clip for each input and result shown (plan and hypothesis: twice that)
    max_window_chars: int = 1600  # budget for the window's lines: the oldest are dropped to fit
    wording: Wording = PAPER  # the domain's words in this prompt style


def _messages(user: str, wording: Wording = PAPER) -> list[dict]:
    return [{"role": "system", "content": wording.system}, {"role": "user", "content": user}]


def _context(view: TurnView) -> list[str]:
    title = "Earlier calls" if view.latest_is_call else "Calls so far"
    return [f"Header: {view.header.strip()}",
            calls_block(view.window, view.total_observations, view.max_chars, view.max_window_chars, title),
            f"Current hypothesis: {clip(view.hypothesis, 2 * view.max_chars)}"]


def reasoning_prompt(view: TurnView) -> list[dict]:
    return _messages("\n\n".join([*_context(view), view.wording.reasoning_task]), view.wording)


def input_prompt(view: TurnView) -> list[dict]:
    plan = f"Your plan: {clip(view.plan or '', 2 * view.max_chars)}"
    return _messages("\n\n".join([*_context(view), plan, view.wording.input_task]), view.wording)


def reflect_prompt(view: TurnView) -> list[dict]:
    # The latest call is shown on its own line (the release never showed it to this turn).
    parts = _context(view)
    parts.insert(2, f"Latest call: {view.latest}")
    return _messages("\n\n".join([*parts, view.wording.reflect_task]), view.wording)


def shared_reflect_prompt(view: TurnView) -> list[dict]:
    """The reflect turn of the shared_first layout: the reasoning and input turns' prompt (the cycle's
    window and hypothesis, then the plan), the latest call, the task last. The reasoning and input
    prompts are the per_turn ones: their text is already that shared prefix."""
    plan = f"Your plan: {clip(view.plan or '', 2 * view.max_chars)}"
    context = _context(replace(view, latest_is_call=False))  # the window's title as the other turns show it
    return _messages("\n\n".join([*context, plan, f"Latest call: {view.latest}", view.wording.reflect_task]),
                     view.wording)


def context_observations(instance: Instance, max_chars: int) -> list[Observation]:
    """The function domain's context examples as observations (stored outputs shown as reprs)."""
    return [Observation(inp, example_repr(out, max_chars), None) for inp, out in instance.train_examples]


def in_context_prompt(instance: Instance, max_chars: int = 200, *, wording: Wording = PAPER,
                      context: Sequence[Observation] | None = None) -> list[dict]:
    """The in-context mode of PAU: header and the context examples, one description asked for.
    `context`: the examples as observations (default: the function domain's reading of them)."""
    shown = context_observations(instance, max_chars) if context is None else context
    lines = [format_call(o.input, o.output_repr, o.error, max_chars) for o in shown]
    user = "\n\n".join([f"Header: {instance.header.strip()}",
                        "Examples (input -> result):\n" + "\n".join(lines), wording.in_context_task])
    return _messages(user, wording)


# ---------------------------------------------------------------- parsing replies

_THINK_BLOCK = re.compile(r"<think>.*?</think>", re.S | re.I)


def strip_think(text: str) -> str:
    """The reply without reasoning-model thinking: closed blocks, an unclosed tail, an orphan close."""
    text = _THINK_BLOCK.sub("", text)
    low = text.lower()
    if "</think>" in low:  # the chat template opened the block inside the prompt
        text = text[low.rindex("</think>") + len("</think>"):]
        low = text.lower()
    if "<think>" in low:  # cut off while thinking: nothing usable follows
        text = text[: low.index("<think>")]
    return text.strip()


_INPUT_LABEL = re.compile(r"^[ \t*_>#-]*input[ \t*_]*[:=]", re.I | re.M)
_FENCE = re.compile(r"```[^\n`]*\n?(.*?)```", re.S)
_CALL_NAME = re.compile(r"(?:\b[A-Za-z_]\w*\.)?test_func\s*$")
_OPEN, _CLOSE = "([{", ")]}"
_MAX_SCAN_CHARS = 20000  # longer replies are scanned only this far (deterministic, bounded time)
_MAX_GROUPS = 64
_MAX_GROUP_CHARS = 10000  # a longer group could not parse anyway (the input size limit)


def _brackets(text: str, start: int, stop: int) -> Iterator[tuple[int, str]]:
    """(index, char) of each bracket of text[start:stop] outside string literals; a string left open
    at `stop` ends the scan with (index, its quote)."""
    quote, i = "", start
    while i < min(len(text), stop):
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 1
            elif text.startswith(quote, i):
                i += len(quote) - 1
                quote = ""
        elif ch in "'\"":
            quote = ch * 3 if text.startswith(ch * 3, i) else ch
            i += len(quote) - 1
        elif ch in _OPEN or ch in _CLOSE:
            yield i, ch
        i += 1
    if quote:
        yield i, quote


def _balanced_end(text: str, start: int) -> int | None:
    """Index after the bracket group opening at `start` (string literals respected), or None."""
    depth = 0
    for i, ch in _brackets(text, start, start + _MAX_GROUP_CHARS + 1):
        if ch in _OPEN:
            depth += 1
        elif ch in _CLOSE:
            depth -= 1
            if depth == 0:
                return i + 1
    return None


def _parses(candidate: str) -> bool:
    try:
        parse_input(candidate)
    except InputParseError:
        return False
    return True


def _call_args(group: str) -> str | None:
    """`(a, b)` read as the argument list of a call, rewritten as a tuple literal `(a, b,)`."""
    try:
        call = ast.parse("f" + group, mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    if not isinstance(call, ast.Call) or call.keywords or any(isinstance(a, ast.Starred) for a in call.args):
        return None
    return "(" + "".join(ast.unparse(a) + ", " for a in call.args).rstrip() + ")"


def _literal_in(region: str) -> str | None:
    """The first literal input in `region`: the whole region, else the first parsing bracket group."""
    region = region.strip().strip("`*").strip()
    if not region:
        return None
    name = re.match(r"(?:[A-Za-z_]\w*\.)?test_func\s*(\(.*\))\s*[.;]?$", region, re.S)
    if name:
        args = _call_args(name.group(1))
        if args is not None and _parses(args):
            return args
    if _parses(region.rstrip(".;")):
        return region.rstrip(".;")
    text = region[:_MAX_SCAN_CHARS]
    starts = [i for i, ch in enumerate(text) if ch in _OPEN][:_MAX_GROUPS]
    for start in starts:
        end = _balanced_end(text, start)
        if end is None:
            continue
        group = text[start:end]
        if _CALL_NAME.search(text[:start]):
            group = _call_args(group) or group
        if _parses(group):
            return group
    return None


def _labelled_region(text: str, match: re.Match) -> str:
    """The value after an `Input:` label: to the end of the line, or of a bracket group it opens."""
    start = match.end()
    while start < len(text) and text[start] in " \t`*":
        start += 1
    line_end = text.find("\n", start)
    if start < len(text) and text[start] in _OPEN:
        end = _balanced_end(text, start)
        if end is not None:
            return text[start:end]
        if line_end >= 0:  # the model ended the line with brackets open
            return _closed(text[start:line_end].rstrip()) or text[start:line_end]
    return text[start: None if line_end < 0 else line_end]


def _closed(value: str) -> str | None:
    """`value` with its open brackets closed, when that gives a literal (None otherwise, and when a
    string literal is left open: where it ends would be a guess)."""
    stack: list[str] = []
    for _, ch in _brackets(value, 0, len(value)):
        if ch in _OPEN:
            stack.append(_CLOSE[_OPEN.index(ch)])
        elif ch not in _CLOSE or not stack or stack.pop() != ch:  # an open string, or a mismatch
            return None
    if not stack:
        return None
    candidate = value + "".join(reversed(stack))
    return candidate if _parses(candidate) else None


def extract_input(reply: str) -> str | None:
    """The input literal of an input-turn reply (think-stripped), or None when there is none.

    An explicit `Input:` line or fenced block that holds no parsable literal is returned as written,
    so the caller reports its parse error; without either, only a parsable candidate is returned.
    """
    text = strip_think(reply)
    label = _INPUT_LABEL.search(text)
    if label:
        region = _labelled_region(text, label)
        return _literal_in(region) or region.strip().strip("`*").strip() or None
    fence = _FENCE.search(text)
    if fence:
        return _literal_in(fence.group(1)) or fence.group(1).strip() or None
    return _literal_in(text)


@dataclass(frozen=True)
class Reflection:
    decision: bool | None  # True = YES
    summary: str | None
    error: str | None  # why the reply did not parse; None when it did

    @property
    def ok(self) -> bool:
        return self.error is None


_DECISION_LABELLED = re.compile(
    r"^[\s*_>#-]*(?:final\s+)?(?:decision|answer|confident|confidence)[\s*_]*[:=-][\s*_]*(yes|no)\b", re.I)
_DECISION_BARE = re.compile(r"^[\s*_>#-]*(yes|no)[\s*_.!]*$", re.I)
_DECISION_LEAD = re.compile(r"^[\s*_>#-]*(yes|no)\b", re.I)
_SUMMARY_LABEL = re.compile(r"^[\s*_>#-]*(?:revised\s+|updated\s+)?(?:summary|hypothesis)[\s*_]*:", re.I)


def _decision(line: str, lead_ok: bool) -> bool | None:
    m = _DECISION_LABELLED.match(line) or _DECISION_BARE.match(line) or (lead_ok and _DECISION_LEAD.match(line))
    return None if not m else m.group(1).lower() == "yes"


def _collapse(text: str) -> str:
    return " ".join(text.replace("**", "").split()).strip(" \"'`")


def parse_reflection(reply: str) -> Reflection:
    """Decision and summary of a reflect-turn reply (think-stripped)."""
    lines = strip_think(reply).splitlines()
    decision: bool | None = None
    summary_at = next((i for i, line in enumerate(lines) if _SUMMARY_LABEL.match(line)), None)
    summary_lines: list[str] = []
    if summary_at is not None:
        first = _SUMMARY_LABEL.sub("", lines[summary_at], count=1)
        summary_lines.append(first)
        for line in lines[summary_at + 1:]:
            if _decision(line, lead_ok=False) is not None:
                break
            summary_lines.append(line)
    summary_end = summary_at + len(summary_lines) if summary_at is not None else None
    for i, line in enumerate(lines):
        if summary_at is not None and summary_at <= i < summary_end:
            continue
        # "YES, I am sure" counts only before the summary; after it, a decision line must be explicit
        decision = _decision(line, lead_ok=summary_at is None or i < summary_at)
        if decision is not None:
            break
    summary = _collapse(" ".join(summary_lines)) or None
    if decision is None and summary is None:
        error = "no decision line and no Summary: line"
    elif decision is None:
        error = "no decision line (YES or NO)"
    elif summary is None:
        error = "no Summary: line" if summary_at is None else "empty summary"
    else:
        error = None
    return Reflection(decision, summary, error)


_DESCRIPTION_LABEL = re.compile(r"^[\s*_>#-]*(?:description|summary)[\s*_]*:", re.I | re.M)


def parse_description(reply: str) -> str:
    """The description of an in-context reply: after `Description:` (or `Summary:`), else the whole reply."""
    text = strip_think(reply)
    labels: dict[str, re.Match] = {}
    for m in _DESCRIPTION_LABEL.finditer(text):
        labels.setdefault(m.group(0).strip(" \t\n*_>#-:").lower(), m)
    chosen = labels.get("description") or labels.get("summary")
    return _collapse(text[chosen.end():] if chosen else text)

