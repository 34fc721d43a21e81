"""The web domain's virtual transport (standard library only: a sandbox program loads it by path).

No request leaves the process: every request, the agent's queries and those of code under evaluation
alike, is handed to the service model (`web_service.py`) living in the same sandbox child, and each is
recorded (host, path, the route it resolves to, method, query, headers, body, parameter names, and
which client sent it). Code under evaluation keeps using its usual client: inside `virtual_network`
the transport layer of `requests` (HTTPAdapter.send), `httpx` (HTTPTransport / AsyncHTTPTransport)
and `urllib.request` (the HTTP and HTTPS handlers) answers from the service, so responses, status
checks and each library's own exceptions behave as on a real network (a host other than the
service's cannot be resolved: requests' ConnectionError, httpx's ConnectError, urllib's URLError).
Opening a socket raises meanwhile; the sandbox's own isolation (an empty network namespace, or
Landlock) is what contains hostile code, this only makes unpatched clients fail the same way in
every isolation mode. Everything patched is restored when the block ends.

Entry points (each builds a fresh service from its source, so no state outlives a sandbox call):
`serve` (an episode: the agent's queries replayed, the last one's [status, body]), `record` (the
builder: every query's [status, body] and the requests), `call` (code under evaluation: its return value, the
exception it let out, and the requests it made) and `describe` (host, routes, key, rate limit).
A query is (method, path or URL, params or None, headers or None): params are the query string of
GET and DELETE (encoded as `requests` encodes them) and the JSON body of POST, PUT and PATCH.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import os
import sys
from urllib.parse import parse_qs, urlencode, urlsplit


def _sibling(name: str):
    full = f"_aac_sandbox_{name}"
    if full not in sys.modules:
        spec = importlib.util.spec_from_file_location(full, os.path.join(os.path.dirname(__file__), f"{name}.py"))
        module = importlib.util.module_from_spec(spec)
        sys.modules[full] = module
        spec.loader.exec_module(module)
    return sys.modules[full]


service_model = _sibling("web_service")
values = _sibling("values")
MAX_RECORDED = 8  # requests kept per call (a loop of requests records its first ones)
MAX_FIELD_CHARS = 300  # per recorded header value or text body
_MISSING = object()


class Unreachable(Exception):
    """A request to a host other than the service's (or not http/https): nothing answers."""


def _text(value, limit: int = MAX_FIELD_CHARS) -> str:
    value = str(value)
    return value if len(value) <= limit else value[:limit] + "..."


def _body_bytes(body) -> bytes:
    if body is None:
        return b""
    if isinstance(body, str):
        return body.encode("utf-8")
    if isinstance(body, (bytes, bytearray, memoryview)):
        return bytes(body)
    if hasattr(body, "read"):
        return _body_bytes(body.read())
    return b"".join(_body_bytes(part) for part in body)  # an iterable of chunks


def _parse_body(raw: bytes, content_type: str) -> tuple[object, str]:
    """(value, kind): JSON when it parses as JSON (whatever the content type says), form fields for a
    form-encoded body, else the text; kind none for an empty body."""
    if not raw:
        return None, "none"
    text = raw.decode("utf-8", "replace")
    try:
        return json.loads(text), "json"
    except ValueError:
        pass
    if "x-www-form-urlencoded" in content_type:
        return parse_qs(text, keep_blank_values=True), "form"
    return _text(text), "text"


