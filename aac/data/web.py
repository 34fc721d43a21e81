"""The web builder: service models -> rows of the `web` domain, without an LLM.

    python -m aac.data.web out=web.jsonl [limit=N]
    python -m aac.data.web verify=web.jsonl   # re-run every stored exchange and gold service call
    python -m aac.data.build source=web:DIR out=DIR2   # a folder of your own service files (docs/sources.md)

Sources: aac/_data/web/*.py, one service each, written in our own words after the shapes of public
APIs (weather, currency, geocoding, books, todo, payments, search, ...). A file holds the gold
documentation as its docstring, the service (a `Service` of aac/sandbox/web_service.py and its
routes), EXAMPLES (the two example exchanges every episode starts with: request tuples), the
held-out intents as plain functions (the docstring is the intent, the body the gold service-call
function, written with requests, httpx or urllib) and CASES (each intent's test inputs, a success
first).

Per service, all in the sandbox (nothing is sent anywhere: aac/sandbox/web_transport.py): read its
host and routes (2 to 6); run the example requests; run each gold function on each of its inputs on
the virtual network, keeping its return values and the interface of its first request on the first
input (host, route, method, parameter names: what Mock and ParamF1 compare against); run everything
a second time (a service must be deterministic). A service is dropped, with its reason counted, when
a gold function raises or returns nothing on its first input, its request resolves to no route, or a
second run differs. The summary counts services, endpoints, intents and the routes the stored
examples reach (the exchanges and the gold calls), per service.
"""

from __future__ import annotations

import ast
import sys
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import ClassVar

from aac.cli import Key, UsageError, count, parse_keys
from aac.data.splits import TEST_FRACTION, split_instances
from aac.data.summary import BuildSummary, mean, write_built
from aac.env.domains import get_domain, pool_preload
from aac.env.domains.web import function_name, parse_intent, parse_request, program, render_header
from aac.env.instance import Instance, load_instances
from aac.env.prompts import in_context_prompt
from aac.errors import entry_point
from aac.sandbox.pool import SandboxPool
from aac.sandbox.values import canonical_json

SOURCES = Path(__file__).resolve().parents[1] / "_data" / "web"
DOMAIN = get_domain("web")
_FRAMEWORK_IMPORT = "aac.sandbox.web_service"  # the sources' import, for linting: the sandbox supplies the names


USER_MAX_ROUTES = 20  # routes a user's service (web:DIR, openapi:SPEC) may have: the header lists them all


@dataclass(frozen=True)
class WebConfig:
    seed: int = 0
    min_routes: int = 2
    max_routes: int = 6  # the built-in services'; a user's: USER_MAX_ROUTES
    min_intents: int = 2
    call_timeout_s: float = 5.0  # the first call of a sandbox child imports the clients


@dataclass(frozen=True)
class Intent:
    name: str
    text: str  # the task in words (the function's docstring)
    signature: str  # def name(args):
    gold: str  # the gold function, without its docstring
    inputs: list[list]


@dataclass(frozen=True)
class ServiceSource:
    name: str
    code: str  # the service as stored: without the docstring, the framework import, examples and intents
    description: str
    examples: list[tuple]  # request tuples
    intents: list[Intent]


def _lines(node: ast.stmt) -> tuple[int, int]:
    decorators = getattr(node, "decorator_list", [])
    return (decorators[0].lineno if decorators else node.lineno), node.end_lineno


