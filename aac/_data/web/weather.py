"""Weatherly, a weather API for a fixed set of cities at https://api.weatherly.example. Every request needs
the header X-Api-Key (the demo key is wk-demo-2291): without it the answer is 401 {"error": "missing X-Api-Key
header"}, with another key 401 "invalid API key". City names are matched without regard to case; an unknown
city is a 404.
GET /v2/current?city=NAME&units=metric|imperial (units default metric) returns {"city", "temp", "units",
"condition", "wind_kmh"}: the temperature in Celsius (metric) or Fahrenheit (imperial, rounded to one
decimal); another units value is a 422.
GET /v2/forecast?city=NAME&days=N (N from 1 to 5, default 3) returns {"city", "days": [{"day", "high_c",
"low_c", "condition"}, ...]} for the next N days, day 1 first; N outside 1..5 is a 422, a non-integer N a 400.
GET /v2/cities returns {"cities": [names in alphabetical order], "count"}.
A missing city is a 400 naming the parameter; an unknown parameter is a 400 listing the allowed ones."""

from aac.sandbox.web_service import HTTPError, OneOf, Range, Service

api = Service("api.weatherly.example", key_header="X-Api-Key", key="wk-demo-2291")

CITIES = {
    "oslo": ("Oslo", 4.0, "cloudy", 14, [(6, 1, "rain"), (8, 2, "cloudy"), (5, -1, "snow"), (7, 0, "sunny"),
                                        (9, 3, "cloudy")]),
    "lima": ("Lima", 19.5, "sunny", 9, [(22, 17, "sunny"), (21, 16, "cloudy"), (23, 17, "sunny"),
                                       (22, 18, "sunny"), (20, 16, "fog")]),
    "nairobi": ("Nairobi", 23.0, "rain", 11, [(25, 14, "rain"), (26, 15, "sunny"), (24, 14, "rain"),
                                             (25, 13, "cloudy"), (27, 15, "sunny")]),
    "kyoto": ("Kyoto", 12.5, "sunny", 6, [(15, 6, "sunny"), (14, 7, "cloudy"), (13, 5, "rain"),
                                         (16, 8, "sunny"), (17, 9, "sunny")]),
}


def _city(name):
    found = CITIES.get(name.strip().lower())
    if found is None:
        raise HTTPError(404, f"unknown city {name}")
    return found


@api.route("GET", "/v2/current", units=OneOf("metric", "imperial"))
def current(city, units="metric"):
    name, temp_c, condition, wind, _ = _city(city)
    temp = temp_c if units == "metric" else round(temp_c * 9 / 5 + 32, 1)
    return {"city": name, "temp": temp, "units": units, "condition": condition, "wind_kmh": wind}


@api.route("GET", "/v2/forecast", days=Range(1, 5))
def forecast(city, days=3):
    name, _, _, _, week = _city(city)
    return {"city": name, "days": [{"day": k + 1, "high_c": high, "low_c": low, "condition": sky}
                                   for k, (high, low, sky) in enumerate(week[:days])]}


@api.route("GET", "/v2/cities")
def cities():
    names = sorted(c[0] for c in CITIES.values())
    return {"cities": names, "count": len(names)}


EXAMPLES = [
    ("GET", "/v2/current", {"city": "Oslo"}, {"X-Api-Key": "wk-demo-2291"}),
    ("GET", "/v2/cities", None, {"X-Api-Key": "wk-demo-2291"}),
]


def current_temperature(city):
    """Get the current temperature in Celsius for a city from the Weatherly API (API key wk-demo-2291).
    Return the temperature as a number, or None if the request fails."""
    import requests

    try:
        r = requests.get("https://api.weatherly.example/v2/current", params={"city": city},
                         headers={"X-Api-Key": "wk-demo-2291"}, timeout=10)
        r.raise_for_status()
        return r.json()["temp"]
    except requests.RequestException:
        return None


def daily_highs(city, days):
    """Get the forecast for the next `days` days in a city from the Weatherly API (API key wk-demo-2291) and
    return the list of daily high temperatures in Celsius, first day first; None if the request fails."""
    import httpx

    try:
        r = httpx.get("https://api.weatherly.example/v2/forecast", params={"city": city, "days": days},
                      headers={"X-Api-Key": "wk-demo-2291"})
        r.raise_for_status()
        return [d["high_c"] for d in r.json()["days"]]
    except httpx.HTTPError:
        return None


def temperature_fahrenheit(city):
    """Get the current temperature of a city in Fahrenheit from the Weatherly API (API key wk-demo-2291).
    Return the number, or None if the request fails."""
    import json
    import urllib.error
    import urllib.parse
    import urllib.request

    query = urllib.parse.urlencode({"city": city, "units": "imperial"})
    req = urllib.request.Request(f"https://api.weatherly.example/v2/current?{query}",
                                 headers={"X-Api-Key": "wk-demo-2291"})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return json.loads(resp.read())["temp"]
    except urllib.error.URLError:
        return None


CASES = {
    "current_temperature": [("Oslo",), ("KYOTO",), ("Atlantis",)],
    "daily_highs": [("Lima", 2), ("Nairobi", 5), ("Oslo", 9)],
    "temperature_fahrenheit": [("Kyoto",), ("Lima",), ("Paris",)],
}
