"""Breathe, an air quality API at https://api.breathe.example. Every request needs the query parameter
token=br-open-1 (a missing or wrong token is a 401 {"error": "invalid token"}).
GET /feed/{city}/?token=... returns {"status": "ok", "data": {"city", "aqi", "dominant", "level"}} where
level names the AQI band: good (0-50), moderate (51-100), unhealthy for sensitive groups (101-150),
unhealthy (151-200), very unhealthy (above 200). City names are lower-case slugs (the lookup lower-cases);
an unknown city answers 200 {"status": "error", "data": "Unknown station"}.
GET /stations?city=NAME&token=... returns {"stations": [{"id", "name"}, ...]} of a city (empty for an
unknown city).
GET /stations/{station_id}/readings?pollutant=pm25|pm10|o3|no2&token=... returns {"station",
"pollutant", "values": [hourly readings, oldest first]} (another pollutant is a 422; an unknown station a
404)."""

from aac.sandbox.web_service import HTTPError, OneOf, Service

api = Service("api.breathe.example")

TOKEN = "br-open-1"
CITIES = {"delhi": (168, "pm25"), "zurich": (22, "o3"), "santiago": (74, "pm10"), "accra": (112, "pm25")}
STATIONS = {"ST-1": ("delhi", "Anand Vihar"), "ST-2": ("delhi", "RK Puram"), "ST-3": ("zurich", "Kaserne"),
            "ST-4": ("santiago", "Parque O'Higgins")}
READINGS = {"pm25": [61, 64, 70, 66], "pm10": [88, 90, 97, 93], "o3": [31, 35, 40, 38], "no2": [22, 25, 21, 19]}
BANDS = [(50, "good"), (100, "moderate"), (150, "unhealthy for sensitive groups"), (200, "unhealthy")]


def _check(token):
    if token != TOKEN:
        raise HTTPError(401, "invalid token")


@api.route("GET", "/feed/{city}")
def feed(city, token=""):
    _check(token)
    if city.lower() not in CITIES:
        return {"status": "error", "data": "Unknown station"}
    aqi, dominant = CITIES[city.lower()]
    level = next((name for top, name in BANDS if aqi <= top), "very unhealthy")
    return {"status": "ok", "data": {"city": city.lower(), "aqi": aqi, "dominant": dominant, "level": level}}


@api.route("GET", "/stations")
def stations(city, token=""):
    _check(token)
    return {"stations": [{"id": k, "name": n} for k, (c, n) in STATIONS.items() if c == city.lower()]}


@api.route("GET", "/stations/{station_id}/readings", pollutant=OneOf(*READINGS))
def readings(station_id, pollutant, token=""):
    _check(token)
    if station_id not in STATIONS:
        raise HTTPError(404, f"no station {station_id}")
    offset = int(station_id[3:])
    return {"station": station_id, "pollutant": pollutant, "values": [v + offset for v in READINGS[pollutant]]}


EXAMPLES = [
    ("GET", "/feed/zurich/", {"token": "br-open-1"}),
    ("GET", "/stations", {"city": "Delhi", "token": "br-open-1"}),
]


def aqi_level(city):
    """Get the air quality level name (good, moderate, ...) of a city from the Breathe API (token br-open-1).
    Return it, or None if the city is unknown or the request fails."""
    import requests

    try:
        r = requests.get(f"https://api.breathe.example/feed/{city}/", params={"token": "br-open-1"}, timeout=10)
        r.raise_for_status()
        body = r.json()
        return body["data"]["level"] if body["status"] == "ok" else None
    except requests.RequestException:
        return None


def peak_reading(station_id, pollutant):
    """Get the highest recent hourly reading of a pollutant (pm25, pm10, o3 or no2) at a Breathe station
    (token br-open-1). Return it, or None if the request fails."""
    import httpx

    try:
        r = httpx.get(f"https://api.breathe.example/stations/{station_id}/readings",
                      params={"pollutant": pollutant, "token": "br-open-1"})
        r.raise_for_status()
        return max(r.json()["values"])
    except httpx.HTTPError:
        return None


CASES = {
    "aqi_level": [("Accra",), ("delhi",), ("Lagos",)],
    "peak_reading": [("ST-2", "pm10"), ("ST-4", "o3"), ("ST-9", "pm25"), ("ST-1", "co")],
}