def read_service(path: Path) -> ServiceSource:
    """The parts of one service file; ValueError (one line) for a file that is not one."""
    where = path.name
    text = path.read_text(encoding="utf-8")
    tree = ast.parse(text)
    lines = text.splitlines()
    description = ast.get_docstring(tree)
    assigns = {n.targets[0].id: n for n in tree.body
               if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name)}
    if not description or "EXAMPLES" not in assigns or "CASES" not in assigns:
        raise ValueError(f"{where}: needs a docstring, EXAMPLES and CASES")
    cases = ast.literal_eval(assigns["CASES"].value)
    examples = [parse_request(repr(q)) for q in ast.literal_eval(assigns["EXAMPLES"].value)]
    if len(examples) != 2:
        raise ValueError(f"{where}: EXAMPLES must hold 2 requests")
    functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    intents, dropped = [], {id(tree.body[0]), id(assigns["CASES"]), id(assigns["EXAMPLES"])}
    for name, inputs in cases.items():
        fn = functions.get(name)
        doc = ast.get_docstring(fn) if fn else None
        if not doc:
            raise ValueError(f"{where}: CASES names {name}, which is no function with a docstring")
        start, end = _lines(fn)
        body = fn.body[1] if len(fn.body) > 1 else fn.body[0]
        signature = f"def {name}({ast.unparse(fn.args)}):"
        gold = "\n".join([*lines[start - 1: fn.body[0].lineno - 1], *lines[body.lineno - 1: end]])
        intents.append(Intent(name, " ".join(doc.split()), signature, gold + "\n", [list(a) for a in inputs]))
        dropped.add(id(fn))
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module == _FRAMEWORK_IMPORT:
            dropped.add(id(node))
    kept = ["\n".join(lines[s - 1: e]) for s, e in (_lines(n) for n in tree.body if id(n) not in dropped)]
    code = "\n\n".join(kept) + "\n"
    return ServiceSource(path.stem, code, " ".join(description.split()), examples, intents)


def service_files(root: Path = SOURCES) -> list[Path]:
    return sorted(root.glob("*.py"))


# ---------------------------------------------------------------- building one service


@dataclass
class ServiceResult:
    name: str
    instance: Instance | None = None
    reason: str | None = None  # why the service was dropped
    routes: list[tuple[str, str]] = field(default_factory=list)
    covered: set[tuple[str, str]] = field(default_factory=set)  # routes the stored examples reach


class _Dropped(Exception):
    pass


def _run(pool: SandboxPool, source: str, literal: str, cfg: WebConfig):
    result = pool.call(source, literal, timeout_s=cfg.call_timeout_s)
    if not result.ok:
        raise _Dropped(f"sandbox: {result.error.split(':', 1)[0]}")
    return result.normalized


def _gold_calls(src: ServiceSource, pool: SandboxPool, cfg: WebConfig) -> list[tuple[Intent, list]]:
    """Each intent with its gold function's result on each input ({value, raised, requests})."""
    out = []
    for intent in src.intents:
        source = program(src.code, "call", intent.gold, intent.name)
        out.append((intent, [_run(pool, source, repr(tuple(args)), cfg) for args in intent.inputs]))
    return out


def _interface(request: dict) -> dict:
    return {"host": request["host"], "route": request["route"], "method": request["method"],
            "params": request["params"]}


def build_service(src: ServiceSource, pool: SandboxPool, cfg: WebConfig = WebConfig()) -> ServiceResult:
    res = ServiceResult(src.name)
    try:
        about = _run(pool, program(src.code, "describe"), "()", cfg)
        res.routes = [tuple(r) for r in about["routes"]]
        if not cfg.min_routes <= len(res.routes) <= cfg.max_routes:
            raise _Dropped(f"not {cfg.min_routes} to {cfg.max_routes} endpoints")
        if len(src.intents) < cfg.min_intents:
            raise _Dropped(f"fewer than {cfg.min_intents} intents")
        recorded = _run(pool, program(src.code, "record"), repr(tuple(src.examples)), cfg)
        calls = _gold_calls(src, pool, cfg)
        if (recorded != _run(pool, program(src.code, "record"), repr(tuple(src.examples)), cfg)
                or calls != _gold_calls(src, pool, cfg)):
            raise _Dropped("not reproduced on a second run")
        requests = list(recorded["requests"])
        tests = []
        for intent, results in calls:
            first = results[0]
            if first["raised"] or first["value"] is None or not first["requests"]:
                raise _Dropped("a gold function fails on its first input")
            if any(r["raised"] for r in results):
                raise _Dropped("a gold function raises")
            if first["requests"][0]["route"] is None:
                raise _Dropped("a gold request reaches no route")
            requests += [q for r in results for q in r["requests"]]
            literal = repr({"intent": intent.text, "signature": intent.signature, "gold": intent.gold,
                            "inputs": intent.inputs})
            tests.append((literal, {"outputs": [r["value"] for r in results],
                                    "interface": _interface(first["requests"][0])}))
    except _Dropped as e:
        res.reason = str(e)
        return res
    res.covered = {(q["method"], q["route"]) for q in requests if q["route"] is not None} & set(res.routes)
    context = [(repr(q), result) for q, result in zip(src.examples, recorded["results"])]
    inst = Instance(uid=f"web/{src.name}", source="web", code=src.code, description=src.description,
                    header=render_header(about["host"], res.routes), train_examples=context,
                    test_examples=tests, all_examples=[(q, r, None) for q, r in context], domain=DOMAIN.name)
    DOMAIN.check_instance(inst)
    direct = in_context_prompt(inst, wording=DOMAIN.wording("paper"), context=DOMAIN.context(inst))[-1]["content"]
    res.instance = replace(inst, direct_prompt=direct)
    return res


