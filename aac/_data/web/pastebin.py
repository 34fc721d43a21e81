"""Clipdrop, a paste bin API at https://api.clipdrop.example. Every request needs the header X-Api-Key:
cd-dev-8 (401 otherwise). Paste "abc123" exists (syntax python, content "print('hi')").
POST /v1/pastes with a JSON body {"content", "syntax": text|python|json|sql (default text), "expires":
"10m"|"1h"|"1d"|"never" (default never)} answers 201 {"key", "url": "https://clipdrop.example/KEY",
"syntax", "expires", "size": the content's length}; keys are p0001, p0002, ... in order. Empty content,
content over 2000 characters, or another syntax or expiry are 422s. A json paste must hold valid JSON
(else 422).
GET /v1/pastes/{key} returns {"key", "syntax", "expires", "size", "content"}; an unknown key is a 404.
GET /v1/pastes/{key}/lines returns {"key", "lines": n} (the number of lines of the content)."""

import json

from aac.sandbox.web_service import HTTPError, OneOf, Service

api = Service("api.clipdrop.example", key_header="X-Api-Key", key="cd-dev-8")

PASTES = {"abc123": {"key": "abc123", "syntax": "python", "expires": "never", "content": "print('hi')"}}
COUNTER = [1]


def _paste(key):
    if key not in PASTES:
        raise HTTPError(404, f"no paste {key}")
    return PASTES[key]


@api.route("POST", "/v1/pastes", syntax=OneOf("text", "python", "json", "sql"),
           expires=OneOf("10m", "1h", "1d", "never"))
def create(content, syntax="text", expires="never"):
    if not 1 <= len(content) <= 2000:
        raise HTTPError(422, "content must have 1 to 2000 characters")
    if syntax == "json":
        try:
            json.loads(content)
        except ValueError:
            raise HTTPError(422, "content is not valid JSON") from None
    key = f"p{COUNTER[0]:04d}"
    COUNTER[0] += 1
    PASTES[key] = {"key": key, "syntax": syntax, "expires": expires, "content": content}
    return 201, {"key": key, "url": f"https://clipdrop.example/{key}", "syntax": syntax, "expires": expires,
                 "size": len(content)}


@api.route("GET", "/v1/pastes/{key}")
def get_paste(key):
    paste = _paste(key)
    return {**paste, "size": len(paste["content"])}


@api.route("GET", "/v1/pastes/{key}/lines")
def lines(key):
    return {"key": key, "lines": len(_paste(key)["content"].splitlines())}


EXAMPLES = [
    ("GET", "/v1/pastes/abc123", None, {"X-Api-Key": "cd-dev-8"}),
    ("POST", "/v1/pastes", {"content": "SELECT 1;", "syntax": "sql"}, {"X-Api-Key": "cd-dev-8"}),
]


def share_snippet(code, syntax):
    """Upload a code snippet with a syntax name (text, python, json or sql) to Clipdrop (key cd-dev-8 in the
    X-Api-Key header), expiring after one day. Return the paste's URL, or None if the request fails."""
    import requests

    try:
        r = requests.post("https://api.clipdrop.example/v1/pastes",
                          json={"content": code, "syntax": syntax, "expires": "1d"},
                          headers={"X-Api-Key": "cd-dev-8"}, timeout=10)
        r.raise_for_status()
        return r.json()["url"]
    except requests.RequestException:
        return None


def paste_content(key):
    """Fetch the content of a Clipdrop paste by key (key cd-dev-8 in the X-Api-Key header). Return the text,
    or None if the paste is unknown or the request fails."""
    import json
    import urllib.error
    import urllib.request

    req = urllib.request.Request(f"https://api.clipdrop.example/v1/pastes/{key}", headers={"X-Api-Key": "cd-dev-8"})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return json.loads(resp.read())["content"]
    except urllib.error.HTTPError:
        return None


CASES = {
    "share_snippet": [("x = 1\nprint(x)", "python"), ("{\"a\": 1}", "json"), ("{bad", "json"), ("hi", "rust")],
    "paste_content": [("abc123",), ("zzz",)],
}
