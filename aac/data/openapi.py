"""The `openapi:` source: an OpenAPI 3 spec (JSON or YAML) -> the source file of one web-domain
service, in the contract of the built-in services (aac/_data/web/*.py, read by aac/data/web.py).

    python -m aac.data.build source=openapi:SPEC out=svc.jsonl [scaffold=DIR]  # one spec, one row
    python -m aac.data.build source=openapi:FOLDER out=DIR    # each *.json/*.yaml/*.yml a service
    python -m aac.data.build source=web:DIR out=DIR2          # from service files (edited scaffolds)

Nothing is sent anywhere: the generated service answers every request from the spec alone, the same
way each time. Per operation (GET/POST/PUT/PATCH/DELETE of a path, under the first server URL's
path): a route whose parameters are the operation's path and query parameters (GET, DELETE) or the
properties of its JSON request body (POST, PUT, PATCH), typed by their schemas (an enum is a
`OneOf`, a minimum/maximum a `Range`); its success response is the response's example, else a value
made from its schema (a schema's example, default or first enum value; else a value of its type).
Errors: the service contract's own checks (400 for a missing, unknown or ill-typed parameter, 422 for
a value outside its enum or range, 401 without the key where the spec declares an API key header or
a bearer token, 404 for a path no route has); and where the operation declares a 404, path values
other than the example's answer that 404 (its example body, else its description). The docstring
(the gold documentation) is the spec's title and description, authentication and, per operation,
its route, summary, parameters, response and declared errors. Intents: one per operation with a
summary (or operationId), a requests-based gold function taking its required parameters and
returning the response's JSON body (True for a body-less success), tested on the example values
and, where the operation declares a 404, on an unknown id.

Operations the service model cannot hold are left out, each counted by reason (OPERATION_REASONS);
`scaffold=DIR` writes the generated file, to edit and build again with `web:DIR`.
"""

from __future__ import annotations

import json
import keyword
import re
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

from aac.data import web

if TYPE_CHECKING:
    from aac.env.instance import Instance

METHODS = ("get", "post", "put", "patch", "delete")
BODY_METHODS = ("post", "put", "patch")
SPEC_SUFFIXES = (".json", ".yaml", ".yml")
MAX_OPERATIONS = web.USER_MAX_ROUTES  # routes per generated service; the rest are left out
MAX_DEPTH = 6  # nesting of a value made from a schema (a recursive schema stops there)
OPERATION_REASONS = {
    "name": "a parameter name that is no Python identifier",
    "query_on_body": "query parameters on a POST/PUT/PATCH (the service model takes a JSON body)",
    "body": "a request body that is not a JSON object",
    "object_query": "an object-valued query or path parameter",
    "twice": "a parameter declared twice",
    "beyond": f"beyond the first {MAX_OPERATIONS} operations",
    "undeclared": "a path parameter the operation does not declare",
    "method": "a HEAD, OPTIONS or TRACE operation (not modelled)",
}
_FRAMEWORK = "from aac.sandbox.web_service import HTTPError, OneOf, Range, Service"
_RESERVED = {"api", "EXAMPLES", "CASES", "HTTPError", "OneOf", "Range", "Service", "requests"}  # the file's own names


class SpecError(ValueError):
    """A spec the generator cannot read (one line, naming the file)."""


class _Unfit(Exception):
    def __init__(self, key: str):
        super().__init__(OPERATION_REASONS[key])
        self.key = key


