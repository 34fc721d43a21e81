"""Metroline, a public transit API at https://api.metroline.example. Every request needs the header
X-Api-Key: ml-rider-6 (401 otherwise).
GET /v1/stops?lat=X&lon=Y&radius_m=R returns {"stops": [{"id", "name", "distance_m"}, ...]} within R
metres (50..2000, default 500; outside is a 422) of the point, nearest first (distances on a flat
approximation: 111 km per degree of latitude, 111 km x cos(latitude) per degree of longitude, rounded to
whole metres).
GET /v1/stops/{stop_id}/arrivals?limit=N returns {"stop", "arrivals": [{"line", "destination",
"minutes"}, ...]} soonest first, at most N (1..10, default 3); an unknown stop is a 404.
GET /v1/lines/{line_id} returns {"id", "name", "stops": [stop ids in order]}; an unknown line is a 404."""

import math

from aac.sandbox.web_service import HTTPError, Range, Service

api = Service("api.metroline.example", key_header="X-Api-Key", key="ml-rider-6")

STOPS = {"S1": ("Central", 52.5200, 13.4050), "S2": ("Museum", 52.5215, 13.4010), "S3": ("Riverside", 52.5170, 13.4100),
         "S4": ("Park Gate", 52.5300, 13.3900)}
ARRIVALS = {"S1": [("U2", "Park Gate", 4), ("T7", "Riverside", 1), ("U2", "Riverside", 9), ("B40", "Airport", 12)],
            "S2": [("U2", "Park Gate", 2)], "S3": [("T7", "Central", 6), ("B40", "Airport", 15)], "S4": []}
LINES = {"U2": ("Circle line", ["S3", "S1", "S2", "S4"]), "T7": ("River tram", ["S1", "S3"]),
         "B40": ("Airport bus", ["S1", "S3"])}


def _metres(lat, lon, stop):
    dy = (stop[1] - lat) * 111000
    dx = (stop[2] - lon) * 111000 * math.cos(math.radians(lat))
    return round(math.hypot(dx, dy))


@api.route("GET", "/v1/stops", lat=float, lon=float, radius_m=Range(50, 2000))
def stops(lat, lon, radius_m=500):
    rows = sorted((_metres(lat, lon, s), k, s[0]) for k, s in STOPS.items())
    return {"stops": [{"id": k, "name": n, "distance_m": d} for d, k, n in rows if d <= radius_m]}


@api.route("GET", "/v1/stops/{stop_id}/arrivals", limit=Range(1, 10))
def arrivals(stop_id, limit=3):
    if stop_id not in STOPS:
        raise HTTPError(404, f"no stop {stop_id}")
    rows = sorted(ARRIVALS[stop_id], key=lambda a: a[2])[:limit]
    return {"stop": stop_id, "arrivals": [{"line": ln, "destination": d, "minutes": m} for ln, d, m in rows]}


@api.route("GET", "/v1/lines/{line_id}")
def line(line_id):
    if line_id not in LINES:
        raise HTTPError(404, f"no line {line_id}")
    name, members = LINES[line_id]
    return {"id": line_id, "name": name, "stops": members}


EXAMPLES = [
    ("GET", "/v1/stops/S1/arrivals", None, {"X-Api-Key": "ml-rider-6"}),
    ("GET", "/v1/lines/T7", None, {"X-Api-Key": "ml-rider-6"}),
]


def next_departure(stop_id):
    """Get the number of minutes until the next arrival at a Metroline stop (key ml-rider-6 in the X-Api-Key
    header). Return it, or None when nothing is coming or the request fails."""
    import requests

    try:
        r = requests.get(f"https://api.metroline.example/v1/stops/{stop_id}/arrivals", params={"limit": 1},
                         headers={"X-Api-Key": "ml-rider-6"}, timeout=10)
        r.raise_for_status()
        arrivals = r.json()["arrivals"]
        return arrivals[0]["minutes"] if arrivals else None
    except requests.RequestException:
        return None


def nearby_stops(lat, lon, radius):
    """List the ids of the Metroline stops within `radius` metres of a point (key ml-rider-6 in the X-Api-Key
    header), nearest first. Return the list, or None if the request fails."""
    import httpx

    try:
        r = httpx.get("https://api.metroline.example/v1/stops", params={"lat": lat, "lon": lon, "radius_m": radius},
                      headers={"X-Api-Key": "ml-rider-6"})
        r.raise_for_status()
        return [s["id"] for s in r.json()["stops"]]
    except httpx.HTTPError:
        return None


def line_stops(line_id):
    """List the stop ids of a Metroline line in order (key ml-rider-6 in the X-Api-Key header). Return the
    list, or None if the line is unknown or the request fails."""
    import requests

    try:
        r = requests.get(f"https://api.metroline.example/v1/lines/{line_id}", headers={"X-Api-Key": "ml-rider-6"},
                         timeout=10)
        r.raise_for_status()
        return r.json()["stops"]
    except requests.RequestException:
        return None


CASES = {
    "next_departure": [("S1",), ("S3",), ("S4",), ("S9",)],
    "nearby_stops": [(52.52, 13.405, 400), (52.52, 13.405, 2000), (52.52, 13.405, 10)],
    "line_stops": [("U2",), ("B40",), ("M1",)],
}
