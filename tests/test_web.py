"""The web domain: the request grammar, a service's errors as observations, the virtual transport under
requests / httpx / urllib, no socket for code under evaluation, the builder's rows re-verified, and
service-call scoring (Mock, Robust, ParamF1, output match) with its reference rows in the report."""

from __future__ import annotations

import json
import socket
import threading

import pytest

from aac.data.web import SOURCES, build_service, read_service, verify
from aac.env.domains import get_domain, pool_preload
from aac.env.domains.web import interface, parse_intent, program
from aac.env.protocol import Episode, ProtocolConfig, sandbox_caller
from aac.sandbox.pool import SandboxPool
from aac.sandbox.values import InputParseError
from aac.scorers.codematch import CoderTask
from aac.scorers.servicecall import ServiceCallMatcher, is_robust_code, param_f1

DOMAIN = get_domain("web")
KEY = {"X-Key": "k-1"}

# a small service of our own: a key, a rate limit of 8, a path parameter, a body method
TINY = '''"""Tiny: items. Key header X-Key: k-1."""

from aac.sandbox.web_service import HTTPError, Range, Service

api = Service("api.tiny.example", key_header="X-Key", key="k-1", rate_limit=8)

ITEMS = {1: "pen"}


@api.route("GET", "/v1/items/{item_id}", item_id=int)
def get_item(item_id):
    if item_id not in ITEMS:
        raise HTTPError(404, f"no item {item_id}")
    return {"id": item_id, "name": ITEMS[item_id]}


@api.route("POST", "/v1/items", size=Range(1, 9))
def create(name, size=1):
    ITEMS[len(ITEMS) + 1] = name
    return 201, {"id": len(ITEMS), "name": name, "size": size}


EXAMPLES = [("GET", "/v1/items/1", None, {"X-Key": "k-1"}), ("GET", "/v1/items/1", None, {"X-Key": "k-1"})]


def item_name(item_id):
    """Get an item's name from the Tiny API (key k-1 in the X-Key header); None if it fails."""
    import requests

    try:
        r = requests.get(f"https://api.tiny.example/v1/items/{item_id}", headers={"X-Key": "k-1"}, timeout=5)
        r.raise_for_status()
        return r.json()["name"]
    except requests.RequestException:
        return None


def add_item(name, size):
    """Create an item with a name and a size in the Tiny API (key k-1 in the X-Key header); return its id."""
    import requests

    try:
        r = requests.post("https://api.tiny.example/v1/items", json={"name": name, "size": size},
                          headers={"X-Key": "k-1"}, timeout=5)
        r.raise_for_status()
        return r.json()["id"]
    except requests.RequestException:
        return None


CASES = {"item_name": [(1,), (7,)], "add_item": [("cup", 2), ("mug", 0)]}
'''


@pytest.fixture(scope="module")
def pool():
    with SandboxPool(workers=1, preload=pool_preload("web")) as p:
        yield p


@pytest.fixture(scope="module")
def tiny(pool, tmp_path_factory):
    path = tmp_path_factory.mktemp("services") / "tiny.py"
    path.write_text(TINY)
    res = build_service(read_service(path), pool)
    assert res.reason is None, res.reason
    return res.instance


@pytest.fixture(scope="module")
def built(pool):
    return {name: build_service(read_service(SOURCES / f"{name}.py"), pool) for name in ("weather", "todo", "files")}


# ---------------------------------------------------------------- the request grammar


@pytest.mark.parametrize("reply, query", [
    ("Input: ('GET', '/v2/forecast', {'city': 'Oslo', 'days': 2})", "('GET', '/v2/forecast', {'city': 'Oslo', 'days': 2})"),
    ("I will try\n```\n(\"post\", \"/v1/items\", {\"name\": \"cup\"}, {\"X-Key\": \"k\"})\n```",
     "('POST', '/v1/items', {'name': 'cup'}, {'X-Key': 'k'})"),
    ("Input: GET /v1/items/3", "('GET', '/v1/items/3')"),
    ("Plan done.\nInput: DELETE https://api.tiny.example/v1/items/1", "('DELETE', 'https://api.tiny.example/v1/items/1')"),
    ("<think>('GET', '/x')</think>Input: ('GET', '/v1/a', None, {'X-Key': 'k'})", "('GET', '/v1/a', None, {'X-Key': 'k'})"),
    ("Input: ('FETCH', '/x')", "('FETCH', '/x')"),  # returned as written: its parse error is reported
    ("no request here", None),
])
def test_the_request_of_a_reply(reply, query):
    assert DOMAIN.extract_query(reply) == query