def load_spec(path: Path) -> dict:
    """The spec of a JSON or YAML file; SpecError for one that is neither, or no OpenAPI 3 spec."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise SpecError(f"{path}: not UTF-8 (byte {e.start})") from None
    except OSError as e:
        raise SpecError(f"{path}: cannot read ({e.strerror})") from None
    try:
        if path.suffix.lower() == ".json":
            spec = json.loads(text)
        else:
            import yaml

            spec = yaml.safe_load(text)
    except ValueError as e:  # json.JSONDecodeError and yaml.YAMLError's parse errors
        raise SpecError(f"{path}: not valid {'JSON' if path.suffix.lower() == '.json' else 'YAML'} ({e})") from None
    except Exception as e:  # noqa: BLE001 - yaml raises its own error types
        raise SpecError(f"{path}: not valid YAML ({str(e).splitlines()[0]})") from None
    if not isinstance(spec, dict) or not str(spec.get("openapi", "")).startswith("3"):
        raise SpecError(f"{path}: not an OpenAPI 3 spec (no 'openapi: 3.x' field)")
    if not isinstance(spec.get("paths"), dict) or not spec["paths"]:
        raise SpecError(f"{path}: the spec has no paths")
    return spec


def spec_files(path: Path) -> list[Path]:
    """The spec file, or the specs of a folder (name order)."""
    if path.is_dir():
        return sorted(p for p in path.iterdir() if p.suffix.lower() in SPEC_SUFFIXES)
    if not path.is_file():
        raise SpecError(f"{path}: no such file or folder")
    return [path]


# ---------------------------------------------------------------- schemas


class _Schemas:
    def __init__(self, spec: dict):
        self.spec = spec

    def deref(self, node: object, depth: int = 0) -> Any:
        """`node` with a local `$ref` followed (an unresolvable one is an empty schema)."""
        while isinstance(node, dict) and isinstance(node.get("$ref"), str) and depth < 20:
            target: Any = self.spec
            for part in node["$ref"].removeprefix("#/").split("/"):
                target = target.get(part.replace("~1", "/").replace("~0", "~")) if isinstance(target, dict) else None
            node, depth = target if isinstance(target, dict) else {}, depth + 1
        return node if isinstance(node, dict) else {}

    def kind(self, schema: dict) -> str:
        schema = self.deref(schema)
        kind = schema.get("type")
        if isinstance(kind, list):  # 3.1: ["string", "null"]
            kind = next((k for k in kind if k != "null"), None)
        if kind is None:
            kind = "object" if "properties" in schema or "allOf" in schema else "array" if "items" in schema else "string"
        return kind

    def value(self, schema: object, hint: str = "", depth: int = 0) -> Any:
        """A value of `schema`: its example, default or first enum value, else one of its type."""
        schema = self.deref(schema)
        for key in ("example", "default"):
            if key in schema:
                return schema[key]
        if isinstance(schema.get("examples"), list) and schema["examples"]:
            return schema["examples"][0]
        if isinstance(schema.get("enum"), list) and schema["enum"]:
            return schema["enum"][0]
        for key in ("oneOf", "anyOf"):
            if isinstance(schema.get(key), list) and schema[key]:
                return self.value(schema[key][0], hint, depth)
        kind = self.kind(schema)
        if depth >= MAX_DEPTH:
            return None
        if kind == "object":
            props = dict(self.properties(schema))
            return {name: self.value(sub, name, depth + 1) for name, sub in props.items()}
        if kind == "array":
            return [self.value(schema.get("items", {}), hint, depth + 1)]
        if kind in ("integer", "number"):
            low, high = schema.get("minimum"), schema.get("maximum")
            number = low if isinstance(low, int | float) else min(1, high) if isinstance(high, int | float) else 1
            return int(number) if kind == "integer" else float(number) + (0.5 if low is None and high is None else 0)
        if kind == "boolean":
            return True
        fmt = schema.get("format")
        return {"date": "2024-01-31", "date-time": "2024-01-31T12:00:00Z", "email": "ada@example.com",
                "uuid": "123e4567-e89b-42d3-a456-426614174000", "uri": "https://example.com/a"}.get(
            fmt, f"{hint or 'text'}-1")

    def properties(self, schema: dict) -> list[tuple[str, dict]]:
        """An object schema's properties (allOf merged), in order."""
        schema = self.deref(schema)
        out = dict(schema.get("properties") or {})
        for part in schema.get("allOf") or []:
            out.update(dict(self.properties(part)))
        return list(out.items())

    def required(self, schema: dict) -> set[str]:
        schema = self.deref(schema)
        out = set(schema.get("required") or [])
        for part in schema.get("allOf") or []:
            out |= self.required(part)
        return out

    def spec_of(self, schema: dict) -> str | None:
        """The route spec of a parameter (`int`, `OneOf('a', 'b')`, `Range(1, 9)`...); None for `str`."""
        schema = self.deref(schema)
        kind = self.kind(schema)
        enum = schema.get("enum")
        if kind == "string" and isinstance(enum, list) and enum and all(isinstance(v, str) for v in enum):
            return "OneOf(" + ", ".join(repr(v) for v in enum) + ")"
        if kind in ("integer", "number"):
            low, high = schema.get("minimum"), schema.get("maximum")
            python = "int" if kind == "integer" else "float"
            if isinstance(low, int | float) or isinstance(high, int | float):
                return f"Range({low!r}, {high!r}{', kind=float' if python == 'float' else ''})"
            return python
        return {"boolean": "bool", "array": "list", "object": "dict"}.get(kind)


