"""The stateful domain: the black box is an object of an anonymised class, queried one method call at a time.

An instance keeps the PAU columns: `test_func_validated` is the class source (the class is `Obj`, its
constructor is called as `new(...)`, its methods are `m0..mK`), the header shows the interface with
arities (`class Obj: new(arg0); m0(arg0, arg1); m1()`), and each example is a call sequence, a tuple
literal of `(name, args)` pairs (`(('new', (2,)), ('m0', (1, 'a')))`), with the list of its per-step
results (a value, or `{"raised": "KeyError: 'a'"}`).

A query is one call, `m2(3, 'x')` or `new(...)` (a fresh object), read with `ast` and with each argument
an `ast.literal_eval` literal (never `eval`). The episode's black box keeps the calls made since the
last `new`; each query is one *stateless* sandbox call of a harness (the class source plus a
`test_func(*calls)` that builds the object, replays those calls and makes the new one): state persists
through an episode, every call starts from a pristine class (the worker runs a source in fresh globals
and restores builtins), and nothing outlives the episode, whose history dies with its black box.
Replay assumes a deterministic class (the builder checks it). A call the sandbox cut short (a
timeout) is not kept, so one slow call does not stall every later one.
"""

from __future__ import annotations

import ast
import itertools
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from aac.env import prompts
from aac.env.domains.base import BlackBox, Caller, Domain, Privileged
from aac.env.observation import Observation
from aac.env.prompts import Wording, _balanced_end, strip_think
from aac.sandbox.result import CallKind, CallResult, error_result
from aac.sandbox.values import InputParseError, parse_literal

if TYPE_CHECKING:
    from aac.env.instance import Instance

CLASS = "Obj"
NEW = "new"
NO_OBJECT = "no object yet: call new(...) first"
RAISED = "raised"  # a stored step result {"raised": "Type: message"}

# Replays `calls` ((name, args) pairs) on a fresh object; each step gives (ok, value or exception).
_REPLAY = f'''

def _aac_replay(calls):
    obj, out = None, []
    for name, args in calls:
        try:
            if name == "{NEW}":
                obj = None
                obj = {CLASS}(*args)
                out.append((True, None))
            elif obj is None:
                raise RuntimeError("{NO_OBJECT}")
            else:
                out.append((True, getattr(obj, name)(*args)))
        except BaseException as exc:  # noqa: B036 - a step's error is its result
            out.append((False, exc))
    return out
'''
# the episode's call: the last step's result; its exception propagates (earlier ones were caught)
EPISODE_HARNESS = _REPLAY + '''

def test_func(*calls):
    ok, value = _aac_replay(calls)[-1]
    if not ok:
        raise value
    return value
'''
# the builder's record of a sequence: every step's result, an exception as {"raised": "Type: message"}
RECORD_HARNESS = _REPLAY + f'''

def _aac_error(exc):
    text = str(exc)
    return type(exc).__name__ + (": " + text if text else "")


def test_func(*calls):
    return [value if ok else {{"{RAISED}": _aac_error(value)}} for ok, value in _aac_replay(calls)]
'''
# code match: the last step's result, an exception as its type name (messages differ between codes)
MATCH_HARNESS = _REPLAY + f'''

def test_func(*calls):
    ok, value = _aac_replay(calls)[-1]
    return value if ok else {{"{RAISED}": type(value).__name__}}
'''

CODER_PROMPT = """\
Write the Python class described below.

Interface: {header}
(new(...) is the constructor, __init__; m0, m1, ... are its methods, with the parameters shown.)

Description:
{description}

Observed calls (in order; new(...) starts a fresh object; input -> result):
{examples}

Reply with one ```python code block holding the complete class named Obj, with __init__ for new and
exactly these methods, plus any imports it needs. Do not print anything and do not add test code."""

