"""The web domain: the black box is an HTTP JSON service, queried one request at a time (after SCCGBench).

A query is a request written as a Python tuple literal, `("GET", "/v2/forecast", {"city": "Oslo",
"days": 2})`: the method, the path (or a full URL), the query parameters (GET, DELETE) or the JSON
body (POST, PUT, PATCH) as a dict, and optionally a dict of request headers (`{"X-Api-Key": "..."}`);
`GET /v2/forecast?city=Oslo` is read too. Every part is an `ast.literal_eval` literal, never `eval`.
The observation is the status and the JSON body, `200 {"city": "Oslo", ...}`; an HTTP error (400,
401, 404, 405, 422, 429) is an observation like any other, not a failed call: documenting the errors
is part of the task. Only a request to another host fails (nothing answers there).

An instance keeps the PAU columns: `test_func_validated` is the service's source (a model of a REST
API built on aac/sandbox/web_service.py), `description` its gold documentation, the header the host
and its routes without their parameters (`service api.weatherly.example: GET /v2/current; POST
/v2/alerts`), `train_examples` two example exchanges `[request literal, [status, body]]`, and
`test_examples` the held-out intents: `[intent literal, expected]`, where the intent literal is a
dict {intent, signature, gold, inputs} (the task in words, the function to write, the gold
service-call function, its test inputs) and `expected` is {outputs, interface} (the gold function's
return value per input, and the host, route, method and parameter names of its request).

The service runs in the sandbox (aac/sandbox/web_transport.py: a virtual transport, no socket). An
episode's black box keeps the requests made so far, the two example exchanges first; each query
replays them on a fresh service in one stateless sandbox call, so a service's state (a created item,
the rate limit's count) persists through the episode and dies with it. A call the sandbox cut short is not kept.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aac.env import prompts
from aac.env.domains.base import BlackBox, Caller, Domain, Privileged
from aac.env.observation import Observation
from aac.env.prompts import Wording, strip_think
from aac.sandbox.pool import CallResult
from aac.sandbox.values import InputParseError, parse_literal
from aac.sandbox.web_service import METHODS

if TYPE_CHECKING:
    from aac.env.instance import Instance

TRANSPORT = Path(__file__).resolve().parents[2] / "sandbox" / "web_transport.py"
INTENT_KEYS = ("intent", "signature", "gold", "inputs")
INTERFACE_KEYS = ("host", "route", "method", "params")
MAX_TARGET_CHARS = 2000

# loads the transport by path, as the worker loads its own modules (no `aac` package in the sandbox)
_LOADER = '''

def _aac_web():
    import sys
    web = sys.modules.get("_aac_sandbox_web_transport")
    if web is None:
        import importlib.util
        spec = importlib.util.spec_from_file_location("_aac_sandbox_web_transport", {path!r})
        web = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = web
        spec.loader.exec_module(web)
    return web


def test_func(*args):
    return _aac_web().{entry}({source!r}, {arguments})
'''


def program(source: str, entry: str, code: str = "", function: str | None = None) -> str:
    """The sandbox source of one entry point of the transport on `source`: `serve` (an episode's
    replayed queries), `record` (every query's result), `describe` (no input), or `call` (the
    `function` defined by `code`, on the virtual network)."""
    arguments = {"serve": "args", "record": "args", "describe": "", "call": f"globals().get({function!r}), args"}
    text = _LOADER.format(path=str(TRANSPORT), entry=entry, source=source, arguments=arguments[entry])
    return f"{code.rstrip()}\n{text}" if code else text.lstrip()


# ---------------------------------------------------------------- the query grammar

_HTTP_LINE = re.compile(r"^\s*(GET|POST|PUT|PATCH|DELETE)\s+(\S+)(?:\s+(.*\S))?\s*$", re.I | re.S)
_HTTP_LINE_IN = re.compile(r"(?m)^[ \t*_>#`-]*(?:input[ \t*_]*[:=][ \t`*]*)?((?:GET|POST|PUT|PATCH|DELETE)[ \t]+/\S*.*)$",
                           re.I)


def parse_request(text: str, *, max_chars: int = 10000, max_depth: int = 50) -> tuple:
    """(method, target, params or None, headers or None) of a request literal, or of `GET /path?q=1`
    (a body may follow as a dict literal); InputParseError (one line) otherwise."""
    if not isinstance(text, str) or not text.strip():
        raise InputParseError("empty request")
    if len(text) > max_chars:
        raise InputParseError(f"request has {len(text)} characters, more than the limit of {max_chars}")
    line = _HTTP_LINE.match(text)
    if line:
        rest = line.group(3)
        params = parse_literal(rest, max_chars=max_chars, max_depth=max_depth) if rest else None
        value: Any = (line.group(1), line.group(2), params)
    else:
        try:
            value = parse_literal(text, max_chars=max_chars, max_depth=max_depth)
        except InputParseError as e:
            raise InputParseError(f"not a request such as ('GET', '/path', {{'name': 'value'}}): {e}") from None
    if type(value) not in (tuple, list) or not 2 <= len(value) <= 4:
        raise InputParseError("a request is a tuple (method, path, params, headers) of 2 to 4 items")
    method, target, params, headers = (*value, None, None)[:4]
    if type(method) is not str or method.upper() not in METHODS:
        raise InputParseError(f"the method must be one of {', '.join(METHODS)}, got {str(method)[:20]!r}")
    if (type(target) is not str or not target.startswith(("/", "http://", "https://"))
            or len(target) > MAX_TARGET_CHARS or any(c.isspace() for c in target)):
        raise InputParseError(f"the path must start with / (or be an http(s) URL), got {str(target)[:40]!r}")
    if params is not None and not (type(params) is dict and all(type(k) is str for k in params)):
        raise InputParseError("the parameters must be a dict with string keys (or None)")
    try:
        json.dumps(params, allow_nan=False)
    except (TypeError, ValueError):
        raise InputParseError("the parameter values must be JSON values (str, number, bool, None, list, dict)") from None
    if headers is not None and not (type(headers) is dict and all(type(k) is str and type(v) is str
                                                                   for k, v in headers.items())):
        raise InputParseError("the headers must be a dict of strings")
    return method.upper(), target, params, headers or None


def request_text(request: tuple) -> str:
    """The canonical text of a request, as observations show it."""
    method, target, params, headers = request
    items: list[Any] = [method, target]
    if params is not None or headers:
        items.append(params)
    if headers:
        items.append(headers)
    return repr(tuple(items))


def response_text(status: int, body: object) -> str:
    """A response as the agent sees it: `200 {"city": "Oslo"}` (a body-less response: the status alone)."""
    return str(status) if body is None else f"{status} {json.dumps(body, ensure_ascii=False)}"


_HEADER = re.compile(r"^\s*service\s+([a-z0-9.-]+)\s*:(.*)$", re.I | re.S)
_ROUTE = re.compile(r"^\s*(GET|POST|PUT|PATCH|DELETE)\s+(/\S*)\s*$")


def interface(header: str) -> tuple[str, list[tuple[str, str]]]:
    """(host, [(method, route)]) of a header `service HOST: GET /a; POST /b/{id}`; ValueError otherwise."""
    m = _HEADER.match(header)
    if m is None:
        raise ValueError(f"header {header[:60]!r} is not 'service HOST: METHOD /route; ...'")
    routes = []
    for part in m.group(2).split(";"):
        route = _ROUTE.match(part)
        if route is None:
            raise ValueError(f"header part {part.strip()[:40]!r} is not 'METHOD /route'")
        routes.append((route.group(1), route.group(2)))
    return m.group(1).lower(), routes


def render_header(host: str, routes: list) -> str:
    return f"service {host}: " + "; ".join(f"{method} {route}" for method, route in routes)


def parse_intent(literal: str) -> dict:
    """The intent dict of a stored held-out intent; ValueError when it is not one."""
    value = parse_literal(literal, max_chars=10**6, max_depth=60)
    if type(value) is not dict or set(value) != set(INTENT_KEYS):
        raise ValueError(f"an intent is a dict with keys {', '.join(INTENT_KEYS)}")
    if not all(type(value[k]) is str and value[k].strip() for k in ("intent", "signature", "gold")):
        raise ValueError("an intent's intent, signature and gold must be non-empty strings")
    if type(value["inputs"]) is not list or not value["inputs"] or any(type(a) is not list for a in value["inputs"]):
        raise ValueError("an intent's inputs must be a non-empty list of argument lists")
    function_name(value["signature"])
    return value


def function_name(signature: str) -> str:
    """`get_forecast` of `def get_forecast(city, days):`; ValueError otherwise."""
    try:
        node = ast.parse(signature.strip() + "\n    pass\n").body[0]
    except (SyntaxError, ValueError, IndexError):
        raise ValueError(f"signature {signature[:60]!r} is not a def line") from None
    if not isinstance(node, ast.FunctionDef):
        raise ValueError(f"signature {signature[:60]!r} is not a def line")
    return node.name


# ---------------------------------------------------------------- one episode's service


class ServiceBox(BlackBox):
    """One episode's service: the requests made so far, replayed on a fresh service per query."""

    def __init__(self, instance: Instance, caller: Caller):
        super().__init__(instance, caller)
        self.source = program(instance.code, "serve")  # one per service: its sandbox child stays warm
        # the example exchanges happened first: what they created exists, and they count toward a rate limit
        self.start = [parse_request(literal) for literal, _ in instance.train_examples]
        self.history: list[tuple] = list(self.start)

    def call(self, query: str, timeout_s: float) -> CallResult:
        request = parse_request(query)
        requests = [*self.history, request]
        result = self.caller(self.source, repr(tuple(requests)), timeout_s)
        if (result.error or "").startswith(("TimeoutError: call exceeded", "SandboxError:")):
            return result  # cut short: the service saw nothing
        self.history = requests
        shown = result.normalized
        if result.ok and type(shown) is list and len(shown) == 2 and type(shown[0]) is int:
            return replace(result, output_repr=response_text(*shown))
        return result

    def close(self) -> None:
        self.history = list(self.start)