# ---------------------------------------------------------------- operations


@dataclass
class Param:
    name: str  # on the wire
    python: str  # the handler's (and the intent's) parameter: a keyword gets a trailing _
    where: str  # path | query | body
    required: bool
    spec: str | None
    example: Any
    description: str = ""
    kind: str = "string"


@dataclass
class Operation:
    method: str  # upper case
    route: str  # with the server's path prefix
    handler: str
    summary: str
    description: str
    params: list[Param]
    status: int
    body: Any  # the success body (None: no body)
    not_found: tuple[Any] | None  # the 404 body, where the operation declares one
    errors: list[tuple[str, str]] = field(default_factory=list)  # declared error (status, description)
    intent: str = ""

    def path_with(self, values: dict[str, object]) -> str:
        return re.sub(r"\{(\w+)\}", lambda m: str(values[m.group(1)]), self.route)


def _snake(text: str) -> str:
    text = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", text)
    text = re.sub(r"[^A-Za-z0-9]+", "_", text).strip("_").lower()
    return ("op_" + text if not text or text[0].isdigit() else text)[:48]


def _sentence(text: object) -> str:
    flat = " ".join(str(text or "").split())
    return flat if not flat or flat[-1] in ".!?" else flat + "."


def _words(operation_id: str) -> str:
    return " ".join(_snake(operation_id).split("_")).capitalize()


def _json_example(media: dict, schemas: _Schemas) -> tuple[bool, Any]:
    """(found, value) of a media type object: its example, its first named example, else from its schema."""
    if "example" in media:
        return True, media["example"]
    examples = media.get("examples")
    if isinstance(examples, dict) and examples:
        first = schemas.deref(next(iter(examples.values())))
        if "value" in first:
            return True, first["value"]
    if "schema" in media:
        return True, schemas.value(media["schema"])
    return False, None


def _json_media(content: object) -> dict | None:
    if not isinstance(content, dict):
        return None
    for media, body in content.items():
        if "json" in media or media == "*/*":
            return body if isinstance(body, dict) else {}
    return None


def _operation(schemas: _Schemas, prefix: str, path: str, method: str, op: dict,
               shared: list, names: set[str]) -> Operation:
    params: list[Param] = []
    declared = {(p.get("in"), p.get("name")): p for p in map(schemas.deref, [*shared, *(op.get("parameters") or [])])}
    for (where, name), p in declared.items():
        if where not in ("path", "query") or not isinstance(name, str):
            continue  # headers and cookies: the key header is the service's own check
        if where == "query" and method in BODY_METHODS:
            raise _Unfit("query_on_body")
        schema = p.get("schema") or {}
        example = p["example"] if "example" in p else schemas.value(schema, name)
        params.append(Param(name, name, where, where == "path" or bool(p.get("required")), schemas.spec_of(schema),
                            example, _sentence(p.get("description")), schemas.kind(schema)))
    body = schemas.deref(op.get("requestBody"))
    if body and method in BODY_METHODS:
        media = _json_media(body.get("content"))
        schema = schemas.deref((media or {}).get("schema"))
        if media is None or schemas.kind(schema) != "object":
            raise _Unfit("body")
        _, example = _json_example(media, schemas)
        required = schemas.required(schema)
        for name, sub in schemas.properties(schema):
            value = example[name] if isinstance(example, dict) and name in example else schemas.value(sub, name)
            params.append(Param(name, name, "body", name in required and bool(body.get("required", True)),
                                schemas.spec_of(sub), value, _sentence(schemas.deref(sub).get("description")),
                                schemas.kind(sub)))
    if set(re.findall(r"\{([^}]*)\}", path)) - {p.name for p in params if p.where == "path"}:
        raise _Unfit("undeclared")
    for p in params:
        if not p.name.isidentifier():
            raise _Unfit("name")
        if keyword.iskeyword(p.name):
            p.python = p.name + "_"
        if p.where != "body" and p.kind == "object":
            raise _Unfit("object_query")
    if len({p.python for p in params}) < len(params):
        raise _Unfit("twice")
    responses = {str(k): schemas.deref(v) for k, v in (op.get("responses") or {}).items()}
    success = next((k for k in sorted(responses) if k.startswith("2")), None)
    status, result = (int(success), None) if success else (200, None)
    if success and status != 204:
        media = _json_media(responses[success].get("content"))
        if media is not None:
            result = _json_example(media, schemas)[1]
    not_found = None
    if "404" in responses:
        media = _json_media(responses["404"].get("content"))
        found, value = _json_example(media, schemas) if media is not None else (False, None)
        message = " ".join(str(responses["404"].get("description") or "not found").split())
        not_found = (value if found and value is not None else {"error": message},)
    errors = [(k, " ".join(str(v.get("description") or "").split())) for k, v in sorted(responses.items())
              if k[0] in "45"]
    handler = "handle_" + _snake(op.get("operationId") or f"{method}_{path}")
    while handler in names or handler.removeprefix("handle_") in _RESERVED:
        handler += "_"
    names.add(handler)
    summary = _sentence(op.get("summary") or (_words(op["operationId"]) if op.get("operationId") else ""))
    return Operation(method.upper(), prefix + path, handler, summary, _sentence(op.get("description")),
                     params, status, result, not_found, errors)


