"""The builder's own-code sources (docs/sources.md): `module:` (a package's public functions, with what
they reach inlined), the folder output split by task id, and the builder's one-line errors."""

from __future__ import annotations

import json
import os
import re
import sys
import textwrap

import pytest

from aac.data.build import rows_from_source
from aac.data.sources import SourceError, read_tasks
from aac.env.rows import to_row
from aac.sandbox.pool import SandboxPool
from aac.sandbox.values import outputs_match
from tests.conftest import ROOT

# a small package written for this test: helpers in a private module, imported relatively under
# another name; a function of each kind the sandbox cannot run alone
PACKAGE = {
    "__init__.py": '''
        """Acme's tools."""
        from acme_tools.prices import net_price

        __all__ = ["net_price", "greet"]

        try:
            from ._version import VERSION
        except ImportError:
            VERSION = "0"


        def greet(name: str) -> str:
            """Greet a customer by name, title-cased."""
            return "Hello, " + name.title() + "!"
        ''',
    "_util.py": '''
        ROUND = 2


        def clamp(x, lo, hi):
            return max(lo, min(hi, x))
        ''',
    "prices.py": '''
        """Prices."""
        from __future__ import annotations

        import os
        from typing import TYPE_CHECKING

        from ._util import ROUND
        from ._util import clamp as _clamp

        if TYPE_CHECKING:
            from .orders import Order

        VAT = {"de": 0.19, "fr": 0.2}


        def net_price(gross: float, country: str) -> float:
            """Net price of a gross price for a country's VAT rate (other countries pay none).

            >>> net_price(119.0, "de")
            100.0
            """
            return round(gross / (1 + VAT.get(country, 0.0)), ROUND)


        def discount(price: float, percent: int) -> float:
            """Apply a percentage discount to a price, the percentage clamped to [0, 100]."""
            if percent > 50:
                percent = 50 + (percent - 50) // 2
            return round(price * (1 - _clamp(percent, 0, 100) / 100), ROUND)


        def env_rate(name):
            """A rate read from the environment."""
            return float(os.environ.get(name, "0"))


        async def fetch(x):
            """Fetch x."""
            return x


        class Cart:
            """A cart."""


        def _private(x):
            return x


        def total(*prices):
            """The sum of the prices."""
            return sum(prices)
        ''',
    "net.py": '''
        import urllib.request

        import acme_not_installed


        def fetch_page(url):
            """Fetch a page."""
            return urllib.request.urlopen(url).read()


        def use_missing(x):
            """Call a module that is not installed."""
            return acme_not_installed.f(x)


        def lazy(x):
            """Look a rate up through the package."""
            from . import prices
            return prices.VAT[x]
        ''',
    "tables.py": f'''
        CODES = {list(range(12000))!r}


        def code_of(i):
            """The code at position i of the big table."""
            return CODES[i]
        ''',
    "tests/test_prices.py": '''
        def test_nothing(x):
            """Not a function of the package."""
            return x
        ''',
}
KEPT = {"acme_tools.greet", "acme_tools.prices.net_price", "acme_tools.prices.discount", "acme_tools.prices.total"}
DROPPED = {"private (its name starts with _)": 1, "class: no public methods": 1, "an async function": 1, "unsafe import": 1,
           "network import (urllib)": 1, "imports a module that is not installed (acme_not_installed)": 1,
           "imports from its own package inside a function": 1, "reaches more than 50000 characters of code": 1}


@pytest.fixture(scope="module")
def package(tmp_path_factory):
    root = tmp_path_factory.mktemp("pkgroot")
    for name, text in PACKAGE.items():
        path = root / "acme_tools" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())
    with pytest.MonkeyPatch.context() as mp:
        mp.syspath_prepend(str(root))
        yield root


@pytest.fixture(scope="module")
def built(package):
    return rows_from_source("module:acme_tools")


def test_module_source_keeps_public_functions_and_counts_the_rest_by_reason(built):
    instances, summary = built
    assert {i.uid for i in instances} == KEPT
    assert summary.rows_in == len(KEPT) + sum(DROPPED.values()) and dict(summary.dropped) == DROPPED
    text = summary.text()
    assert all(f"dropped    1: {reason}" in text for reason in DROPPED)