@pytest.mark.parametrize("query, message", [
    ("('FETCH', '/x')", "method must be one of"), ("('GET', 'x')", "must start with /"), ("('GET',)", "2 to 4 items"),
    ("('GET', '/x', [1])", "dict with string keys"), ("('GET', '/x', {'a': 1e999})", "JSON values"),
    ("('GET', '/x', None, {'h': 1})", "dict of strings"), ("__import__('os')", "not a request"),
    ("('GET', '/x y')", "must start with /"),
])
def test_a_bad_request_is_one_line_error(query, message):
    with pytest.raises(InputParseError, match=message) as e:
        DOMAIN.check_query(query, spread_list=True, max_chars=10000, max_depth=50)
    assert "\n" not in str(e.value)


def test_header_and_intent_grammar(tiny):
    assert interface(tiny.header) == ("api.tiny.example", [("GET", "/v1/items/{item_id}"), ("POST", "/v1/items")])
    with pytest.raises(ValueError):
        interface("def test_func(arg0):")
    intent = parse_intent(tiny.test_examples[0][0])
    assert intent["signature"] == "def item_name(item_id):" and intent["inputs"] == [[1], [7]]
    assert '"""' not in intent["gold"] and "Tiny API" not in intent["gold"]  # the docstring is the intent
    assert "EXAMPLES" not in tiny.code and "def item_name" not in tiny.code and "import" not in tiny.code
    assert tiny.test_examples[1][1] == {"outputs": [2, None], "interface": {
        "host": "api.tiny.example", "route": "/v1/items", "method": "POST", "params": ["name", "size"]}}


# ---------------------------------------------------------------- an episode's service


def _play(ep: Episode, requests: list[str]) -> list[str]:
    out = []
    for q in requests:
        ep.step("I will send it.")
        rec = ep.step(f"Input: {q}")
        assert rec.parse_ok, rec.error
        out.append(rec.call.error or rec.call.output_repr)
        ep.step("Decision: NO\nSummary: items")
    return out


def test_errors_come_back_as_observations_and_state_lives_one_episode(pool, tiny):
    caller = sandbox_caller(pool)
    cfg = ProtocolConfig(max_steps=60)
    a, b = Episode(tiny, cfg, caller), Episode(tiny, cfg, caller)
    assert _play(a, [
        "('GET', '/v1/items/1')",  # no key
        "('GET', '/v1/items/1', None, {'X-Key': 'wrong'})",
        f"('POST', '/v1/items', {{'size': 2}}, {KEY})",  # missing name
        f"('POST', '/v1/items', {{'name': 'cup', 'size': 12}}, {KEY})",  # out of range
        f"('GET', '/v1/items/1', {{'colour': 'red'}}, {KEY})",  # unknown parameter
    ]) == ['401 {"error": "missing X-Key header"}', '401 {"error": "invalid API key"}',
           '400 {"error": "missing required parameter \'name\' (in the JSON body)", "allowed": ["name", "size"]}',
           '422 {"error": "parameter \'size\' must be >= 1 and <= 9"}',
           '400 {"error": "unknown parameter \'colour\'", "allowed": []}']
    assert _play(b, [f"('POST', '/v1/items', {{'name': 'cup'}}, {KEY})", f"('GET', '/v1/items/2', None, {KEY})"]) == [
        '201 {"id": 2, "name": "cup", "size": 1}', '200 {"id": 2, "name": "cup"}']
    # a's service never saw b's item; after 2 examples and 6 calls, the 9th request is over the limit of 8
    assert _play(a, [f"('GET', '/v1/items/2', None, {KEY})", f"('DELETE', '/v1/items/1', None, {KEY})"]) == [
        '404 {"error": "no item 2"}', '429 {"error": "rate limit exceeded: 8 requests per minute", "retry_after": 60}']
    assert _play(b, [f"('DELETE', '/v1/nope', None, {KEY})", f"('DELETE', '/v1/items/1', None, {KEY})"]) == [
        '404 {"error": "no route for /v1/nope"}', '405 {"error": "method DELETE not allowed here", "allowed": ["GET"]}']
    assert all(s.call.ok for s in a.steps if s.call)  # HTTP errors are observations, not failed calls
    (elsewhere,) = _play(b, [f"('GET', 'https://api.other.example/v1/items/1', None, {KEY})"])
    assert elsewhere == "ConnectionError: cannot resolve host 'api.other.example'"
    context = [o.output_repr for o in DOMAIN.context(tiny)]
    assert context == ['200 {"id": 1, "name": "pen"}'] * 2 and "service api.tiny.example" in a.prompt()[-1]["content"]