@dataclass
class Generated:
    name: str
    text: str  # the service file
    dropped: Counter  # operations left out, by reason
    operations: int


def _host(spec: dict, slug: str) -> tuple[str, str]:
    """(host, path prefix) of the first server URL; a host made from the title (`slug`) where there is none."""
    servers = spec.get("servers") or []
    url = urlparse(str(servers[0].get("url", ""))) if servers and isinstance(servers[0], dict) else urlparse("")
    host = (url.hostname or "").lower()
    if not re.fullmatch(r"[a-z0-9.-]+\.[a-z]+", host) or "{" in str(servers[0].get("url", "") if servers else ""):
        host = f"api.{slug}.example"
    return host, url.path.rstrip("/") if url.hostname else ""


def _auth(spec: dict, schemas: _Schemas, slug: str, dropped: Counter) -> tuple[str | None, str | None, bool]:
    """(key header, key, bearer) of the spec's first global security requirement it can model."""
    schemes = (spec.get("components") or {}).get("securitySchemes") or {}
    for requirement in spec.get("security") or []:
        for name in requirement or {}:
            scheme = schemas.deref(schemes.get(name))
            if scheme.get("type") == "apiKey" and scheme.get("in") == "header" and scheme.get("name"):
                return str(scheme["name"]), f"{slug}-key-1", False
            if scheme.get("type") == "http" and str(scheme.get("scheme", "")).lower() == "bearer":
                return "Authorization", f"{slug}-token-1", True
            dropped[f"security scheme {name!r} not modelled (the service asks no key)"] += 1
            return None, None, False
    return None, None, False


def generate(spec: dict, name: str) -> Generated:
    """The service file of a loaded spec (`name`: the service's file name, an identifier)."""
    schemas = _Schemas(spec)
    info = spec.get("info") or {}
    title = " ".join(str(info.get("title") or name).split())
    slug = _snake(title).replace("_", "-")[:24].strip("-") or "service"
    host, prefix = _host(spec, slug)
    dropped: Counter = Counter()
    key_header, key, bearer = _auth(spec, schemas, slug, dropped)
    operations: list[Operation] = []
    names: set[str] = set()
    for path, item in spec["paths"].items():
        item = schemas.deref(item)
        unmodelled = sum(isinstance(item.get(m), dict) for m in ("head", "options", "trace"))
        if unmodelled:  # a Counter keeps a key added 0: the summary would list it
            dropped[OPERATION_REASONS["method"]] += unmodelled
        for method in METHODS:
            if not isinstance(item.get(method), dict):
                continue
            if len(operations) >= MAX_OPERATIONS:
                dropped[OPERATION_REASONS["beyond"]] += 1
                continue
            try:
                operations.append(_operation(schemas, prefix, str(path), method, item[method],
                                             item.get("parameters") or [], names))
            except _Unfit as e:
                dropped[str(e)] += 1
    headers = {key_header: f"Bearer {key}" if bearer else key} if key_header else None
    text = _render(title, info, host, prefix, key_header, key, bearer, headers, operations)
    return Generated(name, text, dropped, len(operations))


