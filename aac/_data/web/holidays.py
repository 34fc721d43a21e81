"""Dayoff, a public holidays API at https://api.dayoff.example (no authentication).
GET /api/v3/PublicHolidays/{year}/{country} returns the holidays of a country (two-letter code,
case-insensitive) in a year (2020-2030; outside is a 404 {"error": "year not available"}) as a list
[{"date": "YYYY-MM-DD", "name", "fixed": true|false}, ...] in date order; an unknown country is a 404.
GET /api/v3/NextPublicHolidays/{country}?after=YYYY-MM-DD returns the next 3 holidays strictly after the
date (default 2024-06-01), same shape; a malformed date is a 400.
GET /api/v3/AvailableCountries returns [{"countryCode", "name"}, ...] sorted by code.
Fixed holidays fall on the same date each year; the others (marked fixed false) move, and the service
knows them for 2024 and 2025 only (other years list only the fixed ones)."""

import re

from aac.sandbox.web_service import HTTPError, Service

api = Service("api.dayoff.example")

COUNTRIES = {"IE": "Ireland", "JP": "Japan", "NO": "Norway"}
FIXED = {"IE": [("01-01", "New Year's Day"), ("03-17", "Saint Patrick's Day"), ("12-25", "Christmas Day")],
         "JP": [("01-01", "New Year's Day"), ("02-11", "Foundation Day"), ("05-03", "Constitution Day")],
         "NO": [("01-01", "New Year's Day"), ("05-17", "Constitution Day"), ("12-25", "Christmas Day")]}
MOVING = {("IE", 2024): [("04-01", "Easter Monday")], ("IE", 2025): [("04-21", "Easter Monday")],
          ("NO", 2024): [("03-29", "Good Friday"), ("05-09", "Ascension Day")],
          ("NO", 2025): [("04-18", "Good Friday"), ("05-29", "Ascension Day")],
          ("JP", 2024): [("09-16", "Respect for the Aged Day")], ("JP", 2025): [("09-15", "Respect for the Aged Day")]}


def _holidays(year, country):
    country = country.upper()
    if country not in COUNTRIES:
        raise HTTPError(404, f"unknown country {country}")
    if not 2020 <= year <= 2030:
        raise HTTPError(404, "year not available")
    rows = [(f"{year}-{d}", n, True) for d, n in FIXED[country]]
    rows += [(f"{year}-{d}", n, False) for d, n in MOVING.get((country, year), [])]
    return [{"date": d, "name": n, "fixed": f} for d, n, f in sorted(rows)]


@api.route("GET", "/api/v3/PublicHolidays/{year}/{country}", year=int)
def holidays(year, country):
    return _holidays(year, country)


@api.route("GET", "/api/v3/NextPublicHolidays/{country}")
def next_holidays(country, after="2024-06-01"):
    if not re.fullmatch(r"20\d\d-\d\d-\d\d", after):
        raise HTTPError(400, "parameter 'after' must be a date YYYY-MM-DD")
    year = int(after[:4])
    rows = [h for y in (year, year + 1) for h in _holidays(y, country) if h["date"] > after]
    return rows[:3]


@api.route("GET", "/api/v3/AvailableCountries")
def available():
    return [{"countryCode": c, "name": n} for c, n in sorted(COUNTRIES.items())]


EXAMPLES = [
    ("GET", "/api/v3/PublicHolidays/2024/ie"),
    ("GET", "/api/v3/AvailableCountries"),
]


def holiday_names(country, year):
    """List the names of a country's public holidays in a year, in date order, with the Dayoff API. Return
    the list, or None if the request fails."""
    import requests

    try:
        r = requests.get(f"https://api.dayoff.example/api/v3/PublicHolidays/{year}/{country}", timeout=10)
        r.raise_for_status()
        return [h["name"] for h in r.json()]
    except requests.RequestException:
        return None


def next_holiday(country, after):
    """Find the date of the first public holiday of a country strictly after a date (YYYY-MM-DD) with the
    Dayoff API. Return the date, or None if the request fails."""
    import httpx

    try:
        r = httpx.get(f"https://api.dayoff.example/api/v3/NextPublicHolidays/{country}", params={"after": after})
        r.raise_for_status()
        return r.json()[0]["date"]
    except httpx.HTTPError:
        return None


CASES = {
    "holiday_names": [("NO", 2025), ("jp", 2027), ("FR", 2024), ("IE", 2031)],
    "next_holiday": [("IE", "2024-03-18"), ("NO", "2025-12-31"), ("JP", "June 1")],
}
