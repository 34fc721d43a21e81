"""Findit, a web search API at https://search.findit.example. Every request needs the header
X-Findit-Key: fk-live-55 (401 otherwise). At most 15 requests are served: the 16th and later get 429
{"error": ..., "retry_after": 60}.
GET /api/search?q=TEXT&page=P&per_page=N&safe=true|false searches a small fixed index: a document matches
when every word of q occurs in its title or snippet (case-insensitive). Returns {"query", "page",
"per_page", "total", "results": [{"rank", "title", "url", "snippet"}]}, best first (more matching words in
the title rank higher, then index order), ranks counted from 1 over all pages. per_page 1..10 (default 5),
page from 1 (default 1); outside is a 422. safe (default true) leaves out documents marked adult. An empty q
is a 422.
GET /api/suggest?prefix=TEXT returns {"suggestions": [up to 5 index words starting with prefix, sorted]}."""

from aac.sandbox.web_service import HTTPError, Range, Service

api = Service("search.findit.example", key_header="X-Findit-Key", key="fk-live-55", rate_limit=15)

INDEX = [
    ("Python packaging guide", "https://docs.pyhub.example/packaging", "how to build and publish python packages", False),
    ("Sourdough starter basics", "https://bake.example/starter", "feeding and keeping a sourdough starter", False),
    ("Python async tutorial", "https://learn.example/async", "coroutines tasks and event loops in python", False),
    ("Bicycle chain repair", "https://ride.example/chain", "fix a broken chain on the road", False),
    ("Late night python memes", "https://memes.example/py", "adult humour about python", True),
    ("Packaging tape review", "https://tools.example/tape", "which packaging tape sticks best", False),
    ("Sourdough pizza dough", "https://bake.example/pizza", "pizza dough with a sourdough starter", False),
]


@api.route("GET", "/api/search", page=Range(1, None), per_page=Range(1, 10), safe=bool)
def search(q, page=1, per_page=5, safe=True):
    words = q.lower().split()
    if not words:
        raise HTTPError(422, "parameter 'q' must not be empty")
    hits = []
    for k, (title, url, snippet, adult) in enumerate(INDEX):
        text = f"{title} {snippet}".lower()
        if all(w in text for w in words) and not (safe and adult):
            hits.append((-sum(w in title.lower() for w in words), k, title, url, snippet))
    hits.sort()
    results = [{"rank": n + 1, "title": t, "url": u, "snippet": s} for n, (_, _, t, u, s) in enumerate(hits)]
    return {"query": q, "page": page, "per_page": per_page, "total": len(results),
            "results": results[(page - 1) * per_page: page * per_page]}


@api.route("GET", "/api/suggest")
def suggest(prefix):
    words = sorted({w for title, _, snippet, _ in INDEX for w in f"{title} {snippet}".lower().split()})
    return {"suggestions": [w for w in words if w.startswith(prefix.lower())][:5]}


EXAMPLES = [
    ("GET", "/api/search", {"q": "sourdough"}, {"X-Findit-Key": "fk-live-55"}),
    ("GET", "/api/suggest", {"prefix": "pa"}, {"X-Findit-Key": "fk-live-55"}),
]


def top_url(query):
    """Search the web with the Findit API (key fk-live-55, sent in the X-Findit-Key header) and return the
    URL of the best result, or None when there is no result or the request fails."""
    import requests

    try:
        r = requests.get("https://search.findit.example/api/search", params={"q": query, "per_page": 1},
                         headers={"X-Findit-Key": "fk-live-55"}, timeout=10)
        r.raise_for_status()
        results = r.json()["results"]
        return results[0]["url"] if results else None
    except requests.RequestException:
        return None


def result_count(query, safe):
    """Count the Findit search results (key fk-live-55 in the X-Findit-Key header) for a query, with safe
    search on or off. Return the total number of results, or None if the request fails."""
    import requests

    try:
        r = requests.get("https://search.findit.example/api/search",
                         params={"q": query, "safe": "true" if safe else "false"},
                         headers={"X-Findit-Key": "fk-live-55"}, timeout=10)
        r.raise_for_status()
        return r.json()["total"]
    except requests.RequestException:
        return None


def suggestions(prefix):
    """Get search suggestions for a prefix from the Findit API (key fk-live-55 in the X-Findit-Key
    header). Return the list of suggested words, or None if the request fails."""
    import httpx

    try:
        r = httpx.get("https://search.findit.example/api/suggest", params={"prefix": prefix},
                      headers={"X-Findit-Key": "fk-live-55"})
        r.raise_for_status()
        return r.json()["suggestions"]
    except httpx.HTTPError:
        return None


CASES = {
    "top_url": [("python",), ("sourdough pizza",), ("quantum",), ("",)],
    "result_count": [("python", True), ("python", False), ("tape", True)],
    "suggestions": [("s",), ("py",), ("zz",)],
}