# ---------------------------------------------------------------- resources: what a service keeps


_ITEM_ROUTE = re.compile(r"^(?P<collection>[^{}]*)/\{(?P<param>\w+)\}$")
LIMIT_NAMES = ("limit", "page_size", "per_page", "max_results")  # list parameters that cap the list's length
COUNT_NAMES = ("count", "total", "total_count")  # a list answer's fields that count its items
# the next id after a store's highest: numbers count up, a text's trailing digits do (PX104233 -> PX104234)
_NEXT_ID = '''def _next_id(store, example):
    if isinstance(example, int):
        return max([k for k in store if isinstance(k, int)], default=0) + 1
    digits = len(example) - len(example.rstrip("0123456789"))
    stem = example[: len(example) - digits]
    taken = [int(k[len(stem):]) for k in store if isinstance(k, str) and k.startswith(stem) and k[len(stem):].isdigit()]
    return f"{stem}{max(taken, default=0) + 1:0{max(digits, 1)}d}"'''


@dataclass
class Resource:
    """The items of one collection (`/tickets`, `/tickets/{ticket_id}`) the service keeps per episode: the
    spec's examples first; a POST to the collection adds one, a PUT or PATCH changes one, a DELETE removes
    one, a GET reads one or lists them (an unknown id: the 404 the spec declares)."""

    collection: str  # the collection's route
    param: Param  # the item route's path parameter
    key: str | None  # the field of an item that holds its id (None: the items do not show it)
    items: dict  # id -> item, the spec's examples
    ops: dict[str, Operation]  # role (list, create, read, change, delete) -> operation
    store: str = ""  # the service file's name of the items

    @property
    def name(self) -> str:
        return self.collection.rstrip("/").rsplit("/", 1)[-1] or "items"

    def doc(self) -> str:
        ids = ", ".join(str(k) for k in self.items)
        parts = [f"The service keeps its {self.name} by {self.param.name} (at the start: {ids})"]
        if "create" in self.ops:
            given = any(p.name == self.key for p in self.ops["create"].params)
            parts.append(f"POST {self.collection} adds one, which later requests see, under "
                         + (f"the {self.key} it is given" if given else f"the next {self.param.name} after the highest"))
        if "change" in self.ops:
            parts.append(f"{self.ops['change'].method} {self.collection}/{{{self.param.name}}} changes the fields given")
        if "delete" in self.ops:
            parts.append(f"DELETE {self.collection}/{{{self.param.name}}} removes it")
        if "list" in self.ops:
            parts.append(f"GET {self.collection} lists them")
        return "; ".join(parts) + f"; an unknown {self.param.name} is a 404."


def find_resources(operations: list[Operation]) -> list[Resource]:
    """The collections whose item route (`/x/{id}`, no other path parameter) the operations have, with
    the items the spec's examples show (an item's answer, a list's items)."""
    out: dict[str, Resource] = {}
    for op in operations:
        m = _ITEM_ROUTE.match(op.route)
        path = [p for p in op.params if p.where == "path"]
        if m and len(path) == 1 and path[0].name == m["param"]:
            role = {"GET": "read", "PUT": "change", "PATCH": "change", "DELETE": "delete"}[op.method]
            r = out.setdefault(m["collection"], Resource(m["collection"], path[0], None, {}, {}))
            r.ops.setdefault(role, op)
    for op in operations:
        r = out.get(op.route)
        role = {"GET": "list", "POST": "create"}.get(op.method)
        if r is not None and role and not any(p.where == "path" for p in op.params) and (role != "list" or _listed(op)):
            r.ops.setdefault(role, op)
    taken = {n.upper() for n in _RESERVED}
    for r in out.values():
        read, listed = r.ops.get("read"), _listed(r.ops.get("list"))
        shown = [read.body] if read and isinstance(read.body, dict) else []
        examples = shown + (listed[1] if listed else [])
        r.key = next((k for k in (r.param.name, "id") if examples and all(k in e for e in examples)), None)
        # the id the spec's requests use answers the item shown (or, shown nowhere, the first example)
        first = (shown or examples or [{}])[0]
        r.items = {_typed_id(r.param, r.param.example): dict(first)} if examples else {}
        for e in examples[len(shown):] if r.key else []:
            r.items.setdefault(_typed_id(r.param, e[r.key]), dict(e))
        r.store = re.sub(r"\W", "_", r.name).upper() or "ITEMS"
        while r.store in taken or not r.store.isidentifier():
            r.store += "_"
        taken.add(r.store)
    return [r for r in out.values() if r.items and ("read" in r.ops or "change" in r.ops or "delete" in r.ops)]