# ---------------------------------------------------------------- code under evaluation

CLIENTS = {
    "requests": '''
import requests

def run(item):
    got = requests.get(f"https://api.tiny.example/v1/items/{item}", params={"verbose": "1", "tags": ["a", "b"]},
                       headers={"X-Key": "k-1"})
    made = requests.post("https://api.tiny.example/v1/items", json={"name": "box", "size": 3}, headers={"X-Key": "k-1"})
    try:
        requests.get("https://api.tiny.example/v1/items/99", headers={"X-Key": "k-1"}).raise_for_status()
    except requests.HTTPError as e:
        missing = e.response.status_code
    try:
        requests.get("https://elsewhere.example/")
    except requests.ConnectionError:
        missing = [missing, "unreachable"]
    return [got.status_code, got.json(), made.status_code, made.json()["id"], missing]
''',
    "httpx": '''
import httpx

def run(item):
    with httpx.Client(base_url="https://api.tiny.example", headers={"X-Key": "k-1"}) as client:
        got = client.get(f"/v1/items/{item}", params={"verbose": "1", "tags": ["a", "b"]})
        made = client.post("/v1/items", json={"name": "box", "size": 3})
        try:
            client.get("/v1/items/99").raise_for_status()
        except httpx.HTTPStatusError as e:
            missing = e.response.status_code
    try:
        httpx.get("https://elsewhere.example/")
    except httpx.ConnectError:
        missing = [missing, "unreachable"]
    return [got.status_code, got.json(), made.status_code, made.json()["id"], missing]
''',
    "urllib": '''
import json
import urllib.error
import urllib.request

def run(item):
    req = urllib.request.Request(f"https://api.tiny.example/v1/items/{item}?verbose=1&tags=a&tags=b",
                                 headers={"X-Key": "k-1"})
    try:
        urllib.request.urlopen(req)
    except urllib.error.HTTPError as e:  # urllib raises for an error status; the body comes with it
        got = [e.code, json.loads(e.read())]
    post = urllib.request.Request("https://api.tiny.example/v1/items", data=json.dumps({"name": "box", "size": 3}).encode(),
                                  headers={"X-Key": "k-1", "Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(post) as resp:
        made = [resp.status, json.loads(resp.read())["id"]]
    try:
        urllib.request.urlopen(urllib.request.Request("https://api.tiny.example/v1/items/99", headers={"X-Key": "k-1"}))
    except urllib.error.HTTPError as e:
        missing = e.code
    try:
        urllib.request.urlopen("http://elsewhere.example/")
    except urllib.error.URLError:
        missing = [missing, "unreachable"]
    return [*got, *made, missing]
''',
}


@pytest.mark.parametrize("client", list(CLIENTS))
def test_the_virtual_transport_records_each_client(pool, tiny, client):
    result = pool.call(program(tiny.code, "call", CLIENTS[client], "run"), "(1,)", timeout_s=10)
    assert result.ok, result.error
    out = result.normalized
    assert out["raised"] is None
    # the item is 400: unknown parameters (the service takes none on GET); the POST made item 2
    assert out["value"][0] == 400 and out["value"][1]["error"] == "unknown parameter 'verbose'"
    assert out["value"][2:] == [201, 2, [404, "unreachable"]]
    get, post, _, other = out["requests"]
    assert {r["via"] for r in out["requests"]} == {client}
    assert (get["method"], get["host"], get["path"], get["route"]) == ("GET", "api.tiny.example", "/v1/items/1",
                                                                     "/v1/items/{item_id}")
    assert get["query"] == {"verbose": ["1"], "tags": ["a", "b"]} and get["params"] == ["tags", "verbose"]
    assert get["headers"]["x-key"] == "k-1" and get["body"] is None
    assert (post["method"], post["route"], post["body"], post["body_kind"]) == ("POST", "/v1/items",
                                                                                {"name": "box", "size": 3}, "json")
    assert (other["host"], other["route"]) == ("elsewhere.example", None)