class Transport:
    """Hands requests to one service and records them."""

    def __init__(self, service):
        self.service = service
        self.requests: list[dict] = []

    def send(self, method: str, url: str, headers: dict, body, via: str) -> tuple[int, dict, bytes, object]:
        """(status, response headers, body bytes, JSON body) of one request; Unreachable for another host."""
        parts = urlsplit(str(url))
        host = (parts.hostname or "").lower()
        path = parts.path or "/"
        query = parse_qs(parts.query, keep_blank_values=True)
        headers = {str(k).lower(): str(v) for k, v in dict(headers or {}).items()}
        value, kind = _parse_body(_body_bytes(body), headers.get("content-type", ""))
        reachable = host == self.service.host and parts.scheme in ("http", "https")
        if len(self.requests) < MAX_RECORDED:
            body_keys = list(value) if kind in ("json", "form") and isinstance(value, dict) else []
            self.requests.append({
                "via": via, "method": str(method).upper(), "host": host, "path": path,
                "route": self.service.route_of(path) if reachable else None,
                "query": {k: [_text(v) for v in vs] for k, vs in query.items()},
                "headers": {k: _text(v) for k, v in headers.items()},
                "body": None if kind == "none" else value if kind == "text" or len(json.dumps(value)) <= 1200
                else _text(json.dumps(value)), "body_kind": kind,
                "params": sorted({*query, *map(str, body_keys)}),
            })
        if not reachable:
            raise Unreachable(f"cannot resolve host {host!r}" if host else f"no host in the URL {_text(url, 80)!r}")
        status, payload = self.service.handle(method, path, query, headers, value, kind)
        out = {"Content-Type": "application/json"}
        if status == 429:
            out["Retry-After"] = str(service_model.RETRY_AFTER_S)
        if status == 405 and isinstance(payload, dict):
            out["Allow"] = ", ".join(payload.get("allowed", []))
        return status, out, b"" if payload is None else json.dumps(payload).encode("utf-8"), payload


def _query_pairs(params: dict) -> list[tuple[str, str]]:
    """A params dict as `requests` puts it in a query string: lists repeat the key, None is left out."""
    pairs = []
    for key, value in params.items():
        for v in value if isinstance(value, (list, tuple)) else [value]:
            if v is not None:
                pairs.append((str(key), str(v)))
    return pairs


def agent_request(transport: Transport, query) -> tuple[int, object]:
    """(status, JSON body) of one agent query (method, path or URL, params, headers)."""
    method, target, params, headers = (*query, None, None)[:4]
    method = str(method).upper()
    url = target if str(target).startswith(("http://", "https://")) else f"https://{transport.service.host}{target}"
    headers, body = dict(headers or {}), None
    if method in service_model.BODY_METHODS:
        if params is not None:
            body = json.dumps(params).encode("utf-8")
            headers.setdefault("Content-Type", "application/json")
    elif params:
        url += ("&" if "?" in url else "?") + urlencode(_query_pairs(params))
    status, _, _, payload = transport.send(method, url, headers, body, "agent")
    return status, payload


def serve(source: str, queries) -> list:
    """An episode's query: every query so far replayed on a fresh service; the last one's [status, body]."""
    transport = Transport(service_model.load(source))
    last = None
    for k, query in enumerate(queries):
        try:
            last = agent_request(transport, query)
        except Unreachable as e:
            if k == len(queries) - 1:
                raise ConnectionError(str(e)) from None
    return list(last)


def record(source: str, queries) -> dict:
    """Every query's [status, body] on one fresh service (a query to another host: {"raised": text}),
    and the requests as the transport recorded them."""
    transport = Transport(service_model.load(source))
    results = []
    for query in queries:
        try:
            results.append(list(agent_request(transport, query)))
        except Unreachable as e:
            results.append({"raised": f"ConnectionError: {e}"})
    return {"results": results, "requests": transport.requests}


def describe(source: str) -> dict:
    return service_model.load(source).describe()


def call(source: str, function, args) -> dict:
    """Code under evaluation: `function(*args)` on the virtual network of a fresh service; its return
    value, the exception it let out ("Type: message"), and the requests it made."""
    transport = Transport(service_model.load(source))
    value = raised = None
    if not callable(function):
        return {"value": None, "raised": "NameError: the function is not defined", "requests": []}
    with virtual_network(transport):
        try:
            value = function(*args)
        except Exception as exc:  # noqa: BLE001 - what the code let out is part of its result
            raised = _text(f"{type(exc).__name__}: {exc}")
    # the one normalisation here, so an odd return value (a Response, a set) cannot hide the requests
    return {"value": values.normalize(value), "raised": raised, "requests": transport.requests}


# ---------------------------------------------------------------- the clients' transport layers


