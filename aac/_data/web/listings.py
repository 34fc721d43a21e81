"""Homefinder, a property listings API at https://api.homefinder.example. Every request needs the header
X-Api-Key: hf-agent-4 (401 otherwise).
GET /v2/listings?city=NAME&min_beds=N&max_price=P&sort=price_asc|price_desc|newest returns {"listings":
[{"id", "city", "beds", "price", "listed"}, ...], "total"}: city required (case-insensitive), min_beds and
max_price optional integers (max_price under 1 is a 422), sorted by newest (default; latest listed date
first), or by price.
GET /v2/listings/{listing_id} returns a listing with "area_m2" and "address"; an unknown id is a 404.
GET /v2/listings/{listing_id}/estimate returns {"id", "estimate", "per_m2"}: the estimated value = area x
the city's price per m2 (Ghent 3100, Graz 3900), rounded to the nearest thousand."""

from aac.sandbox.web_service import HTTPError, OneOf, Range, Service

api = Service("api.homefinder.example", key_header="X-Api-Key", key="hf-agent-4")

PER_M2 = {"Ghent": 3100, "Graz": 3900}
LISTINGS = {
    "H-201": ("Ghent", 2, 265000, "2024-03-28", 78, "Veldstraat 4"),
    "H-202": ("Ghent", 3, 349000, "2024-04-02", 104, "Kouter 19"),
    "H-203": ("Ghent", 1, 189000, "2024-04-05", 52, "Overpoort 7"),
    "H-301": ("Graz", 3, 455000, "2024-03-30", 110, "Sackstrasse 12"),
    "H-302": ("Graz", 4, 610000, "2024-04-01", 151, "Annenstrasse 3"),
}


def _listing(listing_id):
    if listing_id not in LISTINGS:
        raise HTTPError(404, f"no listing {listing_id}")
    return LISTINGS[listing_id]


def _view(k, v):
    return {"id": k, "city": v[0], "beds": v[1], "price": v[2], "listed": v[3]}


@api.route("GET", "/v2/listings", min_beds=int, max_price=Range(1, None),
           sort=OneOf("price_asc", "price_desc", "newest"))
def listings(city, min_beds=None, max_price=None, sort="newest"):
    rows = [_view(k, v) for k, v in LISTINGS.items() if v[0].lower() == city.lower()
            and (min_beds is None or v[1] >= min_beds) and (max_price is None or v[2] <= max_price)]
    key = {"price_asc": lambda r: r["price"], "price_desc": lambda r: -r["price"]}.get(sort)
    rows.sort(key=key) if key else rows.sort(key=lambda r: r["listed"], reverse=True)
    return {"listings": rows, "total": len(rows)}


@api.route("GET", "/v2/listings/{listing_id}")
def listing(listing_id):
    v = _listing(listing_id)
    return {**_view(listing_id, v), "area_m2": v[4], "address": v[5]}


@api.route("GET", "/v2/listings/{listing_id}/estimate")
def estimate(listing_id):
    v = _listing(listing_id)
    return {"id": listing_id, "estimate": round(v[4] * PER_M2[v[0]], -3), "per_m2": PER_M2[v[0]]}


EXAMPLES = [
    ("GET", "/v2/listings", {"city": "Graz"}, {"X-Api-Key": "hf-agent-4"}),
    ("GET", "/v2/listings/H-203", None, {"X-Api-Key": "hf-agent-4"}),
]


def cheapest_listing(city, beds):
    """Find the cheapest Homefinder listing in a city with at least `beds` bedrooms (key hf-agent-4 in the
    X-Api-Key header). Return its id, or None if there is none or the request fails."""
    import requests

    try:
        r = requests.get("https://api.homefinder.example/v2/listings",
                         params={"city": city, "min_beds": beds, "sort": "price_asc"},
                         headers={"X-Api-Key": "hf-agent-4"}, timeout=10)
        r.raise_for_status()
        rows = r.json()["listings"]
        return rows[0]["id"] if rows else None
    except requests.RequestException:
        return None


def estimated_value(listing_id):
    """Get Homefinder's estimated value of a listing (key hf-agent-4 in the X-Api-Key header). Return it, or
    None if the listing is unknown or the request fails."""
    import httpx

    try:
        r = httpx.get(f"https://api.homefinder.example/v2/listings/{listing_id}/estimate",
                      headers={"X-Api-Key": "hf-agent-4"})
        r.raise_for_status()
        return r.json()["estimate"]
    except httpx.HTTPError:
        return None


CASES = {
    "cheapest_listing": [("ghent", 2), ("Graz", 4), ("Graz", 6)],
    "estimated_value": [("H-202",), ("H-301",), ("H-999",)],
}
