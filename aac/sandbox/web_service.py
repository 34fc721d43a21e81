"""A deterministic model of a REST service: the black box of the web domain (standard library only:
the sandbox worker loads it by path, through `web_transport.py`).

A service source builds one `Service` (its host, an optional API key header, an optional rate limit)
and declares its routes with `@api.route(METHOD, "/v1/items/{item_id}", name=SPEC, ...)` on plain
functions. The function's parameters are the route's path parameters and its query (GET, DELETE) or
JSON body (POST, PUT, PATCH) parameters; one without a default is required, and a trailing `_` lets a
parameter be named by a Python keyword (`from_` is the parameter `from`). A SPEC is `str`, `int`,
`float`, `bool`, `list`, `dict`, `OneOf(...)` or `Range(low, high)` (unnamed parameters are `str`).
A handler returns the JSON body (status 200), or `(status, body)`, or raises `HTTPError(status, msg)`.

Every request goes through the same checks, in the order a gateway applies them, and each failure is a
JSON error body: 429 once more than `rate_limit` requests reached the service, 401 without the key
header or with a wrong key, 404 for a path no route has, 405 for a method the path does not take
(`allowed` lists the others), 400 for an unknown, missing or ill-typed parameter (`allowed` lists the
route's parameters), 422 for a value outside `OneOf`/`Range`, then whatever the handler raises; an
exception a handler did not mean is a 500. Query values arrive as text (as an HTTP client sends them)
and are converted by the spec; JSON body values must already have the spec's type.
"""

from __future__ import annotations

import builtins
import inspect
import json
import re

METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")
BODY_METHODS = ("POST", "PUT", "PATCH")
REASONS = {200: "OK", 201: "Created", 204: "No Content", 400: "Bad Request", 401: "Unauthorized",
           403: "Forbidden", 404: "Not Found", 405: "Method Not Allowed", 409: "Conflict",
           415: "Unsupported Media Type", 422: "Unprocessable Entity", 429: "Too Many Requests",
           500: "Internal Server Error"}
RETRY_AFTER_S = 60
_PARAM = re.compile(r"\{(\w+)\}")
_TRUE, _FALSE = ("true", "1", "yes"), ("false", "0", "no")


class HTTPError(Exception):
    """An error response: `status` and the JSON body {"error": message, **detail}."""

    def __init__(self, status: int, message: str, **detail):
        super().__init__(message)
        self.status = status
        self.body = {"error": message, **detail}


class OneOf:
    """A text parameter that takes one of `values` (another value is a 422)."""

    def __init__(self, *values: str):
        self.values = values

    def convert(self, name: str, value, from_text: bool):
        value = _typed(name, value, str, from_text)
        if value not in self.values:
            raise HTTPError(422, f"parameter '{name}' must be one of: {', '.join(self.values)}")
        return value


class Range:
    """A number parameter (`kind` int or float) within [low, high] (outside: a 422)."""

    def __init__(self, low=None, high=None, kind: type = int):
        self.low, self.high, self.kind = low, high, kind

    def convert(self, name: str, value, from_text: bool):
        value = _typed(name, value, self.kind, from_text)
        if (self.low is not None and value < self.low) or (self.high is not None and value > self.high):
            low = "" if self.low is None else f" >= {self.low}"
            high = "" if self.high is None else f" <= {self.high}"
            raise HTTPError(422, f"parameter '{name}' must be{low}{' and' if low and high else ''}{high}")
        return value


_KIND_WORDS = {str: "a string", int: "an integer", float: "a number", bool: "true or false", list: "a list",
               dict: "an object"}


def _typed(name: str, value, kind: type, from_text: bool):
    """`value` as `kind`: text from a query string is converted, a JSON value must already be one."""
    bad = HTTPError(400, f"parameter '{name}' must be {_KIND_WORDS[kind]}")
    if from_text:
        if kind is str:
            return value[-1]
        if kind is list:
            return [part for v in value for part in v.split(",") if part != ""]
        text = value[-1].strip()
        if kind is int and re.fullmatch(r"[-+]?\d{1,18}", text):
            return int(text)
        if kind is float:
            try:
                number = float(text)
            except ValueError:
                raise bad from None
            if number != number or number in (float("inf"), float("-inf")):
                raise bad
            return number
        if kind is bool and text.lower() in _TRUE + _FALSE:
            return text.lower() in _TRUE
        raise bad
    if kind is float and type(value) is int:
        return float(value)
    if type(value) is not kind:
        raise bad
    return value


def _convert(spec, name: str, value, from_text: bool):
    if isinstance(spec, (OneOf, Range)):
        return spec.convert(name, value, from_text)
    return _typed(name, value, spec, from_text)