_SYSTEM = (
    "You are studying a hidden Python class. You cannot read its code. You make an object with new(...) and "
    "call its methods m0, m1, ... one call at a time; the object keeps its state from call to call until you "
    "call new(...) again. You learn what the class does from the results and errors. "
    "Always use the reply format you are asked for."
)
PAPER = Wording(
    system=_SYSTEM,
    reasoning_task=("Task: plan your next call. In at most 80 words, say which call you will make, what it "
                    "checks about your hypothesis, and what result your hypothesis predicts. Do not write the "
                    "final answer yet."),
    input_task=("Task: give your next call as one line:\n"
                "Input: m0(value_for_arg0, ...)\n"
                "Call one method of the header with one Python literal per parameter, e.g. Input: m1(3, 'a'), "
                "or Input: new(...) to start over with a fresh object."),
    reflect_task=("Task: can you now describe the class with high confidence? Reply with exactly two lines:\n"
                  "Decision: YES or NO\n"
                  "Summary: <what the object keeps and what each method does, in 1-4 sentences>"),
    in_context_task=("Task: describe what the class keeps and what each method does, in 1-4 sentences. "
                     "Reply with one line:\nDescription: <your description>"),
    cues=(("input", "Input: "), ("reflect", "Decision:")),
)
# the compact style's worked example: a toy stack
COMPACT = Wording(
    system=("You explore a hidden Python class by calling its methods on one object, which keeps its state. "
            "new(...) makes a fresh object. Answer in the exact format of the example."),
    reasoning_task="Plan your next call in one sentence: the call, and the result your hypothesis predicts.",
    input_task="Write your next call: one method of the header with its values, or new(...).",
    reflect_task="Say what the class does in one sentence, then whether you are sure (Decision: YES or NO).",
    cues=(("input", "Input: "), ("reflect", "Summary:")),
    example=("class Obj: new(); m0(arg0); m1()\nCalls (input -> result):\nnew() -> None\nm0(5) -> None\n"
             "m1() -> 5\nHypothesis: not yet formed",
             "Plan: store two values; if it is a stack, m1() after m0(1) and m0(2) gives 2.",
             "Input: m0(1)",
             "Latest call: m0(1) -> None",
             "Summary: m0(x) stores x and m1() removes and returns the newest stored value.\nDecision: NO"),
)

_HEADER = re.compile(rf"^\s*class\s+{CLASS}\s*:(.*)$", re.S)
_SIGNATURE = re.compile(r"^\s*(\w+)\s*\(([^()]*)\)\s*$")
_METHOD = re.compile(r"^(?:new|m\d+)$")
_INPUT_LABEL = re.compile(r"^[ \t*_>#-]*input[ \t*_]*[:=]", re.I | re.M)
_FENCE = re.compile(r"```[^\n`]*\n?(.*?)```", re.S)
_CALL_START = re.compile(r"(?<![\w.])(?:[A-Za-z_]\w*\.)?(new|m\d+)\s*\(")
_MAX_CALLS_SCANNED = 32


def interface(header: str) -> dict[str, int]:
    """{name: arity} of a header `class Obj: new(arg0); m0(arg0, arg1); m1()`; ValueError when it is not one."""
    m = _HEADER.match(header)
    if m is None:
        raise ValueError(f"header {header[:60]!r} is not 'class {CLASS}: new(...); m0(...); ...'")
    out: dict[str, int] = {}
    for part in m.group(1).split(";"):
        sig = _SIGNATURE.match(part)
        if sig is None or not _METHOD.match(sig.group(1)) or sig.group(1) in out:
            raise ValueError(f"header part {part.strip()[:40]!r} is not a new(...) or m<k>(...) signature")
        params = [p.strip() for p in sig.group(2).split(",") if p.strip()]
        if params != [f"arg{k}" for k in range(len(params))]:
            raise ValueError(f"header part {part.strip()[:40]!r}: parameters must be arg0, arg1, ...")
        out[sig.group(1)] = len(params)
    if NEW not in out:
        raise ValueError("header has no new(...)")
    return out


def render_header(arities: dict[str, int]) -> str:
    """The header of an interface {name: arity} (new first)."""
    parts = [f"{name}({', '.join(f'arg{k}' for k in range(n))})"
             for name, n in sorted(arities.items(), key=lambda kv: (kv[0] != NEW, len(kv[0]), kv[0]))]
    return f"class {CLASS}: " + "; ".join(parts)