@contextlib.contextmanager
def virtual_network(transport: Transport):
    """Inside the block, requests / httpx / urllib.request answer from `transport`; sockets refuse."""
    patches = [*_requests_patches(transport), *_httpx_patches(transport), *_urllib_patches(transport),
               *_socket_patches()]
    saved = [(owner, name, vars(owner).get(name, _MISSING)) for owner, name, _ in patches]
    try:
        for owner, name, new in patches:
            setattr(owner, name, new)
        yield transport
    finally:
        for owner, name, old in reversed(saved):
            if old is _MISSING:
                delattr(owner, name)
            else:
                setattr(owner, name, old)


def _reason(status: int) -> str:
    return service_model.REASONS.get(status, "")


def _requests_patches(transport: Transport) -> list:
    try:
        import requests
        from requests.structures import CaseInsensitiveDict
    except ImportError:
        return []

    def send(adapter, request, stream=False, timeout=None, verify=True, cert=None, proxies=None):
        try:
            status, headers, content, _ = transport.send(request.method, request.url, dict(request.headers),
                                                         request.body, "requests")
        except Unreachable as e:
            raise requests.exceptions.ConnectionError(str(e), request=request) from None
        response = requests.models.Response()
        response.status_code, response.reason = status, _reason(status)
        response.headers = CaseInsensitiveDict(headers)
        response.encoding = "utf-8"
        response._content = content
        response.url, response.request, response.connection = request.url, request, adapter
        return response

    return [(requests.adapters.HTTPAdapter, "send", send)]


def _httpx_patches(transport: Transport) -> list:
    try:
        import httpx
    except ImportError:
        return []

    def respond(request):
        try:
            status, headers, content, _ = transport.send(request.method, str(request.url), dict(request.headers),
                                                         request.content, "httpx")
        except Unreachable as e:
            raise httpx.ConnectError(str(e), request=request) from None
        return httpx.Response(status, headers=headers, content=content, request=request)

    def handle(self, request):
        request.read()
        return respond(request)

    async def handle_async(self, request):
        await request.aread()
        return respond(request)

    def init(self, *args, **kwargs):  # no connection pool, no TLS context: nothing is connected
        pass

    def nothing(self, *args):
        pass

    async def nothing_async(self, *args):
        pass

    def enter(self):
        return self

    async def enter_async(self):
        return self

    sync, aio = httpx.HTTPTransport, httpx.AsyncHTTPTransport
    return [(sync, "__init__", init), (sync, "handle_request", handle), (sync, "close", nothing),
            (sync, "__enter__", enter), (sync, "__exit__", nothing),
            (aio, "__init__", init), (aio, "handle_async_request", handle_async), (aio, "aclose", nothing_async),
            (aio, "__aenter__", enter_async), (aio, "__aexit__", nothing_async)]


def _urllib_patches(transport: Transport) -> list:
    import http.client
    import urllib.error
    import urllib.request
    import urllib.response

    def open_(handler, req):
        try:
            status, headers, content, _ = transport.send(req.get_method(), req.full_url, dict(req.header_items()),
                                                         req.data, "urllib")
        except Unreachable as e:
            raise urllib.error.URLError(f"[Errno -2] Name or service not known ({e})") from None
        message = http.client.HTTPMessage()
        for key, value in headers.items():
            message[key] = value
        response = urllib.response.addinfourl(io.BytesIO(content), message, req.full_url, status)
        response.msg = _reason(status)  # the error processor raises HTTPError from code and msg
        return response

    patches = [(urllib.request.HTTPHandler, "http_open", open_)]
    if hasattr(urllib.request, "HTTPSHandler"):
        patches.append((urllib.request.HTTPSHandler, "https_open", open_))
    return patches


def _socket_patches() -> list:
    import socket

    def refuse(*args, **kwargs):
        raise OSError(101, "Network is unreachable (virtual execution: use requests, httpx or urllib)")

    return [(socket, "create_connection", refuse), (socket, "getaddrinfo", refuse),
            (socket.socket, "connect", refuse), (socket.socket, "connect_ex", refuse)]