class Route:
    def __init__(self, method: str, template: str, handler, specs: dict):
        if method not in METHODS:
            raise ValueError(f"route {template}: method {method!r} is not one of {', '.join(METHODS)}")
        if not template.startswith("/"):
            raise ValueError(f"route {template!r} must start with /")
        self.method, self.template, self.handler = method, template, handler
        self.path_params = _PARAM.findall(template)
        self.pattern = re.compile("^" + _PARAM.sub(r"(?P<\1>[^/]+)", re.escape(template).replace(r"\{", "{")
                                                   .replace(r"\}", "}")) + "$")
        signature = inspect.signature(handler)
        if any(p.kind not in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) for p in signature.parameters.values()):
            raise ValueError(f"route {template}: {handler.__name__} must take named parameters only")
        missing = [n for n in self.path_params if n not in signature.parameters]
        unknown = [n for n in specs if n not in signature.parameters]
        if missing or unknown:
            raise ValueError(f"route {template}: {(missing or unknown)[0]!r} is not a parameter of {handler.__name__}")
        self.specs = {n: specs.get(n, str) for n in signature.parameters}
        # the name on the wire: a trailing _ lets a parameter be a Python keyword (`from_` is `from`)
        self.params = {(n[:-1] if n.endswith("_") else n): n for n in signature.parameters if n not in self.path_params}
        self.required = [w for w, n in self.params.items()
                         if signature.parameters[n].default is inspect.Parameter.empty]

    def call(self, path_values: dict, given: dict, from_text: bool):
        """The handler's result for these path values and query/body parameters; HTTPError on bad input."""
        for name in given:
            if name not in self.params:
                raise HTTPError(400, f"unknown parameter '{name}'", allowed=sorted(self.params))
        for name in self.required:
            if name not in given:
                where = "in the JSON body" if self.method in BODY_METHODS else "in the query string"
                raise HTTPError(400, f"missing required parameter '{name}' ({where})", allowed=sorted(self.params))
        args = {n: _convert(self.specs[n], n, [v], True) for n, v in path_values.items()}
        args.update({self.params[w]: _convert(self.specs[self.params[w]], w, v, from_text) for w, v in given.items()})
        return self.handler(**args)


class Service:
    """One REST service: its host, routes, optional key header and rate limit, and its call count."""

    def __init__(self, host: str, *, key_header: str | None = None, key: str | None = None,
                 bearer: bool = False, rate_limit: int | None = None):
        if (key_header is None) != (key is None):
            raise ValueError("a Service needs both key_header and key, or neither")
        self.host = host.lower()
        self.key_header, self.key, self.bearer, self.rate_limit = key_header, key, bearer, rate_limit
        self.routes: list[Route] = []
        self.calls = 0

    def route(self, method: str, template: str, **specs):
        def add(handler):
            if any(r.method == method and r.template == template for r in self.routes):
                raise ValueError(f"route {method} {template} is declared twice")
            self.routes.append(Route(method, template, handler, specs))
            return handler
        return add

    def describe(self) -> dict:
        """What the builder and the header show: host, routes (method, template), authentication, limit."""
        return {"host": self.host, "routes": [[r.method, r.template] for r in self.routes],
                "key_header": self.key_header, "key": self.key, "bearer": self.bearer,
                "rate_limit": self.rate_limit}

    def resolve(self, path: str) -> list[tuple[Route, dict]]:
        """The routes whose template matches `path` (a trailing slash is ignored), with their path values."""
        path = path.rstrip("/") or "/"
        return [(r, m.groupdict()) for r in self.routes if (m := r.pattern.match(path))]

    def route_of(self, path: str) -> str | None:
        matched = self.resolve(path)
        return matched[0][0].template if matched else None

    def handle(self, method: str, path: str, query: dict, headers: dict, body, body_kind: str) -> tuple[int, object]:
        """(status, JSON body) of one request. `query`: name -> list of texts; `headers`: lower-case
        names; `body`: the parsed body (a JSON value, form fields as query-like lists, or text);
        `body_kind`: json | form | text | none."""
        try:
            return self._handle(method.upper(), path, query, headers, body, body_kind)
        except HTTPError as e:
            return e.status, e.body
        except Exception:  # noqa: BLE001 - a handler's own bug is the service's 500, as on a real server
            return 500, {"error": "internal server error"}

    def _handle(self, method, path, query, headers, body, body_kind):
        self.calls += 1
        if self.rate_limit is not None and self.calls > self.rate_limit:
            raise HTTPError(429, f"rate limit exceeded: {self.rate_limit} requests per minute",
                            retry_after=RETRY_AFTER_S)
        if self.key_header is not None:
            sent = headers.get(self.key_header.lower())
            if sent is None:
                raise HTTPError(401, f"missing {self.key_header} header")
            if sent != (f"Bearer {self.key}" if self.bearer else self.key):
                raise HTTPError(401, "invalid API key")
        matched = self.resolve(path)
        if not matched:
            raise HTTPError(404, f"no route for {path}")
        route, values = next(((r, v) for r, v in matched if r.method == method), (None, None))
        if route is None:
            allowed = sorted({r.method for r, _ in matched})
            raise HTTPError(405, f"method {method} not allowed here", allowed=allowed)
        if method in BODY_METHODS:
            if body_kind == "none":
                given, from_text = {}, False
            elif body_kind == "form":
                given, from_text = body, True
            elif body_kind == "json" and type(body) is dict:
                given, from_text = body, False
            else:
                raise HTTPError(400, "the body must be a JSON object")
        else:
            given, from_text = query, True
        result = route.call(values, given, from_text)
        status, payload = result if type(result) is tuple else (200, result)
        json.dumps(payload)  # a body JSON cannot carry is the service's bug: a 500
        return status, payload


EXPORTS = {"Service": Service, "HTTPError": HTTPError, "OneOf": OneOf, "Range": Range}
_COMPILED: dict[str, object] = {}


def load(source: str) -> Service:
    """A fresh service from its source (run in fresh globals holding EXPORTS; the compiled code is kept)."""
    code = _COMPILED.get(source)
    if code is None:
        code = _COMPILED[source] = compile(source, "<service>", "exec", dont_inherit=True)
    scope = {"__name__": "service", "__builtins__": builtins, **EXPORTS}
    exec(code, scope)
    services = [v for v in scope.values() if isinstance(v, Service)]
    if len(services) != 1:
        raise ValueError(f"a service source must build exactly one Service, this one builds {len(services)}")
    return services[0]