def test_module_rows_carry_what_the_function_reaches_anonymised(built, package, monkeypatch):
    by_id = {i.uid: i for i in built[0]}
    row = by_id["acme_tools.prices.discount"]
    assert row.source == "module" and row.header == "def test_func(arg0, arg1):"
    # its docstring is the gold description (the function's name stays a word of it)
    assert row.description == "Apply a percentage discount to a price, the percentage clamped to [0, 100]."
    # the helper and the constant of the private module are inlined, renamed; nothing else came along
    assert "ROUND = 2" in row.code and "helper0" in row.code and "VAT" not in row.code
    assert not any(word in row.code for word in ("discount", "def clamp", "import os", "from .", "Apply"))
    net = by_id["acme_tools.prices.net_price"]
    assert ("(119.0, 'de')", 100.0) in net.train_examples + net.test_examples  # its doctest call is a seed
    # every stored example reproduces in the sandbox from the row's code alone (no package there)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p != str(package)])
    with SandboxPool(workers=1) as pool:
        jobs = [(inst.code, i, o) for inst in built[0] for i, o in inst.train_examples + inst.test_examples]
        results = pool.call_many([(code, i) for code, i, _ in jobs], timeout_s=5)
    assert all(r.ok and outputs_match(o, r.normalized) for (_, _, o), r in zip(jobs, results))


def test_one_function_is_built_as_in_its_package(built, package):
    (row,), summary = rows_from_source("module:acme_tools.prices.discount")
    assert summary.rows_in == 1
    assert to_row(row) == to_row(next(i for i in built[0] if i.uid == row.uid))  # seeded: the same row
    assert [t.task_id for t in read_tasks("module:acme_tools.prices._private")] == ["acme_tools.prices._private"]


def test_an_import_two_modules_share_is_kept_once_not_a_clash(tmp_path, monkeypatch):
    pkg = tmp_path / "acme_text"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "b.py").write_text("import re\n\n\ndef words(s):\n    return re.findall(r'[a-z]+', s)\n")
    (pkg / "a.py").write_text(textwrap.dedent('''
        import re

        from acme_text.b import words


        def count(s):
            """How many words and how many runs of digits s has.

            >>> count("ab 12 cd")
            (2, 1)
            """
            return len(words(s)), len(re.findall(r"[0-9]+", s))
        ''').lstrip())
    monkeypatch.syspath_prepend(str(tmp_path))
    (row,), summary = rows_from_source("module:acme_text.a.count")
    assert not summary.dropped and row.code.count("import re") == 1


@pytest.mark.parametrize("target, message", [
    ("acme_nowhere", "module:acme_nowhere: no importable module or function"),
    ("acme_tools.prices.nothing", "module:acme_tools.prices.nothing: acme_tools.prices defines no top-level function or class 'nothing'"),
    ("math", "module:math: math has no Python source"),
    ("", "source 'module' needs a name"),
])
def test_module_targets_that_name_nothing_are_one_line_errors(package, target, message):
    with pytest.raises(SourceError, match="^" + message.replace("(", r"\(")):
        list(read_tasks(f"module:{target}"))


def test_cli_splits_a_folder_by_task_id_and_fails_on_an_empty_build(package, run_module, tmp_path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(package), os.environ.get("PYTHONPATH", "")])}
    out = tmp_path / "rows"
    proc = run_module("aac.data.build", "source=module:acme_tools", f"out={out}", "test_fraction=0.3", env=env)
    assert proc.returncode == 0, proc.stderr
    assert "dropped    1: network import (urllib)" in proc.stdout and f"wrote 2 train and 2 test rows to {out}/" in proc.stdout
    ids = {split: [json.loads(line)["task_id"] for line in (out / f"{split}.jsonl").open()] for split in ("train", "test")}
    assert set(ids["train"]) | set(ids["test"]) == KEPT and not set(ids["train"]) & set(ids["test"])
    # nothing kept: a failure naming why, and no file
    proc = run_module("aac.data.build", "source=module:acme_tools.net", f"out={tmp_path / 'none.jsonl'}", env=env)
    assert proc.returncode == 1 and not (tmp_path / "none.jsonl").exists()
    assert proc.stderr.strip().splitlines() == [
        "aac: bad source: module:acme_tools.net: kept no row of 3 read (dropped: 1 network import (urllib), 1 imports a module that "
        "is not installed (acme_not_installed), 1 imports from its own package inside a function; see docs/sources.md); "
        "nothing written"]


