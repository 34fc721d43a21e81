"""Snip, a URL shortener API at https://api.snip.example. Every request needs the header X-Auth-Token:
snp-77 (401 otherwise). One link exists: alias "docs" for https://example.org/documentation, 12 clicks.
POST /links with a JSON body {"url": text starting with http:// or https://, "alias": optional text of
3-16 letters, digits or dashes} creates a short link and answers 201 {"alias", "url", "short_url":
"https://snip.example/ALIAS", "clicks": 0}; without an alias the service makes one: "s1", "s2", ... in
order. A URL of another form or a malformed alias is a 422; an alias in use is a 409.
GET /links/{alias} returns {"alias", "url", "short_url", "clicks"}; DELETE /links/{alias} answers 204;
an unknown alias is a 404.
GET /links/{alias}/stats returns {"alias", "clicks", "top_referrer"} (top_referrer null without clicks)."""

import re

from aac.sandbox.web_service import HTTPError, Service

api = Service("api.snip.example", key_header="X-Auth-Token", key="snp-77")

LINKS = {"docs": {"url": "https://example.org/documentation", "clicks": 12, "referrer": "news.example"}}
AUTO = [1]


def _link(alias):
    if alias not in LINKS:
        raise HTTPError(404, f"no link {alias}")
    return LINKS[alias]


def _view(alias):
    return {"alias": alias, "url": LINKS[alias]["url"], "short_url": f"https://snip.example/{alias}",
            "clicks": LINKS[alias]["clicks"]}


@api.route("POST", "/links")
def create(url, alias=None):
    if not re.fullmatch(r"https?://\S+", url):
        raise HTTPError(422, "url must start with http:// or https://")
    if alias is None:
        alias = f"s{AUTO[0]}"
        AUTO[0] += 1
    elif not re.fullmatch(r"[A-Za-z0-9-]{3,16}", alias):
        raise HTTPError(422, "alias must be 3-16 letters, digits or dashes")
    if alias in LINKS:
        raise HTTPError(409, f"alias {alias} is taken")
    LINKS[alias] = {"url": url, "clicks": 0, "referrer": None}
    return 201, _view(alias)


@api.route("GET", "/links/{alias}")
def get_link(alias):
    _link(alias)
    return _view(alias)


@api.route("DELETE", "/links/{alias}")
def delete(alias):
    _link(alias)
    del LINKS[alias]
    return 204, None


@api.route("GET", "/links/{alias}/stats")
def stats(alias):
    link = _link(alias)
    return {"alias": alias, "clicks": link["clicks"], "top_referrer": link["referrer"]}


EXAMPLES = [
    ("GET", "/links/docs", None, {"X-Auth-Token": "snp-77"}),
    ("POST", "/links", {"url": "https://example.org/a/very/long/path"}, {"X-Auth-Token": "snp-77"}),
]


def shorten(url, alias):
    """Shorten a URL under a chosen alias with the Snip API (token snp-77 in the X-Auth-Token header).
    Return the short URL, or None if the service refuses or the request fails."""
    import requests

    try:
        r = requests.post("https://api.snip.example/links", json={"url": url, "alias": alias},
                          headers={"X-Auth-Token": "snp-77"}, timeout=10)
        r.raise_for_status()
        return r.json()["short_url"]
    except requests.RequestException:
        return None


def click_count(alias):
    """Get how many times a Snip short link has been clicked (token snp-77 in the X-Auth-Token header).
    Return the number, or None if the link is unknown or the request fails."""
    import httpx

    try:
        r = httpx.get(f"https://api.snip.example/links/{alias}/stats", headers={"X-Auth-Token": "snp-77"})
        r.raise_for_status()
        return r.json()["clicks"]
    except httpx.HTTPError:
        return None


def expand(alias):
    """Expand a Snip short link alias to its original URL (token snp-77 in the X-Auth-Token header).
    Return the URL, or None if the alias is unknown or the request fails."""
    import json
    import urllib.error
    import urllib.request

    req = urllib.request.Request(f"https://api.snip.example/links/{alias}", headers={"X-Auth-Token": "snp-77"})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return json.loads(resp.read())["url"]
    except urllib.error.URLError:
        return None


CASES = {
    "shorten": [("https://example.org/x", "my-link"), ("http://a.example/b", "q-2024"),
                ("https://example.org/y", "docs"), ("ftp://files.example", "ftp1")],
    "click_count": [("docs",), ("nope",)],
    "expand": [("docs",), ("abc",)],
}