def _typed_id(param: Param, value: object) -> object:
    """An id as the route hands it to its handler: an integer parameter's as an int."""
    return int(value) if param.kind == "integer" and re.fullmatch(r"-?\d+", str(value)) else value


def _listed(op: Operation | None) -> tuple[str | None, list[dict]] | None:
    """(the field holding the items, or None for a bare list; the items) of a list operation's answer."""
    if op is None:
        return None
    if isinstance(op.body, list) and op.body and all(isinstance(e, dict) for e in op.body):
        return None, op.body
    if isinstance(op.body, dict):
        fields = [k for k, v in op.body.items() if isinstance(v, list) and v and all(isinstance(e, dict) for e in v)]
        if len(fields) == 1:
            return fields[0], op.body[fields[0]]
    return None


def _resource_route(op: Operation, r: Resource, role: str) -> str:
    """The handler of an operation on a resource (see Resource)."""
    specs = "".join(f", {p.python}={p.spec}" for p in op.params if p.spec)
    args = ", ".join([p.python for p in op.params if p.required] + [f"{p.python}=None" for p in op.params if not p.required])
    lines = [f"@api.route({op.method!r}, {op.route!r}{specs})", f"def {op.handler}({args}):"]
    ident = r.param.python
    given = [p for p in op.params if p.where == "body" and p.name != r.key]
    fields = "{" + ", ".join(f"{p.name!r}: {p.python}" for p in given) + "}"
    answer = (f"    return {op.status}, None" if op.status == 204 else None)
    if role in ("read", "change", "delete"):
        missing = op.not_found[0] if op.not_found else {"error": f"no such {r.param.name}"}
        lines += [f"    if {ident} not in {r.store}:", f"        return 404, {missing!r}"]
    if role == "read":
        lines.append(f"    return dict({r.store}[{ident}])")
    elif role == "change":
        lines += [f"    {r.store}[{ident}].update({{k: v for k, v in {fields}.items() if v is not None}})",
                  answer or f"    return {op.status}, dict({r.store}[{ident}])"]
    elif role == "delete":
        lines += [f"    del {r.store}[{ident}]", answer or f"    return {op.status}, {op.body!r}"]
    elif role == "create":  # the new item: the answer the spec shows for a POST, else an example item
        shown = isinstance(op.body, dict) and set(op.body) & set().union(*(e.keys() for e in r.items.values()))
        template = op.body if shown else next(iter(r.items.values()))
        own = next((p.python for p in op.params if p.name == r.key), None)
        new_id = f"_next_id({r.store}, {next(iter(r.items))!r})"
        lines += [f"    {ident} = {own} if {own} is not None else {new_id}" if own else f"    {ident} = {new_id}",
                  f"    item = {template!r}",
                  f"    item.update({{k: v for k, v in {fields}.items() if v is not None}})"]
        if r.key:
            lines.append(f"    item[{r.key!r}] = {ident}")
        lines += [f"    {r.store}[{ident}] = item", answer or f"    return {op.status}, dict(item)"]
    else:  # list: the items, filtered by the parameters that name their fields, cut at a limit
        field_names = set().union(*(e.keys() for e in r.items.values()))
        filters = [p for p in op.params if p.name in field_names]
        limit = next((p for p in op.params if p.name in LIMIT_NAMES and p.name not in field_names), None)
        test = " and ".join(f"({p.python} is None or item.get({p.name!r}) == {p.python})" for p in filters) or "True"
        lines.append(f"    found = [dict(item) for item in {r.store}.values() if {test}]")
        if limit:
            lines.append(f"    found = found if {limit.python} is None else found[:{limit.python}]")
        key, _ = _listed(op)
        body = "found" if key is None else "{" + ", ".join(
            f"{k!r}: " + ("found" if k == key else "len(found)" if k in COUNT_NAMES and type(v) is int else repr(v))
            for k, v in op.body.items()) + "}"
        lines.append(f"    return {body}" if op.status == 200 else f"    return {op.status}, {body}")
    return "\n".join(lines)


