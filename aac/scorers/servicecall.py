"""Service-call scoring of the web domain (after SCCGBench): does a documentation let a coder call the service right?

For each held-out intent of a service (aac/env/domains/web.py), a coder model writes the service-call
function the intent asks for, from the documentation (the agent's, or the gold one, with the
service's header and the exchanges observed) or from the intent alone (the baseline: no
documentation, not even the host). The code runs on the intent's test inputs in virtual execution
(aac/sandbox/web_transport.py: the clients' transport answers from the service in the sandbox, every
request is recorded, nothing is sent). Per intent, from the first request the code makes on the
first (a successful) input, against the gold function's:
- **Mock**: host, route and method all equal the gold's (the path resolved to the service's route);
- **Robust**: Mock, and the code checks the response status (`status_code`, `raise_for_status`,
  `ok`, `status`, `getcode`, `is_success`, ..., or catches urllib's HTTPError / URLError, which urllib
  raises for an error status) and handles exceptions (a `try` with a handler);
- **ParamF1**: F1 of the request's parameter names (query and body) against the gold's (both empty: 1);
- **output match**: the fraction of the test inputs on which the code makes the gold's request (host,
  route, method) and returns what the gold function returns (the one normalisation of
  aac/sandbox/values.py); a call that raised matches nothing. Without the request condition, a
  function that never reaches the service would match every error case whose answer is None (36%
  of builtin:web's test inputs).
An instance's `score` is its output match over all its intents' inputs (the report's "code match").
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from aac.env.domains import get_domain
from aac.env.domains.web import function_name, parse_intent, program
from aac.sandbox.values import outputs_match
from aac.scorers.codematch import SYSTEM, CoderTask, extract_code
from aac.scorers.lm import Completer

if TYPE_CHECKING:
    from aac.sandbox.pool import SandboxPool

INTENT_ONLY_PROMPT = """\
Write a Python function that calls a web service.

Task: {intent}
Function: {signature}

