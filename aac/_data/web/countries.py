"""Atlasdata, a country facts API at https://api.atlasdata.example (no authentication).
GET /v3/countries/{code} takes a two- or three-letter code (case-insensitive) and returns {"code",
"code3", "name", "capital", "region", "population", "currencies": [...], "borders": [code3, ...]};
an unknown code is a 404.
GET /v3/countries?region=NAME&min_population=N lists {"countries": [{"code", "name"}, ...], "count"}
sorted by name, filtered by region (exact, case-insensitive: Europe, Asia, Africa, Americas, Oceania)
and by population >= N; an unknown region is a 422.
GET /v3/countries/{code}/neighbors returns {"code", "neighbors": [names of the bordering countries the
service knows, sorted]}."""

from aac.sandbox.web_service import HTTPError, Range, Service

api = Service("api.atlasdata.example")

COUNTRIES = [
    ("PT", "PRT", "Portugal", "Lisbon", "Europe", 10300000, ["EUR"], ["ESP"]),
    ("ES", "ESP", "Spain", "Madrid", "Europe", 47400000, ["EUR"], ["PRT", "FRA", "AND"]),
    ("FR", "FRA", "France", "Paris", "Europe", 68000000, ["EUR"], ["ESP", "BEL", "CHE", "AND"]),
    ("CH", "CHE", "Switzerland", "Bern", "Europe", 8800000, ["CHF"], ["FRA"]),
    ("KE", "KEN", "Kenya", "Nairobi", "Africa", 54000000, ["KES"], ["TZA"]),
    ("TZ", "TZA", "Tanzania", "Dodoma", "Africa", 63600000, ["TZS"], ["KEN"]),
    ("NZ", "NZL", "New Zealand", "Wellington", "Oceania", 5100000, ["NZD"], []),
    ("PE", "PER", "Peru", "Lima", "Americas", 34000000, ["PEN"], []),
]
REGIONS = ("Europe", "Asia", "Africa", "Americas", "Oceania")


def _find(code):
    code = code.upper()
    for c in COUNTRIES:
        if code in (c[0], c[1]):
            return c
    raise HTTPError(404, f"no country with code {code}")


@api.route("GET", "/v3/countries/{code}")
def country(code):
    c = _find(code)
    return {"code": c[0], "code3": c[1], "name": c[2], "capital": c[3], "region": c[4], "population": c[5],
            "currencies": c[6], "borders": c[7]}


@api.route("GET", "/v3/countries", min_population=Range(0, None))
def countries(region=None, min_population=0):
    if region is not None and region.capitalize() not in REGIONS:
        raise HTTPError(422, f"unknown region {region}; one of: {', '.join(REGIONS)}")
    rows = sorted((c for c in COUNTRIES if (region is None or c[4] == region.capitalize()) and c[5] >= min_population),
                  key=lambda c: c[2])
    return {"countries": [{"code": c[0], "name": c[2]} for c in rows], "count": len(rows)}


@api.route("GET", "/v3/countries/{code}/neighbors")
def neighbors(code):
    c = _find(code)
    return {"code": c[0], "neighbors": sorted(n[2] for n in COUNTRIES if n[1] in c[7])}


EXAMPLES = [
    ("GET", "/v3/countries/pt"),
    ("GET", "/v3/countries", {"region": "Africa"}),
]


def capital_of(code):
    """Get the capital city of a country from the Atlasdata API, given the country's two- or three-letter
    code. Return the capital, or None if the code is unknown or the request fails."""
    import requests

    try:
        r = requests.get(f"https://api.atlasdata.example/v3/countries/{code}", timeout=10)
        r.raise_for_status()
        return r.json()["capital"]
    except requests.RequestException:
        return None


def big_countries(region, population):
    """List the names of the countries of a region with at least a given population, using the Atlasdata
    API. Return the names sorted alphabetically, or None if the request fails."""
    import requests

    try:
        r = requests.get("https://api.atlasdata.example/v3/countries",
                         params={"region": region, "min_population": population}, timeout=10)
        r.raise_for_status()
        return [c["name"] for c in r.json()["countries"]]
    except requests.RequestException:
        return None


def neighbor_names(code):
    """Get the names of the neighbouring countries of a country from the Atlasdata API. Return them as a
    sorted list, or None if the request fails."""
    import httpx

    try:
        r = httpx.get(f"https://api.atlasdata.example/v3/countries/{code}/neighbors")
        r.raise_for_status()
        return r.json()["neighbors"]
    except httpx.HTTPError:
        return None


CASES = {
    "capital_of": [("ke",), ("NZL",), ("XX",)],
    "big_countries": [("Europe", 10000000), ("africa", 60000000), ("Antarctica", 0)],
    "neighbor_names": [("ES",), ("che",), ("QQ",)],
}