# ---------------------------------------------------------------- the file


def _doc(title: str, info: dict, host: str, key_header, key, bearer, operations: list[Operation],
         resources: list[Resource]) -> str:
    lines = [f"{title}, at https://{host}. {_sentence(info.get('description'))}".strip()]
    if key_header:
        sent = f"{key_header}: Bearer {key}" if bearer else f"{key_header}: {key}"
        lines.append(f"Every request needs the header {sent} (401 without it or with another key).")
    lines += [r.doc() for r in resources]
    for op in operations:
        parts = [f"{op.method} {op.route}: {op.summary} {op.description}".strip()]
        if op.params:
            parts.append(_sentence("Parameters: " + "; ".join(
                f"{p.name} ({p.where}, {p.kind}{', required' if p.required and p.where != 'path' else ''})"
                + (f" {p.description.rstrip('.')}" if p.description else "") for p in op.params)))
        shown = "no body" if op.body is None else json.dumps(op.body)
        shown = shown if len(shown) <= 200 else shown[:199] + "…"
        parts.append(f"Answers {op.status} with {shown}.")
        if op.errors:
            parts.append(_sentence("Errors: " + "; ".join(f"{s} {d.rstrip('.')}".strip() for s, d in op.errors)))
        lines.append(" ".join(parts))
    lines.append("A missing, unknown or ill-typed parameter is a 400; a value outside its allowed values or range a 422.")
    return _docstring_safe("\n".join(lines))


def _docstring_safe(text: str) -> str:
    """`text` as it can stand between triple quotes and read back the same."""
    return text.replace("\\", "\\\\").replace('"""', "'''")


def _route(op: Operation) -> str:
    specs = "".join(f", {p.python}={p.spec}" for p in op.params if p.spec)
    args = ", ".join([p.python for p in op.params if p.required] + [f"{p.python}=None" for p in op.params if not p.required])
    lines = [f"@api.route({op.method!r}, {op.route!r}{specs})", f"def {op.handler}({args}):"]
    known = [p for p in op.params if p.where == "path"]
    if op.not_found is not None and known:
        test = " or ".join(f"{p.python} != {p.example!r}" for p in known)
        lines += [f"    if {test}:", f"        return 404, {op.not_found[0]!r}"]
    lines.append(f"    return {op.status}, {op.body!r}" if op.status != 200 else f"    return {op.body!r}")
    return "\n".join(lines)


def _example_values(op: Operation) -> dict[str, Any]:
    return {p.python: p.example for p in op.params if p.required}


def _request(op: Operation, headers: dict | None) -> tuple:
    values = {p.name: p.example for p in op.params}
    path = op.path_with(values)
    params = {p.name: p.example for p in op.params if p.where != "path" and p.required} or None
    return (op.method, path, params, headers) if headers else (op.method, path, params) if params else (op.method, path)


def _intent(op: Operation, title: str, host: str, headers: dict | None, key_phrase: str) -> str:
    required = [p for p in op.params if p.required]
    args = ", ".join(p.python for p in required)
    url = "f" + repr(f"https://{host}" + re.sub(r"\{(\w+)\}", lambda m: "{" + next(
        p.python for p in op.params if p.name == m.group(1)) + "}", op.route))
    sent = {p.name: p.python for p in required if p.where != "path"}
    data = "{" + ", ".join(f"{k!r}: {v}" for k, v in sent.items()) + "}"
    call = [url]
    if sent:
        call.append(("json=" if op.method.lower() in BODY_METHODS else "params=") + data)
    if headers:
        call.append(f"headers={headers!r}")
    call.append("timeout=10")
    returns = "True if it succeeds, False otherwise" if op.body is None else "the JSON body of the response, or None if the request fails"
    failed = "False" if op.body is None else "None"
    done = "return True" if op.body is None else "return r.json()"
    doc = _docstring_safe(f"{op.summary} Use the {title} API{key_phrase}. Return {returns}.")
    return (f"def {op.handler.removeprefix('handle_')}({args}):\n"
            f'    """{doc}"""\n'
            "    import requests\n\n    try:\n"
            f"        r = requests.{op.method.lower()}({', '.join(call)})\n"
            "        r.raise_for_status()\n"
            f"        {done}\n"
            "    except requests.RequestException:\n"
            f"        return {failed}")