# ---------------------------------------------------------------- words

_SYSTEM = (
    "You are studying an undocumented web service: an HTTP API that answers in JSON. You cannot read its "
    "code or its documentation. You send it requests and read the status codes and JSON bodies it returns, "
    "to write its documentation. Always use the reply format you are asked for."
)
PAPER = Wording(
    system=_SYSTEM,
    reasoning_task=("Task: plan your next request. In at most 80 words, say which request you will send, what "
                    "it checks about your documentation so far, and what response you expect."),
    input_task=("Task: give your next request as one line:\n"
                "Input: ('METHOD', '/path', {'parameter': value}, {'Header-Name': 'value'})\n"
                "A Python tuple: the method, the path, the parameters as a dict (the query string of GET and "
                "DELETE, the JSON body of POST, PUT and PATCH) and, if needed, a dict of request headers, e.g. "
                "Input: ('GET', '/v1/items', {'limit': 2}, {'X-Api-Key': 'abc'})"),
    reflect_task=("Task: can you now document the service with high confidence? Reply with exactly two lines:\n"
                  "Decision: YES or NO\n"
                  "Summary: <the service's documentation: authentication, and for each endpoint its method, path, "
                  "parameters, what it returns and its errors, in 2-6 sentences>"),
    in_context_task=("Task: document the service: authentication, and for each endpoint its method, path, "
                     "parameters, what it returns and its errors, in 2-6 sentences. Reply with one line:\n"
                     "Description: <your documentation>"),
    cues=(("input", "Input: ("), ("reflect", "Decision:")),
)
# the compact style's worked example: a toy key-value service
COMPACT = Wording(
    system=("You explore an undocumented JSON web service by sending it requests. "
            "Answer in the exact format of the example."),
    reasoning_task="Plan your next request in one sentence: the request, and the response you expect.",
    input_task="Write your next request as a Python tuple: method, path, parameters dict, headers dict.",
    reflect_task="Document the service in one or two sentences, then whether you are sure (Decision: YES or NO).",
    cues=(("input", "Input: ("), ("reflect", "Summary:")),
    example=("service kv.example: GET /v1/keys/{name}; PUT /v1/keys/{name}\nCalls (input -> result):\n"
             "('GET', '/v1/keys/color') -> 404 {\"error\": \"no key color\"}\n"
             "('PUT', '/v1/keys/color', {'value': 'red'}) -> 200 {\"name\": \"color\", \"value\": \"red\"}\n"
             "Hypothesis: not yet formed",
             "Plan: read the key back; if PUT stored it, GET /v1/keys/color gives 200 with value red.",
             "Input: ('GET', '/v1/keys/color')",
             "Latest call: ('GET', '/v1/keys/color') -> 200 {\"name\": \"color\", \"value\": \"red\"}",
             "Summary: PUT /v1/keys/{name} with a JSON body {value} stores a value; GET /v1/keys/{name} returns "
             "{name, value}, or 404 for a key never stored.\nDecision: NO"),
)

