"""Dailywire, a news headlines API at https://api.dailywire.example. Every request needs the header
X-Api-Key: dw-news-1 (401 otherwise).
GET /v2/top-headlines?country=CC&category=NAME&pageSize=N returns {"status": "ok", "totalResults",
"articles": [{"title", "source", "publishedAt"}, ...]}: newest first, at most pageSize (1..20, default 20;
outside is a 422). country is a two-letter code (us, gb, de: another is a 422, case-insensitive);
category is one of business, sports, science, technology (another is a 422). Neither is required.
GET /v2/sources?category=NAME returns {"sources": [{"id", "name", "category", "country"}, ...]} by id.
An unknown parameter is a 400 (e.g. page_size instead of pageSize)."""

from aac.sandbox.web_service import OneOf, Range, Service

api = Service("api.dailywire.example", key_header="X-Api-Key", key="dw-news-1")

CATEGORIES = ("business", "sports", "science", "technology")
SOURCES = {"tech-daily": ("Tech Daily", "technology", "us"), "the-ledger": ("The Ledger", "business", "gb"),
           "goalpost": ("Goalpost", "sports", "gb"), "labnotes": ("Lab Notes", "science", "de"),
           "market-watch-de": ("Marktblick", "business", "de")}
ARTICLES = [
    ("Chip maker opens a third plant", "tech-daily", "2024-03-04T09:00:00Z"),
    ("Rates held for a fourth month", "the-ledger", "2024-03-04T08:30:00Z"),
    ("Late goal settles the derby", "goalpost", "2024-03-03T21:15:00Z"),
    ("New enzyme breaks down plastic faster", "labnotes", "2024-03-03T12:00:00Z"),
    ("Exporters report a strong quarter", "market-watch-de", "2024-03-02T16:40:00Z"),
    ("Phone batteries that last a week", "tech-daily", "2024-03-02T10:05:00Z"),
    ("Cup final sells out in an hour", "goalpost", "2024-03-01T18:00:00Z"),
]


@api.route("GET", "/v2/top-headlines", country=OneOf("us", "gb", "de"), category=OneOf(*CATEGORIES),
           pageSize=Range(1, 20))
def headlines(country=None, category=None, pageSize=20):
    rows = [(t, s, p) for t, s, p in ARTICLES
            if (country is None or SOURCES[s][2] == country) and (category is None or SOURCES[s][1] == category)]
    return {"status": "ok", "totalResults": len(rows),
            "articles": [{"title": t, "source": SOURCES[s][0], "publishedAt": p} for t, s, p in rows[:pageSize]]}


@api.route("GET", "/v2/sources", category=OneOf(*CATEGORIES))
def sources(category=None):
    return {"sources": [{"id": k, "name": n, "category": c, "country": cc} for k, (n, c, cc) in sorted(SOURCES.items())
                        if category is None or c == category]}


EXAMPLES = [
    ("GET", "/v2/top-headlines", {"country": "gb", "pageSize": 2}, {"X-Api-Key": "dw-news-1"}),
    ("GET", "/v2/sources", {"category": "science"}, {"X-Api-Key": "dw-news-1"}),
]


def latest_headline(category):
    """Get the newest headline of a news category (business, sports, science or technology) from the
    Dailywire API (key dw-news-1 in the X-Api-Key header). Return its title, or None if there is none or
    the request fails."""
    import requests

    try:
        r = requests.get("https://api.dailywire.example/v2/top-headlines",
                         params={"category": category, "pageSize": 1},
                         headers={"X-Api-Key": "dw-news-1"}, timeout=10)
        r.raise_for_status()
        articles = r.json()["articles"]
        return articles[0]["title"] if articles else None
    except requests.RequestException:
        return None


def headline_count(country):
    """Count the top headlines Dailywire (key dw-news-1 in the X-Api-Key header) has for a country code.
    Return the total, or None if the request fails."""
    import requests

    try:
        r = requests.get("https://api.dailywire.example/v2/top-headlines", params={"country": country},
                         headers={"X-Api-Key": "dw-news-1"}, timeout=10)
        r.raise_for_status()
        return r.json()["totalResults"]
    except requests.RequestException:
        return None


def source_ids(category):
    """List the ids of the Dailywire news sources of a category (key dw-news-1 in the X-Api-Key header).
    Return the list, or None if the request fails."""
    import httpx

    try:
        r = httpx.get("https://api.dailywire.example/v2/sources", params={"category": category},
                      headers={"X-Api-Key": "dw-news-1"})
        r.raise_for_status()
        return [s["id"] for s in r.json()["sources"]]
    except httpx.HTTPError:
        return None


CASES = {
    "latest_headline": [("sports",), ("technology",), ("weather",)],
    "headline_count": [("gb",), ("DE",), ("fr",)],
    "source_ids": [("business",), ("sports",), ("politics",)],
}