def _cases(op: Operation) -> list[tuple]:
    required = [p for p in op.params if p.required]
    first = tuple(p.example for p in required)
    cases = [first]
    path = [i for i, p in enumerate(required) if p.where == "path"]
    if op.not_found is not None and path:
        unknown = list(first)
        k = path[0]
        unknown[k] = unknown[k] + 1000 if type(unknown[k]) is int else f"{unknown[k]}-unknown"
        cases.append(tuple(unknown))
    return cases


def _render(title, info, host, prefix, key_header, key, bearer, headers, operations: list[Operation]) -> str:
    auth = f", key_header={key_header!r}, key={key!r}" + (", bearer=True" if bearer else "") if key_header else ""
    resources = find_resources(operations)
    doc = _doc(title, info, host, key_header, key, bearer, operations, resources)
    parts = [f'"""{doc}"""', _FRAMEWORK, f"api = Service({host!r}{auth})"]
    if any("create" in r.ops for r in resources):
        parts.append(_NEXT_ID)
    parts += [f"# {r.name} by {r.param.name}: the spec's examples, then what requests make of them\n{r.store} = {{\n"
              + "".join(f"    {k!r}: {v!r},\n" for k, v in r.items.items()) + "}" for r in resources]
    roles = {id(op): (r, role) for r in resources for role, op in r.ops.items()}
    parts += [_resource_route(op, *roles[id(op)]) if id(op) in roles else _route(op) for op in operations]
    gets = [op for op in operations if op.method == "GET"] + [op for op in operations if op.method != "GET"]
    examples = [_request(op, headers) for op in (gets * 2)[:2]]  # one operation: dropped for its count, not here
    parts.append("EXAMPLES = [\n" + "".join(f"    {q!r},\n" for q in examples) + "]")
    key_phrase = "" if not key_header else f" ({key_header} header {('Bearer ' + key) if bearer else key})"
    intents = [op for op in operations if op.summary]
    parts += [_intent(op, title, host, headers, key_phrase) for op in intents]
    parts.append("CASES = {\n" + "".join(f"    {op.handler.removeprefix('handle_')!r}: {_cases(op)!r},\n"
                                          for op in intents) + "}")
    return "\n\n\n".join(parts) + "\n"


def service_name(path: Path) -> str:
    """The generated file's name: the spec's stem as an identifier."""
    return _snake(path.stem) or "service"


def build(target: str, *, scaffold: str | Path | None = None,
          limit: int | None = None) -> tuple[list[Instance], web.WebSummary]:
    """Rows of `openapi:TARGET` (a spec, or a folder of specs: one service each): each spec's service
    file is written to `scaffold` (else a temporary folder) and built from there as `web:` builds
    (aac/data/web.py); operations left out are counted as `operation: REASON`. A spec that cannot
    be read is a SpecError, or, in a folder, counted as dropped."""
    files = spec_files(Path(target).expanduser())[:limit]
    summary = web.WebSummary(source=f"openapi:{target}")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(scaffold).expanduser() if scaffold else Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        written: list[Path] = []
        for path in files:
            try:
                spec = load_spec(path)
            except SpecError as e:
                if len(files) == 1:
                    raise
                summary.rows_in += 1
                summary.dropped[f"bad spec: {str(e).removeprefix(f'{path}: ')}"] += 1
                continue
            name = service_name(path)
            while folder / f"{name}.py" in written:
                name += "_"
            generated = generate(spec, name)
            for reason, n in generated.dropped.items():
                summary.dropped[f"operation: {reason}"] += n
            written.append(folder / f"{name}.py")
            written[-1].write_text(generated.text, encoding="utf-8")
        return web.build(written, web.WebConfig(max_routes=web.USER_MAX_ROUTES), summary)