Use the requests, httpx or urllib library. Reply with one ```python code block holding the complete
function with exactly this signature, plus the imports it needs. Do not print anything and do not add
test code."""

# attributes that read or act on a response's status, in requests, httpx and urllib
STATUS_CHECKS = frozenset({"status_code", "raise_for_status", "ok", "status", "getcode", "code", "is_success",
                           "is_error", "is_client_error", "is_server_error"})
URLLIB_STATUS_ERRORS = frozenset({"HTTPError", "URLError"})


def coder_messages(task: CoderTask, intent: dict) -> list[dict]:
    """The coder's chat for one intent: documented when the task has a header, else the intent alone."""
    if task.header:
        shown = "\n".join(f"{e.input} -> {'error ' + e.error if e.error else e.output_repr}" for e in task.examples)
        user = get_domain(task.domain).coder_prompt().format(
            intent=intent["intent"], signature=intent["signature"], header=task.header.strip(),
            description=task.description.strip() or "(none)", examples=shown or "(none)")
    else:
        user = INTENT_ONLY_PROMPT.format(intent=intent["intent"], signature=intent["signature"])
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


def is_robust_code(code: str) -> bool:
    """The code handles exceptions (a `try` with a handler) and checks the response status."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return False
    nodes = list(ast.walk(tree))
    handlers = [h for n in nodes if isinstance(n, ast.Try) for h in n.handlers]
    # urllib raises HTTPError (a URLError) for an error status: catching it is its status check
    caught = {ast.unparse(h.type).rsplit(".", 1)[-1] for h in handlers if h.type is not None}
    checks = any(isinstance(n, ast.Attribute) and n.attr in STATUS_CHECKS for n in nodes)
    return bool(handlers) and (checks or bool(caught & URLLIB_STATUS_ERRORS))


def param_f1(got: Sequence[str], gold: Sequence[str]) -> float:
    got_set, gold_set = set(got), set(gold)
    if not got_set and not gold_set:
        return 1.0
    return 2 * len(got_set & gold_set) / (len(got_set) + len(gold_set))


@dataclass(frozen=True)
class ServiceCallScore:
    score: float  # output match over every test input of the instance's intents
    matches: int
    total: int
    errors: int  # test calls that failed in the sandbox or raised
    mock: float  # fractions of the instance's intents
    robust: float
    param_f1: float
    intents: list[dict] = field(default_factory=list)  # per intent: code, mock, robust, param_f1, outputs, request
    code: str = ""  # the first intent's code (the CodeMatch field)
    note: str | None = None

    def to_dict(self) -> dict:
        return {"score": self.score, "matches": self.matches, "total": self.total, "errors": self.errors,
                "mock": self.mock, "robust": self.robust, "param_f1": self.param_f1, "intents": self.intents,
                "code": self.code, "note": self.note}


def _score_intent(code: str, intent: dict, expected: dict, results: list) -> dict:
    """One intent's Mock, Robust, ParamF1 and output matches, from its code's runs on the intent's inputs."""
    if not code:
        return {"function": intent["signature"], "code": "", "mock": False, "robust": False, "param_f1": 0.0,
                "matches": 0, "total": len(intent["inputs"]), "errors": 0, "request": None,
                "note": "no code in the coder's reply"}
    gold = expected["interface"]
    calls = [r.normalized if r.ok and isinstance(r.normalized, dict) else None for r in results]
    requests = [c["requests"][0] if c and c.get("requests") else None for c in calls]  # each input's first
    right = [q is not None and all(q[k] == gold[k] for k in ("host", "route", "method")) for q in requests]
    first, mock = requests[0], right[0]
    # a return value counts only after the right request: a function that never reaches the service would
    # otherwise match every error case whose gold answer is None
    matched = [ok and c.get("raised") is None and outputs_match(c.get("value"), want)
               for c, ok, want in zip(calls, right, expected["outputs"])]
    return {"function": intent["signature"], "code": code, "mock": mock, "robust": mock and is_robust_code(code),
            "param_f1": param_f1(first["params"], gold["params"]) if first is not None else 0.0,
            "matches": sum(matched), "total": len(matched),
            "errors": sum(c is None or c.get("raised") is not None for c in calls),
            "request": None if first is None else {k: first[k] for k in ("via", "host", "path", "route", "method",
                                                                         "params")}}


class ServiceCallMatcher:
    """Coder model + virtual execution: documentations in, service-call scores out (CodeMatcher's interface).

    `reference_rows`: what `aac.eval.scoring` adds beside the agent's row when references are asked for:
    the intent-only baseline and the gold-documentation ceiling."""

    reference_rows = ("intent_only", "gold")

    def __init__(self, completer: Completer, pool: SandboxPool, *, timeout_s: float = 5.0):
        self.completer = completer
        self.pool = pool
        self.timeout_s = timeout_s

    def score(self, tasks: Sequence[CoderTask]) -> list[ServiceCallScore]:
        items = [(t, parse_intent(literal), expected) for t in tasks for literal, expected in t.test_examples]
        codes = [extract_code(r) for r in self.completer([coder_messages(t, intent) for t, intent, _ in items])]
        runs = [(program(t.source, "call", code, function_name(intent["signature"])), repr(tuple(args)))
                for (t, intent, _), code in zip(items, codes) if code for args in intent["inputs"]]
        results = iter(self.pool.call_many(runs, timeout_s=self.timeout_s) if runs else [])
        per_intent = iter([_score_intent(code, intent, expected, [next(results) for _ in intent["inputs"]] if code else [])
                           for (_, intent, expected), code in zip(items, codes)])
        out = []
        for t in tasks:
            per = [next(per_intent) for _ in t.test_examples]
            if not per:
                raise ValueError("service-call scoring needs at least one intent")
            matches, total = sum(p["matches"] for p in per), sum(p["total"] for p in per)
            out.append(ServiceCallScore(
                score=matches / total, matches=matches, total=total, errors=sum(p["errors"] for p in per),
                mock=sum(p["mock"] for p in per) / len(per), robust=sum(p["robust"] for p in per) / len(per),
                param_f1=sum(p["param_f1"] for p in per) / len(per), intents=per, code=per[0]["code"],
                note=None if any(p["code"] for p in per) else "no code in the coder's replies"))
        return out
