"""Keycheck, a password safety API at https://api.keycheck.example (no authentication). Nothing here
stores a password.
POST /v1/strength with a JSON body {"password"} returns {"score": 0-4, "length", "classes", "verdict"}:
classes counts the kinds of characters used (lower case, upper case, digits, others); score = 0 under 8
characters, else classes - 1 plus 1 for 12 characters or more, capped at 4; verdict is weak (0-1), fair
(2), good (3) or strong (4). An empty password is a 422.
GET /v1/range/{prefix} takes the first 5 hex characters of a SHA-1 hash (case-insensitive; another form is
a 400) and returns {"prefix", "suffixes": [{"suffix", "count"}, ...]}: the known breached hashes with that
prefix (the remaining 35 characters, upper case) and how often each was seen, sorted by suffix; none
known gives an empty list."""

import hashlib
import re

from aac.sandbox.web_service import HTTPError, Service

api = Service("api.keycheck.example")

BREACHED = {"password": 3861493, "123456": 4204221, "qwerty": 1086000, "letmein": 290000, "sunshine": 231000}
HASHES = {hashlib.sha1(p.encode()).hexdigest().upper(): n for p, n in BREACHED.items()}


@api.route("POST", "/v1/strength")
def strength(password):
    if not password:
        raise HTTPError(422, "password must not be empty")
    kinds = [any(c.islower() for c in password), any(c.isupper() for c in password),
             any(c.isdigit() for c in password), any(not c.isalnum() for c in password)]
    classes = sum(kinds)
    score = 0 if len(password) < 8 else min(4, classes - 1 + (len(password) >= 12))
    verdict = "weak" if score <= 1 else ("fair", "good", "strong")[score - 2]
    return {"score": score, "length": len(password), "classes": classes, "verdict": verdict}


@api.route("GET", "/v1/range/{prefix}")
def range_(prefix):
    prefix = prefix.upper()
    if not re.fullmatch(r"[0-9A-F]{5}", prefix):
        raise HTTPError(400, "prefix must be 5 hex characters")
    rows = sorted((h[5:], n) for h, n in HASHES.items() if h.startswith(prefix))
    return {"prefix": prefix, "suffixes": [{"suffix": s, "count": n} for s, n in rows]}


EXAMPLES = [
    ("POST", "/v1/strength", {"password": "Tr0ub4dor&3"}),
    ("GET", "/v1/range/5BAA6"),
]


def password_verdict(password):
    """Rate a password with the Keycheck API. Return its verdict (weak, fair, good or strong), or None if
    the request fails."""
    import requests

    try:
        r = requests.post("https://api.keycheck.example/v1/strength", json={"password": password}, timeout=10)
        r.raise_for_status()
        return r.json()["verdict"]
    except requests.RequestException:
        return None


def times_breached(password):
    """Check with the Keycheck API how many times a password appears in breaches, sending only the first 5
    characters of its SHA-1 hash (upper-case hex) and matching the rest locally. Return the count (0 when it
    is not found), or None if the request fails."""
    import hashlib

    import httpx

    digest = hashlib.sha1(password.encode()).hexdigest().upper()
    try:
        r = httpx.get(f"https://api.keycheck.example/v1/range/{digest[:5]}")
        r.raise_for_status()
        return next((s["count"] for s in r.json()["suffixes"] if s["suffix"] == digest[5:]), 0)
    except httpx.HTTPError:
        return None


CASES = {
    "password_verdict": [("correct-Horse-9",), ("abc",), ("alllowercase",), ("",)],
    "times_breached": [("password",), ("qwerty",), ("x7!Lq#2zV",)],
}