def parse_call(text: str, *, max_chars: int = 10000, max_depth: int = 50) -> tuple[str, tuple]:
    """(name, args) of one call `m2(3, 'x')`; InputParseError (one line) otherwise. Arguments are literals."""
    if not isinstance(text, str) or not text.strip():
        raise InputParseError("empty call")
    text = text.strip()
    if len(text) > max_chars:
        raise InputParseError(f"call has {len(text)} characters, more than the limit of {max_chars}")
    try:
        node = ast.parse(text, mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        raise InputParseError(f"not a call such as m0(1, 'a'): {text[:60]!r}") from None
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
        raise InputParseError(f"not a call such as m0(1, 'a'): {text[:60]!r}")
    name = node.func.id
    if not _METHOD.match(name):
        raise InputParseError(f"{name!r} is not new or a method m0, m1, ...")
    if node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
        raise InputParseError("write the arguments as plain values in order (no keywords, no *)")
    args = "(" + "".join(ast.unparse(a) + ", " for a in node.args) + ")"
    try:
        values = parse_literal(args, max_chars=max_chars, max_depth=max_depth)
    except InputParseError as e:
        raise InputParseError(f"the arguments are not Python literals ({e})") from None
    try:  # inf and nan (from 1e999) have no literal: the replayed history could not carry them
        exact = repr(ast.literal_eval(repr(values))) == repr(values)
    except (ValueError, SyntaxError):
        exact = False
    if not exact:
        raise InputParseError("the arguments must be finite literals (no inf or nan)")
    return name, values


def call_text(name: str, args: Sequence[Any]) -> str:
    """The canonical text of a call, as observations show it."""
    return f"{name}({', '.join(repr(a) for a in args)})"


def calls_literal(calls: Sequence[tuple[str, tuple]]) -> str:
    """The sandbox input of a call sequence: a tuple literal of (name, args) pairs (spread into test_func)."""
    return repr(tuple((name, tuple(args)) for name, args in calls))


def sequence_calls(literal: str) -> list[tuple[str, tuple]]:
    """The (name, args) pairs of a stored sequence literal; ValueError when it is not one."""
    value = parse_literal(literal, max_chars=10**6, max_depth=60)
    if type(value) is not tuple or not value:
        raise ValueError(f"call sequence {literal[:60]!r} is not a non-empty tuple of (name, args) pairs")
    for step in value:
        if (type(step) is not tuple or len(step) != 2 or type(step[0]) is not str or not _METHOD.match(step[0])
                or type(step[1]) is not tuple):
            raise ValueError(f"call sequence step {str(step)[:60]!r} is not a (name, args) pair")
    return list(value)


def step_error(result: object) -> str | None:
    """The error text of a stored step result ({"raised": text}), None for a value."""
    if type(result) is dict and len(result) == 1 and type(result.get(RAISED)) is str:
        return result[RAISED]
    return None


_EPISODES = itertools.count()


class ObjectBox(BlackBox):
    """One episode's live object: the calls since the last `new`, replayed per query in the sandbox."""

    def __init__(self, instance: Instance, caller: Caller):
        super().__init__(instance, caller)
        self.arities = interface(instance.header)
        # a source of its own gives the episode a sandbox child of its own: the worker restores
        # builtins and the call's globals, not imported modules, so a class that patches one (e.g.
        # `json.dumps`) changes only its own episode, and the next episode starts in a fresh child
        self.source = f"{instance.code}{EPISODE_HARNESS}# episode {next(_EPISODES)}\n"
        self.history: list[tuple[str, tuple]] = []

    def call(self, query: str, timeout_s: float) -> CallResult:
        name, args = parse_call(query)
        if name not in self.arities:
            return error_result(CallKind.RAISED, f"AttributeError: '{CLASS}' object has no attribute '{name}'", 0.0)
        if name != NEW and not self.history:
            return error_result(CallKind.RAISED, f"RuntimeError: {NO_OBJECT}", 0.0)
        calls = [(name, args)] if name == NEW else [*self.history, (name, args)]
        result = self.caller(self.source, calls_literal(calls), timeout_s)
        if result.kind.cut_short:
            return result  # cut short: the object stays as it was
        self.history = [] if name == NEW and not result.ok else calls  # a failed new leaves no object
        return result

    def close(self) -> None:
        self.history = []


class StatefulDomain(Domain):
    name = "stateful"
    subject = "class"
    black_box = ObjectBox
    wordings = {"paper": PAPER, "compact": COMPACT}

    def check_instance(self, instance: Instance) -> None:
        arities = interface(instance.header)
        _check_class(instance.code, arities)
        for column, examples in (("train_examples", instance.train_examples), ("test_examples", instance.test_examples)):
            for literal, results in examples:
                calls = sequence_calls(literal)
                unknown = sorted({name for name, _ in calls} - set(arities))
                if unknown:
                    raise ValueError(f"{column}: a sequence calls {unknown[0]}, which the header does not show")
                if type(results) is not list or len(results) != len(calls):
                    raise ValueError(f"{column}: a sequence of {len(calls)} calls needs a list of as many results")

    def context(self, instance: Instance, max_chars: int = 2000) -> list[Observation]:
        """Each context sequence step by step: `new(2) -> None`, `m0(1, 'a') -> 'a'`."""
        out = []
        for literal, results in instance.train_examples:
            for (name, args), result in zip(sequence_calls(literal), results):
                error = step_error(result)
                shown = "None" if error is not None else prompts.example_repr(result, max_chars)
                out.append(Observation(call_text(name, args), shown, error))
        return out

    def extract_query(self, reply: str) -> str | None:
        """The call of an input-turn reply, canonical (`m2(3, 'x')`): from the first `Input:` line, else
        the first fenced block, else the first call in the reply that parses. An `Input:` line or a fence
        holding no parsable call is returned as written, so its parse error is reported."""
        text = strip_think(reply)
        label = _INPUT_LABEL.search(text)
        fence = None if label else _FENCE.search(text)
        if label:
            end = text.find("\n", label.end())
            region = text[label.end():]
            written = text[label.end(): None if end < 0 else end]
        elif fence:
            region = written = fence.group(1)
        else:
            region, written = text, ""
        return _first_call(region) or written.strip().strip("`*").strip() or None

    def check_query(self, query: str, *, spread_list: bool, max_chars: int, max_depth: int) -> None:
        parse_call(query, max_chars=max_chars, max_depth=max_depth)

    def privileged(self, instance: Instance) -> Privileged:
        return Privileged(instance.description, instance.code,
                          source_label=f"Source of the class {CLASS} (new is __init__)")

    def coder_prompt(self) -> str:
        return CODER_PROMPT

    def match_program(self, code: str) -> str:
        return code + MATCH_HARNESS

    def match_cases(self, instance: Instance) -> list[tuple[str, Any]]:
        """One case per step of each held-out sequence: the calls up to it, and its stored result (an
        error as its type name). Each step is compared after the same history; a `new` that succeeded
        says nothing and is no case."""
        cases = []
        for literal, results in instance.test_examples:
            calls = sequence_calls(literal)
            for k, result in enumerate(results):
                error = step_error(result)
                if calls[k][0] == NEW and error is None:
                    continue
                expected = result if error is None else {RAISED: error.split(":", 1)[0]}
                cases.append((calls_literal(calls[: k + 1]), expected))
        return cases


def _first_call(region: str) -> str | None:
    """The canonical text of the first call in `region` that parses, or None."""
    for m in list(_CALL_START.finditer(region[:20000]))[:_MAX_CALLS_SCANNED]:
        end = _balanced_end(region, m.end() - 1)
        if end is None:
            continue
        try:
            name, args = parse_call(m.group(1) + region[m.end() - 1: end])
        except InputParseError:
            continue
        return call_text(name, args)
    return None


def _check_class(code: str, arities: dict[str, int]) -> None:
    """`code` defines class Obj with an __init__ and the methods the header shows, of those arities."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError) as e:
        raise ValueError(f"test_func_validated does not parse ({type(e).__name__})") from None
    cls = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == CLASS), None)
    if cls is None:
        raise ValueError(f"test_func_validated defines no top-level class {CLASS}")
    defs = {n.name: n for n in cls.body if isinstance(n, ast.FunctionDef)}
    for name, arity in arities.items():
        fn = defs.get("__init__" if name == NEW else name)
        if fn is None or len(fn.args.args) - 1 != arity:
            raise ValueError(f"header shows {name} with {arity} parameters; class {CLASS} does not define it so")