# ---------------------------------------------------------------- the whole set


@dataclass
class WebSummary(BuildSummary):
    """Per kept service: its endpoints (its held-out intents are its test examples) and the share of its routes the stored examples
    reach (route coverage stands where the other builders measure branch coverage)."""

    source: str = "web"
    endpoints: list[int] = field(default_factory=list)
    inputs: int = 0
    coverage: dict[str, float] = field(default_factory=dict)  # service -> share of its routes reached

    unit: ClassVar[str] = "services"
    measures_coverage: ClassVar[bool] = False

    def details(self) -> dict:
        cov = list(self.coverage.values())
        return {"endpoints": sum(self.endpoints), "endpoints_per_service": dict(sorted(Counter(self.endpoints).items())),
                "intents": sum(self.test_examples), "intent_inputs": self.inputs, "mean_route_coverage": mean(cov),
                "rows_at_full_route_coverage": sum(c >= 1.0 for c in cov), "route_coverage": self.coverage}

    def detail_lines(self) -> list[str]:
        d = self.details()
        cov = "n/a" if d["mean_route_coverage"] is None else f"{100 * d['mean_route_coverage']:.1f}%"
        return [f"  endpoints: {d['endpoints']} ({d['endpoints_per_service']} services by endpoint count)",
                f"  held-out intents: {d['intents']} ({d['intent_inputs']} test inputs)",
                f"  routes reached by the stored examples: mean {cov}; services at 100%: "
                f"{d['rows_at_full_route_coverage']}"]


def build(files: Iterable[Path] | None = None, cfg: WebConfig = WebConfig(),
          summary: WebSummary | None = None) -> tuple[list[Instance], WebSummary]:
    """Rows of the service files (default: the built-in ones), counted into `summary` (default: a new one)."""
    start = time.monotonic()
    summary = WebSummary() if summary is None else summary
    instances = []
    with SandboxPool(workers=1, preload=pool_preload(DOMAIN)) as pool:
        for path in service_files() if files is None else files:
            summary.rows_in += 1
            try:
                res = build_service(read_service(path), pool, cfg)
            except (ValueError, SyntaxError) as e:
                summary.dropped[f"bad source {path.name}: {e}"] += 1
                continue
            if res.instance is None:
                summary.dropped[res.reason] += 1
                continue
            instances.append(res.instance)
            summary.keep(res.instance)
            summary.endpoints.append(len(res.routes))
            summary.inputs += sum(len(parse_intent(lit)["inputs"]) for lit, _ in res.instance.test_examples)
            summary.coverage[res.name] = len(res.covered) / len(res.routes)
    summary.seconds = time.monotonic() - start
    return instances, summary


