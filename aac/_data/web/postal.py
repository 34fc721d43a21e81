"""Zipspot, a postal code API at https://api.zipspot.example (no authentication).
GET /{country}/{code} returns {"post code", "country", "country abbreviation", "places": [{"place name",
"state", "latitude", "longitude"}, ...]} for a country (two letters, case-insensitive: us, de, fr) and a
postal code; an unknown code is a 404 with an empty object {}; an unsupported country a 404 {"error":
"country not supported"}.
GET /{country}/{state}/{city} looks codes up by place (state abbreviation and city, case-insensitive) and
returns {"country", "state", "place name", "post codes": [sorted]}; an unknown place is a 404 {}."""

from aac.sandbox.web_service import HTTPError, Service

api = Service("api.zipspot.example")

COUNTRIES = {"us": "United States", "de": "Germany", "fr": "France"}
CODES = {
    ("us", "97201"): [("Portland", "OR", 45.5079, -122.6906)], ("us", "97205"): [("Portland", "OR", 45.5209, -122.6855)],
    ("us", "05401"): [("Burlington", "VT", 44.4759, -73.2121)],
    ("de", "10115"): [("Berlin", "BE", 52.5323, 13.3846)], ("de", "80331"): [("Muenchen", "BY", 48.1374, 11.5755)],
    ("fr", "69001"): [("Lyon", "ARA", 45.7676, 4.8344)], ("fr", "69002"): [("Lyon", "ARA", 45.7485, 4.8272)],
}


def _country(country):
    country = country.lower()
    if country not in COUNTRIES:
        raise HTTPError(404, "country not supported")
    return country


@api.route("GET", "/{country}/{code}")
def by_code(country, code):
    country = _country(country)
    if (country, code) not in CODES:
        raise HTTPError(404, "not found")
    places = [{"place name": n, "state": s, "latitude": lat, "longitude": lon} for n, s, lat, lon in CODES[(country, code)]]
    return {"post code": code, "country": COUNTRIES[country], "country abbreviation": country.upper(), "places": places}


@api.route("GET", "/{country}/{state}/{city}")
def by_place(country, state, city):
    country = _country(country)
    codes = sorted(c for (k, c), places in CODES.items() for n, s, _, _ in places
                   if k == country and s.lower() == state.lower() and n.lower() == city.lower())
    if not codes:
        raise HTTPError(404, "not found")
    return {"country": COUNTRIES[country], "state": state.upper(), "place name": city.title(), "post codes": codes}


EXAMPLES = [
    ("GET", "/de/10115"),
    ("GET", "/us/or/portland"),
]


def city_of(country, code):
    """Find the place name of a postal code in a country (two-letter code) with the Zipspot API. Return the
    first place's name, or None if the code is unknown or the request fails."""
    import requests

    try:
        r = requests.get(f"https://api.zipspot.example/{country}/{code}", timeout=10)
        r.raise_for_status()
        return r.json()["places"][0]["place name"]
    except requests.RequestException:
        return None


def codes_of(country, state, city):
    """List the postal codes of a city in a state of a country with the Zipspot API. Return the sorted list,
    or None if the place is unknown or the request fails."""
    import json
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(f"https://api.zipspot.example/{country}/{state}/{city}", timeout=10) as resp:
            return json.loads(resp.read())["post codes"]
    except urllib.error.URLError:
        return None


CASES = {
    "city_of": [("fr", "69002"), ("US", "05401"), ("us", "99999"), ("it", "00100")],
    "codes_of": [("fr", "ara", "lyon"), ("us", "OR", "Portland"), ("de", "BE", "Hamburg")],
}