def test_code_under_evaluation_cannot_open_a_socket(pool, tiny):
    """A real server listens here; sandboxed code reaches it neither through the clients nor raw sockets."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    port = server.getsockname()[1]
    accepted = []

    def serve():
        while not stop.is_set():
            try:
                accepted.append(server.accept())
            except TimeoutError:
                pass

    stop = threading.Event()
    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    code = f'''
import _socket
import socket
import requests

def run():
    out = []
    for attempt in (lambda: socket.create_connection(("127.0.0.1", {port}), timeout=1),
                    lambda: _socket.socket().connect(("127.0.0.1", {port})),
                    lambda: requests.get("http://127.0.0.1:{port}/", timeout=1)):
        try:
            attempt()
            out.append("connected")
        except OSError:  # requests' ConnectionError is one too
            out.append("refused")
    return out
'''
    try:
        if pool.isolation == "rlimits":
            pytest.skip("no network isolation on this machine (sandbox mode rlimits)")
        result = pool.call(program(tiny.code, "call", code, "run"), "()", timeout_s=10)
        assert result.ok, result.error
        assert result.normalized["value"] == ["refused"] * 3
        assert [r["host"] for r in result.normalized["requests"]] == ["127.0.0.1"]  # recorded, never sent
    finally:
        stop.set()
        thread.join()
        server.close()
    assert accepted == []


# ---------------------------------------------------------------- the builder


def test_built_rows_reverify_and_a_failing_gold_drops_its_service(pool, built, tmp_path):
    rows = [res.instance for res in built.values()]
    for res in built.values():
        assert res.reason is None and 2 <= len(res.routes) <= 6
        DOMAIN.check_instance(res.instance)
    assert built["weather"].covered == set(built["weather"].routes)  # every route reached by the stored examples
    assert set(built["files"].routes) - built["files"].covered == {("GET", "/files/{name}")}  # no example reads one
    result = verify(rows)
    assert result["rows_not_reproduced"] == [] and result["gold_calls"] == sum(
        len(parse_intent(lit)["inputs"]) for r in rows for lit, _ in r.test_examples)
    broken = tmp_path / "broken.py"
    broken.write_text(TINY.replace('"item_name": [(1,), (7,)]', '"item_name": [(7,), (1,)]'))
    assert build_service(read_service(broken), pool).reason == "a gold function fails on its first input"


# ---------------------------------------------------------------- service-call scoring


@pytest.fixture(scope="module")
def golds(tiny):
    """Each intent's gold function, by name."""
    return {parse_intent(lit)["signature"][4:].split("(")[0]: parse_intent(lit)["gold"] for lit, _ in tiny.test_examples}


def _asked_function(chat: list[dict]) -> str:
    return chat[-1]["content"].split("Function: def ", 1)[1].split("(", 1)[0]


def _coder(golds: dict[str, str], codes: dict[str, str]):
    """A coder that answers each intent with codes[function name] (the gold when absent)."""
    return lambda chats: [f"```python\n{codes.get(_asked_function(c), golds[_asked_function(c)])}\n```" for c in chats]


def test_service_calls_score_mock_robust_param_f1_and_outputs(pool, tiny, golds):
    task = CoderTask(tiny.header, tiny.description, [], DOMAIN.match_cases(tiny), "web", tiny.code)
    wrong_host = golds["item_name"].replace("api.tiny.example", "api.tiny.io")
    unguarded = ("def item_name(item_id):\n    import requests\n    r = requests.get("
                 "f'https://api.tiny.example/v1/items/{item_id}', headers={'X-Key': 'k-1'})\n    return r.json()['name']")
    extra_param = golds["add_item"].replace('"size": size}', '"size": size, "colour": "red"}')
    gold, = ServiceCallMatcher(_coder(golds, {}), pool).score([task])
    assert (gold.score, gold.mock, gold.robust, gold.param_f1, gold.errors) == (1.0, 1.0, 1.0, 1.0, 0)
    bad, = ServiceCallMatcher(_coder(golds, {"item_name": wrong_host, "add_item": extra_param}), pool).score([task])
    first, second = bad.intents
    # the unknown item's None is no match either: the code never reached the service
    assert (first["mock"], first["param_f1"], first["matches"], first["request"]["host"]) == (False, 1.0, 0,
                                                                                           "api.tiny.io")
    assert second["mock"] and second["robust"] and second["param_f1"] == pytest.approx(0.8) and second["matches"] == 1
    plain, = ServiceCallMatcher(_coder(golds, {"item_name": unguarded}), pool).score([task])
    assert plain.intents[0]["mock"] and not plain.intents[0]["robust"] and plain.intents[0]["matches"] == 1
    assert plain.intents[0]["errors"] == 1  # the unknown item raised KeyError: no match
    assert not is_robust_code(unguarded) and is_robust_code(golds["item_name"]) and param_f1([], []) == 1.0
    slow = {name: code.replace("    try:", "    __import__('time').sleep(0.5)\n    try:", 1) for name, code in golds.items()}
    cut, = ServiceCallMatcher(_coder(golds, slow), pool, timeout_s=0.2).score([task])  # eval.service_call_timeout_s
    assert (cut.score, cut.errors, cut.mock) == (0.0, 4, 0.0)


