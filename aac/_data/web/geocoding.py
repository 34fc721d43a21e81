"""Placefinder, a geocoding API at https://geo.placefinder.example. Every request needs the header X-Api-Key
(demo key pf-7731); without it 401.
GET /v1/search?q=TEXT&limit=N&country=CC looks places up by name (case-insensitive substring of the name;
country an optional two-letter filter) and returns {"results": [{"name", "country", "lat", "lon"}, ...],
"count"}: at most limit results (1 to 10, default 5; outside is a 422), in the order of the service's list.
No match is 200 with an empty list. q shorter than 2 characters is a 422.
GET /v1/reverse?lat=X&lon=Y (numbers; lat in -90..90, lon in -180..180, else 422) returns the nearest known
place {"name", "country", "lat", "lon", "distance_km"} (distance rounded to 1 decimal).
A missing q, lat or lon is a 400."""

import math

from aac.sandbox.web_service import HTTPError, Range, Service

api = Service("geo.placefinder.example", key_header="X-Api-Key", key="pf-7731")

PLACES = [
    ("Springfield", "US", 39.7817, -89.6501), ("Springfield", "US", 42.1015, -72.5898),
    ("Porto", "PT", 41.1579, -8.6291), ("Porto Alegre", "BR", -30.0346, -51.2177),
    ("Lyon", "FR", 45.764, 4.8357), ("Lagos", "NG", 6.5244, 3.3792), ("Lagos", "PT", 37.1028, -8.6742),
    ("Perth", "AU", -31.9523, 115.8613), ("Perth", "GB", 56.3965, -3.4374), ("Reykjavik", "IS", 64.1466, -21.9426),
]


def _place(p):
    return {"name": p[0], "country": p[1], "lat": p[2], "lon": p[3]}


@api.route("GET", "/v1/search", limit=Range(1, 10))
def search(q, limit=5, country=None):
    if len(q.strip()) < 2:
        raise HTTPError(422, "parameter 'q' must have at least 2 characters")
    found = [_place(p) for p in PLACES if q.strip().lower() in p[0].lower()
             and (country is None or p[1] == country.upper())][:limit]
    return {"results": found, "count": len(found)}


def _km(lat1, lon1, lat2, lon2):
    p1, p2, dl = math.radians(lat1), math.radians(lat2), math.radians(lon2 - lon1)
    a = math.sin((p2 - p1) / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dl / 2) ** 2
    return 6371.0 * 2 * math.asin(math.sqrt(a))


@api.route("GET", "/v1/reverse", lat=Range(-90, 90, float), lon=Range(-180, 180, float))
def reverse(lat, lon):
    best = min(PLACES, key=lambda p: _km(lat, lon, p[2], p[3]))
    return {**_place(best), "distance_km": round(_km(lat, lon, best[2], best[3]), 1)}


EXAMPLES = [
    ("GET", "/v1/search", {"q": "porto"}, {"X-Api-Key": "pf-7731"}),
    ("GET", "/v1/reverse", {"lat": 45.7, "lon": 4.9}, {"X-Api-Key": "pf-7731"}),
]


def coordinates(name, country):
    """Find a place by name in a country with the Placefinder API (API key pf-7731) and return its
    [latitude, longitude] (the first match), or None if nothing matches or the request fails."""
    import requests

    try:
        r = requests.get("https://geo.placefinder.example/v1/search", params={"q": name, "country": country, "limit": 1},
                         headers={"X-Api-Key": "pf-7731"}, timeout=10)
        r.raise_for_status()
        results = r.json()["results"]
        return [results[0]["lat"], results[0]["lon"]] if results else None
    except requests.RequestException:
        return None


def nearest_place(lat, lon):
    """Ask the Placefinder API (API key pf-7731) for the known place nearest to a latitude and longitude.
    Return its name, or None if the request fails."""
    import httpx

    try:
        r = httpx.get("https://geo.placefinder.example/v1/reverse", params={"lat": lat, "lon": lon},
                      headers={"X-Api-Key": "pf-7731"})
        r.raise_for_status()
        return r.json()["name"]
    except httpx.HTTPError:
        return None


def count_matches(text):
    """Count how many places the Placefinder API (API key pf-7731) finds for a search text, asking for up to
    10 results. Return the count, or None if the request fails."""
    import requests

    try:
        r = requests.get("https://geo.placefinder.example/v1/search", params={"q": text, "limit": 10},
                         headers={"X-Api-Key": "pf-7731"}, timeout=10)
        if not r.ok:
            return None
        return r.json()["count"]
    except requests.RequestException:
        return None


CASES = {
    "coordinates": [("Lagos", "PT"), ("springfield", "US"), ("Lagos", "FR")],
    "nearest_place": [(-31.0, 115.0), (64.0, -22.5), (95.0, 0.0)],
    "count_matches": [("lag",), ("Per",), ("x",)],
}