# ---------------------------------------------------------------- openapi: and web:

SHELF = """
openapi: 3.0.3
info: {title: Shelf Inventory, description: Tracks the books of a small shop.}
servers: [{url: "https://api.shelf.example/v1"}]
security: [{apiKey: []}]
components:
  securitySchemes:
    apiKey: {type: apiKey, in: header, name: X-Api-Key}
  schemas:
    Book:
      type: object
      required: [isbn, title]
      properties:
        isbn: {type: string, example: "9780000000011"}
        title: {type: string, example: The Salt Road}
        stock: {type: integer, minimum: 0, example: 4}
paths:
  /books:
    get:
      operationId: listBooks
      summary: List the books in stock, optionally of one genre.
      parameters:
        - {name: genre, in: query, schema: {type: string, enum: [fiction, travel]}}
        - {name: limit, in: query, required: true, schema: {type: integer, minimum: 1, maximum: 50}}
      responses:
        "200":
          description: the books
          content:
            application/json:
              example: {books: [{isbn: "9780000000011", title: The Salt Road, stock: 4}], total: 1}
    post:
      operationId: addBook
      summary: Add a book to the inventory.
      requestBody:
        content: {application/json: {schema: {$ref: "#/components/schemas/Book"}}}
      responses:
        "201": {description: created, content: {application/json: {schema: {$ref: "#/components/schemas/Book"}}}}
  /books/{isbn}:
    parameters: [{name: isbn, in: path, required: true, schema: {type: string, example: "9780000000011"}}]
    get:
      operationId: getBook
      summary: Look a book up by its ISBN.
      responses:
        "200": {description: the book, content: {application/json: {schema: {$ref: "#/components/schemas/Book"}}}}
        "404":
          description: no book with that ISBN
          content: {application/json: {example: {code: NOT_FOUND, message: unknown ISBN}}}
    delete:
      operationId: removeBook
      summary: Remove a book from the inventory.
      responses:
        "204": {description: removed}
        "404": {description: no book with that ISBN}
  /search:
    get:
      summary: Search the catalogue.
      parameters: [{name: page-size, in: query, schema: {type: integer}}]
      responses: {"200": {description: ok}}
    post:
      summary: Save a search.
      parameters: [{name: name, in: query, schema: {type: string}}]
      responses: {"200": {description: ok}}
  /shelves/{shelfId}:
    get: {summary: A shelf., responses: {"200": {description: ok}}}
    head: {summary: Check a shelf., responses: {"200": {description: ok}}}
"""
# no server (a host is made from the title), a bearer token, no examples: values from the schemas
METEO = {
    "openapi": "3.1.0", "info": {"title": "Meteo Lite"},
    "components": {"securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}},
    "security": [{"bearer": []}],
    "paths": {
        "/stations/{id}": {"get": {
            "operationId": "getStation", "summary": "Get a weather station by id.",
            "parameters": [{"name": "id", "in": "path", "required": True, "schema": {"type": "integer", "minimum": 1}}],
            "responses": {"200": {"description": "a station", "content": {"application/json": {"schema": {
                "type": "object", "properties": {"id": {"type": "integer"}, "name": {"type": "string"},
                                                 "active": {"type": "boolean"}}}}}},
                          "404": {"description": "unknown station"}}}},
        "/readings": {"get": {
            "operationId": "listReadings", "summary": "List the latest readings of a station.",
            "parameters": [{"name": "station", "in": "query", "required": True, "schema": {"type": "integer"}},
                           {"name": "unit", "in": "query", "schema": {"type": "string", "enum": ["C", "F"]}}],
            "responses": {"200": {"description": "readings", "content": {"application/json": {"schema": {
                "type": "array", "items": {"type": "object", "properties": {
                    "at": {"type": "string", "format": "date-time"}, "value": {"type": "number"}}}}}}}}}},
    },
}
SHELF_KEY = {"X-Api-Key": "shelf-inventory-key-1"}


@pytest.fixture(scope="module")
def specs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("specs")
    (folder / "shelf.yaml").write_text(SHELF)
    (folder / "meteo.json").write_text(json.dumps(METEO))
    scaffold = folder.parent / (folder.name + "_scaffold")
    instances, summary = rows_from_source(f"openapi:{folder}", scaffold=str(scaffold))
    return folder, scaffold, instances, summary


def test_openapi_specs_become_services_and_left_out_operations_are_counted(specs):
    _, scaffold, instances, summary = specs
    assert summary.rows_in == 2 and summary.rows_kept == 2
    assert dict(summary.dropped) == {"operation: a parameter name that is no Python identifier": 1,
                                     "operation: query parameters on a POST/PUT/PATCH (the service model takes a JSON body)": 1,
                                     "operation: a path parameter the operation does not declare": 1,
                                     "operation: a HEAD, OPTIONS or TRACE operation (not modelled)": 1}
    by_id = {i.uid: i for i in instances}
    shelf, meteo = by_id["web/shelf"], by_id["web/meteo"]
    assert shelf.domain == "web" and shelf.header == (
        "service api.shelf.example: GET /v1/books; POST /v1/books; GET /v1/books/{isbn}; DELETE /v1/books/{isbn}")
    assert meteo.header == "service api.meteo-lite.example: GET /stations/{id}; GET /readings"
    # the spec's words are the gold documentation; the examples answer what the spec shows
    assert "Look a book up by its ISBN." in shelf.description and "X-Api-Key: shelf-inventory-key-1" in shelf.description
    assert shelf.train_examples[0][1] == [200, {"books": [{"isbn": "9780000000011", "title": "The Salt Road", "stock": 4}],
                                                "total": 1}]
    assert meteo.train_examples == [
        ("('GET', '/stations/1', None, {'Authorization': 'Bearer meteo-lite-token-1'})",
         [200, {"id": 1, "name": "name-1", "active": True}]),
        ("('GET', '/readings', {'station': 1}, {'Authorization': 'Bearer meteo-lite-token-1'})",
         [200, [{"at": "2024-01-31T12:00:00Z", "value": 1.5}]])]
    # one intent per operation with a summary, tested on the example values and an unknown id
    intents = {json.dumps(lit): out for lit, out in shelf.test_examples}
    assert len(intents) == 4 and sorted(p.name for p in scaffold.iterdir()) == ["meteo.py", "shelf.py"]


def test_built_service_rows_train_and_evaluate_through_the_env_data_path(specs, tmp_path):
    from aac.config import compose
    from aac.data.build import write_rows
    from aac.datasets import load_instances
    from aac.env.domains import pool_preload
    from aac.env.protocol import Episode, ProtocolConfig, sandbox_caller

    _, _, instances, summary = specs
    write_rows(str(tmp_path / "svc"), instances, summary, test_fraction=0.5)
    cfg = compose("env.domain=web", f"env.data={tmp_path / 'svc'}")
    rows = {split: load_instances(cfg.env.data, split=split, on_bad_row="raise", domain=cfg.env.domain)
            for split in (cfg.env.split, cfg.eval.split)}
    assert sorted(i.uid for rs in rows.values() for i in rs) == ["web/meteo", "web/shelf"]
    shelf = next(i for rs in rows.values() for i in rs if i.uid == "web/shelf")
    with SandboxPool(workers=1, preload=pool_preload("web")) as pool:
        episode = Episode(shelf, ProtocolConfig(max_steps=40), sandbox_caller(pool))
        seen = []
        for query in (f"('GET', '/v1/books/9780000000011', None, {SHELF_KEY})",
                      f"('GET', '/v1/books/123', None, {SHELF_KEY})",  # the declared 404 and its body
                      f"('GET', '/v1/books', {{'limit': 5, 'genre': 'poetry'}}, {SHELF_KEY})",  # not in the enum
                      f"('GET', '/v1/books', None, {SHELF_KEY})",  # limit is required
                      "('DELETE', '/v1/books/9780000000011')"):  # no key
            episode.step("I will send it.")
            rec = episode.step(f"Input: {query}")
            seen.append(rec.call.output_repr)
            episode.step("Decision: NO\nSummary: books")
    assert seen == ['200 {"isbn": "9780000000011", "title": "The Salt Road", "stock": 4}',
                    '404 {"code": "NOT_FOUND", "message": "unknown ISBN"}',
                    '422 {"error": "parameter \'genre\' must be one of: fiction, travel"}',
                    '400 {"error": "missing required parameter \'limit\' (in the query string)", "allowed": ["genre", "limit"]}',
                    '401 {"error": "missing X-Api-Key header"}']


def test_a_generated_service_keeps_what_requests_make_for_its_episode(tmp_path):
    # examples/openapi/tickets.yaml: a collection with create, read, change, delete and a list; played as the
    # agent plays it (the web domain's episode, the sandbox's virtual transport), each episode on its own service
    from aac.env.domains import pool_preload
    from aac.env.protocol import Episode, ProtocolConfig, sandbox_caller

    (row,), _ = rows_from_source(f"openapi:{ROOT / 'examples' / 'openapi' / 'tickets.yaml'}")
    assert "POST /api/tickets adds one, which later requests see, under the next ticket_id" in row.description

    def play(episode, queries):
        seen = []
        for query in queries:
            episode.step("I will send it.")
            seen.append(episode.step(f"Input: {query}").call.output_repr)
            episode.step("Decision: NO\nSummary: tickets")
        return seen

    with SandboxPool(workers=1, preload=pool_preload("web")) as pool:
        cfg = ProtocolConfig(max_steps=60)
        a, b = Episode(row, cfg, sandbox_caller(pool)), Episode(row, cfg, sandbox_caller(pool))
        assert play(a, ["('POST', '/api/tickets', {'title': 'Scanner jams', 'priority': 'high'})",
                        "('GET', '/api/tickets/43')",
                        "('PATCH', '/api/tickets/43', {'status': 'closed'})",
                        "('GET', '/api/tickets', {'status': 'closed'})",
                        "('DELETE', '/api/tickets/41')",
                        "('GET', '/api/tickets/41')",
                        "('POST', '/api/tickets', {'title': 'Badge reader'})"]) == [
            '201 {"ticket_id": 43, "title": "Scanner jams", "status": "open", "priority": "high"}',
            '200 {"ticket_id": 43, "title": "Scanner jams", "status": "open", "priority": "high"}',
            '200 {"ticket_id": 43, "title": "Scanner jams", "status": "closed", "priority": "high"}',
            '200 {"tickets": [{"ticket_id": 43, "title": "Scanner jams", "status": "closed", "priority": "high"}], "total": 1}',
            "204",
            '404 {"error": "ticket not found"}',  # the spec's declared 404
            '201 {"ticket_id": 44, "title": "Badge reader", "status": "open", "priority": "low"}']
        # another episode starts from the spec's tickets: a's never happened there
        assert play(b, ["('GET', '/api/tickets/43')", "('GET', '/api/tickets/41')"]) == [
            '404 {"error": "ticket not found"}',
            '200 {"ticket_id": 41, "title": "Printer offline", "status": "open", "priority": "high"}']


def test_an_edited_scaffold_builds_again_from_its_folder(specs, tmp_path):
    _, scaffold, _, _ = specs
    folder = tmp_path / "services"
    folder.mkdir()
    text = (scaffold / "meteo.py").read_text()
    assert "'name': 'name-1'" in text
    (folder / "meteo.py").write_text(text.replace("'name': 'name-1'", "'name': 'Oslo Blindern'"))
    (row,), summary = rows_from_source(f"web:{folder}")
    assert summary.source == f"web:{folder}" and row.train_examples[0][1] == [
        200, {"id": 1, "name": "Oslo Blindern", "active": True}]


@pytest.mark.parametrize("text, message", [
    ("openapi: [", "not valid YAML"),
    ("swagger: '2.0'\npaths: {}\n", "not an OpenAPI 3 spec"),
    ("openapi: 3.0.0\ninfo: {title: x}\n", "the spec has no paths"),
])
def test_a_bad_spec_is_a_one_line_error(tmp_path, text, message):
    (tmp_path / "bad.yaml").write_text(text)
    with pytest.raises(ValueError, match=message) as info:
        rows_from_source(f"openapi:{tmp_path / 'bad.yaml'}")
    assert str(info.value).startswith(str(tmp_path / "bad.yaml")) and "\n" not in str(info.value)


# ---------------------------------------------------------------- no silent split


def test_a_single_file_is_refused_unless_the_split_is_all(built, tmp_path):
    from aac.data.build import write_rows
    from aac.datasets import load_instances
    from aac.env.instance import DatasetError

    instances, summary = built
    write_rows(str(tmp_path / "rows.jsonl"), instances, summary)
    write_rows(str(tmp_path / "set"), instances, summary, test_fraction=0.4)
    for split in ("train", "test"):
        with pytest.raises(DatasetError) as info:
            load_instances(tmp_path / "rows.jsonl", split=split)
        assert str(info.value).startswith(f"{tmp_path / 'rows.jsonl'}: one file has no train/test split")
        assert "a folder with train.jsonl and test.jsonl" in str(info.value) and "env.split=all" in str(info.value)
    assert sorted(i.uid for i in load_instances(tmp_path / "rows.jsonl", split="all")) == sorted(KEPT)
    # a folder's `all` is its train rows, then its test rows
    train, test = (load_instances(tmp_path / "set", split=s) for s in ("train", "test"))
    assert (len(train), len(test)) == (2, 2)  # --test-fraction 0.4; the default 0.2 gives (3, 1):
    write_rows(str(tmp_path / "default"), instances, summary)
    assert len(load_instances(tmp_path / "default", split="test")) == 1
    assert [i.uid for i in load_instances(tmp_path / "set", split="all")] == [i.uid for i in train + test]
    # training with a periodic held-out evaluation refuses at its start, not at the first evaluation
    from aac.config import compose
    from aac.training.held_out import HeldOutEval

    knowingly = (f"env.data={tmp_path / 'rows.jsonl'}", "env.split=all", "eval_every=5")
    with pytest.raises(DatasetError, match="one file has no train/test split, so split 'test'"):
        HeldOutEval(compose(*knowingly), run=None)
    HeldOutEval(compose(*knowingly, "eval.split=all"), run=None)
    # aac.eval refuses in one line, before any engine starts
    from aac.cli import rewrite_aliases
    from aac.errors import entry_point
    from aac.eval.__main__ import task

    with pytest.raises(SystemExit, match=f"^aac: bad data: {tmp_path / 'rows.jsonl'}: one file has no train/test split"):
        entry_point(task)(compose(*rewrite_aliases([f"data={tmp_path / 'rows.jsonl'}", f"out_dir={tmp_path / 'run'}", "engine=hf"]),
                     config_name="eval_config"))


def test_undecodable_bytes_and_bad_json_lines_name_their_file_and_line(tmp_path):
    rows = tmp_path / "rows.jsonl"
    good = json.dumps({"code": "def f(x):\n    return x\n", "entry_point": "f"})
    rows.write_bytes(good.encode() + b'\n{"code": "caf\xe9"}\n')
    with pytest.raises(SourceError, match="^" + re.escape(f"{rows}:2: not UTF-8 (byte 0xe9 at column 14); save the file as UTF-8")):
        list(read_tasks(f"jsonl:{rows}"))
    rows.write_text(good + "\n\n{oops\n")
    with pytest.raises(SourceError, match="^" + re.escape(f"{rows}:3: not a JSON line")):
        list(read_tasks(f"jsonl:{rows}"))