def build_folder(folder: str | Path, *, limit: int | None = None,
                 summary: WebSummary | None = None) -> tuple[list[Instance], WebSummary]:
    """Rows of a folder of service files (`source=web:DIR`: the built-in services' contract, e.g.
    the scaffolds `source=openapi:SPEC scaffold=DIR` writes), up to USER_MAX_ROUTES routes each."""
    files = service_files(Path(folder).expanduser())
    if not files:
        raise ValueError(f"{folder}: no service files (*.py) in this folder")
    summary = WebSummary(source=f"web:{folder}") if summary is None else summary
    return build(files[:limit], WebConfig(max_routes=USER_MAX_ROUTES), summary)


def build_splits(cfg: WebConfig = WebConfig()) -> tuple[dict[str, list[Instance]], dict, str]:
    """`builtin:web`: {train, test} (seeded 80/20 by service), its meta and the summary text."""
    instances, summary = build(cfg=cfg)
    splits = split_instances(instances, cfg.seed)
    meta = {"seed": cfg.seed, "test_fraction": TEST_FRACTION, "domain": DOMAIN.name, **summary.as_dict(),
            "sizes": {split: len(rows) for split, rows in splits.items()}}
    return splits, meta, summary.text()


def verify(instances: Iterable[Instance], *, timeout_s: float = 5.0) -> dict:
    """Re-run every stored exchange and gold service call in a fresh sandbox; the rows that differ."""
    instances = list(instances)
    bad = []
    calls = 0
    with SandboxPool(workers=1, preload=pool_preload(DOMAIN)) as pool:
        for inst in instances:
            literals = [lit for lit, _ in inst.train_examples]
            got = pool.call(program(inst.code, "record"), repr(tuple(parse_request(q) for q in literals)),
                            timeout_s=timeout_s)
            same = got.ok and canonical_json(got.normalized["results"]) == canonical_json(
                [r for _, r in inst.train_examples])
            for literal, expected in inst.test_examples:
                intent = parse_intent(literal)
                source = program(inst.code, "call", intent["gold"], function_name(intent["signature"]))
                for k, (args, output) in enumerate(zip(intent["inputs"], expected["outputs"])):
                    r = pool.call(source, repr(tuple(args)), timeout_s=timeout_s)
                    calls += 1
                    same = same and r.ok and canonical_json(r.normalized["value"]) == canonical_json(output)
                    if k == 0 and r.ok:
                        same = same and bool(r.normalized["requests"]) and _interface(
                            r.normalized["requests"][0]) == expected["interface"]
            if not same:
                bad.append(inst.uid)
    return {"rows": len(instances), "exchanges": sum(len(i.train_examples) for i in instances),
            "intents": sum(len(i.test_examples) for i in instances), "gold_calls": calls,
            "rows_not_reproduced": sorted(bad)}


USAGE = "usage: python -m aac.data.web out=FILE.jsonl [limit=N] | verify=FILE"
KEYS = (Key("out", "output .jsonl or .parquet (PAU schema + task_id, source, domain)"),
        Key("limit", "build only the first N services", count),
        Key("verify", "re-run every stored exchange and gold call of FILE and exit"))


@entry_point
def main(argv: list[str] | None = None) -> int:
    a = parse_keys(argv, KEYS, USAGE, doc=__doc__.split("\n\n")[0])
    if a.verify:
        result = verify(load_instances(a.verify, on_bad_row="raise", check=DOMAIN.check_instance, domain=DOMAIN.name))
        print(f"{a.verify}: {result['rows']} rows, {result['exchanges']} exchanges and {result['intents']} intents "
              f"({result['gold_calls']} gold calls) re-run, {len(result['rows_not_reproduced'])} rows not reproduced "
              f"{result['rows_not_reproduced'][:10]}")
        return 1 if result["rows_not_reproduced"] else 0
    if not a.out:
        raise UsageError(f"out= is required (or verify=FILE); {USAGE}")
    files = service_files()[: a.limit] if a.limit else None
    instances, summary = build(files)
    write_built(a.out, instances, summary.text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