CODER_PROMPT = """\
Write a Python function that calls a web service.

Task: {intent}
Function: {signature}

Service: {header}

Documentation:
{description}

Example requests (request -> status and JSON body):
{examples}

Use the requests, httpx or urllib library. Reply with one ```python code block holding the complete
function with exactly this signature, plus the imports it needs. Do not print anything and do not add
test code."""


class WebDomain(Domain):
    name = "web"
    subject = "web service"
    preload = ("json", "urllib.request", "requests", "httpx")  # the clients code under evaluation imports
    black_box = ServiceBox
    wordings = {"paper": PAPER, "compact": COMPACT}

    def check_instance(self, instance: Instance) -> None:
        interface(instance.header)
        if "Service(" not in instance.code:
            raise ValueError("test_func_validated builds no Service")
        for literal, result in instance.train_examples:
            parse_request(literal)
            if not (type(result) is list and len(result) == 2 and type(result[0]) is int):
                raise ValueError("train_examples: a result must be [status, body]")
        for literal, expected in instance.test_examples:
            intent = parse_intent(literal)
            if (type(expected) is not dict or type(expected.get("outputs")) is not list
                    or len(expected["outputs"]) != len(intent["inputs"])
                    or type(expected.get("interface")) is not dict
                    or set(expected["interface"]) != set(INTERFACE_KEYS)):
                raise ValueError("test_examples: an intent's expected value is {outputs: one per input, "
                                 "interface: {host, route, method, params}}")

    def context(self, instance: Instance, max_chars: int = 2000) -> list[Observation]:
        """The two example exchanges: `('GET', '/v2/current', {...}) -> 200 {...}`."""
        out = []
        for literal, (status, body) in instance.train_examples:
            out.append(Observation(request_text(parse_request(literal)),
                                   prompts.clip(response_text(status, body), max_chars), None))
        return out

    def extract_query(self, reply: str) -> str | None:
        """The request of an input-turn reply, canonical: a tuple literal (as the function domain finds
        one: an `Input:` line, a fence, the first literal) or an `Input: GET /path?q=1` line. Written
        text that is neither is returned as it is, so its parse error is reported."""
        candidate = prompts.extract_input(reply)
        for text in (candidate, *(m.group(1) for m in _HTTP_LINE_IN.finditer(strip_think(reply)[:20000]))):
            if text is None:
                continue
            try:
                return request_text(parse_request(text.strip().strip("`")))
            except InputParseError:
                continue
        return candidate

    def check_query(self, query: str, *, spread_list: bool, max_chars: int, max_depth: int) -> None:
        parse_request(query, max_chars=max_chars, max_depth=max_depth)

    def privileged(self, instance: Instance) -> Privileged:
        return Privileged(instance.description, instance.code, source_label=(
            "Source of the service (routes declared on a Service; HTTPError is an error response)"))

    def coder_prompt(self) -> str:
        """The service-call coder's task (aac/scorers/servicecall.py): {intent} and {signature} besides
        {header}, {description} and {examples}."""
        return CODER_PROMPT