def test_scoring_adds_the_reference_rows_and_the_report_shows_them(pool, tiny, golds, tmp_path):
    from aac.eval import records
    from aac.eval.report import write_report
    from aac.eval.scoring import score_episodes
    from aac.scorers.judge import Judge

    asked = []

    def coder(chats):
        asked.extend(c[-1]["content"] for c in chats)
        return [f"```python\n{golds[_asked_function(c)]}\n```" if "Documentation:" in c[-1]["content"] else "no code"
                for c in chats]

    judged = []
    judge = Judge(lambda chats: judged.extend(chats) or ["Rating: 4"] * len(chats), subject=DOMAIN.subject)
    episode = {"uid": tiny.uid, "source": "web", "description": "Items by id; POST creates.", "num_queries": 0,
               "concluded": True, "turns": 3, "format_errors": 0,
               "observations": [[o.input, o.output_repr, o.error] for o in DOMAIN.context(tiny)]}
    out = []
    score_episodes([episode], {tiny.uid: tiny}, judge, ServiceCallMatcher(coder, pool), gold=True, batch_size=4,
                   on_done=out.extend)
    (rec,) = out
    assert rec["code_match"]["mock"] == rec["code_match_gold"]["mock"] == 1.0
    assert rec["code_match_intent_only"]["mock"] == 0.0 and rec["code_match_intent_only"]["score"] == 0.0
    intent_only = [a for a in asked if "Documentation:" not in a]
    assert len(intent_only) == 2 and all("api.tiny.example" not in a for a in intent_only)  # no host, no docs
    assert "web service" in judged[0][0]["content"] and "Web service header: service api.tiny.example" in judged[0][-1]["content"]
    (tmp_path / records.EPISODES).write_text(json.dumps(episode) + "\n")
    (tmp_path / records.SCORES).write_text(json.dumps(rec) + "\n")
    report = write_report(tmp_path, plot=False)
    rows = report["service_calls"]
    assert rows["intent_only"]["mock_pct"] == 0.0 and rows["gold"]["mock_pct"] == rows["agent"]["mock_pct"] == 100.0
    assert rows["agent"]["output_match_pct"] == 100.0 and rows["agent"]["intents"] == 2
    text = (tmp_path / records.REPORT_MD).read_text()
    assert "| none (intent only) | 2 | 0.0 % | 0.0 % | 0.00 | 0.0 % |" in text
    assert "| gold (ceiling) | 2 | 100.0 % | 100.0 % | 1.00 | 100.0 % |" in text


# ---------------------------------------------------------------- config, prompts, critic


def test_config_prompts_and_the_critics_view(tiny):
    from aac.config import ConfigError, compose
    from aac.critic.judgment import Judgment
    from aac.critic.prompts import critic_messages

    assert compose("env.domain=web").env.data == "builtin:web"
    with pytest.raises(ConfigError, match="env.domain=web sends HTTP requests"):
        compose("env.domain=web", "env.constrained_format=true", "rollout=hf")
    with pytest.raises(ConfigError, match="env.domain=web needs critic.informativeness=judge"):
        compose("+recipe=smollm2_cpu", "env.domain=web")
    for style in ("paper", "compact"):
        ep = Episode(tiny, ProtocolConfig(prompt_style=style, answer_cues=True), caller=sandbox_caller(None))
        text = "\n".join(m["content"] for m in ep.prompt())
        assert "service api.tiny.example: GET /v1/items/{item_id}; POST /v1/items" in text and "test_func" not in text
    asked = critic_messages(Judgment(kind="hypothesis", instance=tiny, hypothesis="items", observations=[],
                                     text="items"), "privileged")
    assert "hidden Python web service" in asked[0]["content"]
    assert "Web service header: service api.tiny.example" in asked[-1]["content"] and "Service(" in asked[-1]["content"]


def test_critic_check_runs_on_the_web_domain(flaky_endpoint, tmp_path):
    from aac.critic.check import main

    url, _ = flaky_endpoint
    out = tmp_path / "card"
    assert main(["limit=3", f"out={out}", "env.domain=web", "critic.backend=openai",
                 f"critic.openai.base_url={url}", "critic.openai.model=m"]) == 0
    card = json.loads((out / "card.json").read_text())
    assert card["critic"]["data"] == "builtin:web" and card["instances"] == 3
    assert all(it["uid"].startswith("web/") for it in card["items"])
