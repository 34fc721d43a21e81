"""Saywise, a quotations API at https://api.saywise.example (no authentication).
GET /quotes?author=NAME&tag=TAG&limit=N returns {"quotes": [{"id", "text", "author", "tags"}, ...],
"count"}: quotes in id order whose author contains NAME (case-insensitive) and that carry the tag, at
most N (1..10, default 10; outside is a 422); count is the number before the limit.
GET /quotes/{quote_id} returns one quote (an unknown id is a 404, a non-integer a 400).
GET /quotes/daily?date=YYYY-MM-DD returns the quote of the day: the quote at position (the day of the month
- 1) modulo the number of quotes; a malformed date is a 400.
GET /tags returns {"tags": [{"name", "count"}, ...]} sorted by name."""

import re

from aac.sandbox.web_service import HTTPError, Range, Service

api = Service("api.saywise.example")

QUOTES = [
    (1, "Small steps still move you.", "Lena Park", ["progress", "patience"]),
    (2, "A calm sea teaches nothing.", "Omar Haddad", ["courage"]),
    (3, "Measure twice, then trust the cut.", "Lena Park", ["work"]),
    (4, "Curiosity is a lamp, not a map.", "Ruth Alder", ["learning"]),
    (5, "Rest is part of the work.", "Omar Haddad", ["work", "patience"]),
]


def _view(q):
    return {"id": q[0], "text": q[1], "author": q[2], "tags": q[3]}


@api.route("GET", "/quotes", limit=Range(1, 10))
def quotes(author=None, tag=None, limit=10):
    rows = [_view(q) for q in QUOTES if (author is None or author.lower() in q[2].lower())
            and (tag is None or tag in q[3])]
    return {"quotes": rows[:limit], "count": len(rows)}


@api.route("GET", "/quotes/daily")
def daily(date="2024-01-01"):
    if not re.fullmatch(r"\d{4}-\d\d-\d\d", date):
        raise HTTPError(400, "parameter 'date' must be YYYY-MM-DD")
    return _view(QUOTES[(int(date[8:]) - 1) % len(QUOTES)])


@api.route("GET", "/quotes/{quote_id}", quote_id=int)
def quote(quote_id):
    for q in QUOTES:
        if q[0] == quote_id:
            return _view(q)
    raise HTTPError(404, f"no quote {quote_id}")


@api.route("GET", "/tags")
def tags():
    names = sorted({t for q in QUOTES for t in q[3]})
    return {"tags": [{"name": t, "count": sum(t in q[3] for q in QUOTES)} for t in names]}


EXAMPLES = [
    ("GET", "/quotes", {"author": "park"}),
    ("GET", "/tags"),
]


def quote_of_the_day(date):
    """Get the text of the Saywise quote of the day for a date (YYYY-MM-DD). Return the text, or None if
    the request fails."""
    import requests

    try:
        r = requests.get("https://api.saywise.example/quotes/daily", params={"date": date}, timeout=10)
        r.raise_for_status()
        return r.json()["text"]
    except requests.RequestException:
        return None


def quotes_tagged(tag):
    """List the texts of the Saywise quotes carrying a tag, in id order. Return the list, or None if the
    request fails."""
    import httpx

    try:
        r = httpx.get("https://api.saywise.example/quotes", params={"tag": tag})
        r.raise_for_status()
        return [q["text"] for q in r.json()["quotes"]]
    except httpx.HTTPError:
        return None


def quote_author(quote_id):
    """Get the author of a Saywise quote by its id. Return the name, or None if the quote is unknown or the
    request fails."""
    import requests

    try:
        r = requests.get(f"https://api.saywise.example/quotes/{quote_id}", timeout=10)
        r.raise_for_status()
        return r.json()["author"]
    except requests.RequestException:
        return None


CASES = {
    "quote_of_the_day": [("2024-05-03",), ("2023-12-31",), ("3 May",)],
    "quotes_tagged": [("work",), ("patience",), ("joy",)],
    "quote_author": [(4,), (2,), (40,)],
}
