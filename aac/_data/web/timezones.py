"""Clockwork, a time zone API at https://api.clockwork.example (no authentication). Zones have fixed UTC
offsets here (no daylight saving).
GET /v1/zone?name=Area/City returns {"name", "offset": "+HH:MM", "offset_minutes", "abbreviation"}; an
unknown zone is a 404.
GET /v1/convert?time=HH:MM&from=ZONE&to=ZONE returns {"time", "from", "to", "converted": "HH:MM",
"day_shift": -1, 0 or 1} (the converted time on a 24-hour clock, and whether it falls on the previous or
next day); a malformed time is a 422.
GET /v1/zones?region=Europe|Asia|America|Pacific returns {"zones": [names sorted]}; another region is a
422."""

import re

from aac.sandbox.web_service import HTTPError, OneOf, Service

api = Service("api.clockwork.example")

ZONES = {"Europe/Lisbon": (0, "WET"), "Europe/Warsaw": (60, "CET"), "Asia/Kolkata": (330, "IST"),
         "Asia/Tokyo": (540, "JST"), "America/Bogota": (-300, "COT"), "America/Denver": (-420, "MST"),
         "Pacific/Auckland": (720, "NZST")}


def _zone(name):
    if name not in ZONES:
        raise HTTPError(404, f"unknown zone {name}")
    return ZONES[name]


def _offset(minutes):
    sign = "+" if minutes >= 0 else "-"
    return f"{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"


@api.route("GET", "/v1/zone")
def zone(name):
    minutes, abbreviation = _zone(name)
    return {"name": name, "offset": _offset(minutes), "offset_minutes": minutes, "abbreviation": abbreviation}


@api.route("GET", "/v1/convert")
def convert(time, from_, to):
    m = re.fullmatch(r"([01]\d|2[0-3]):([0-5]\d)", time)
    if m is None:
        raise HTTPError(422, "time must be HH:MM on a 24-hour clock")
    total = int(m.group(1)) * 60 + int(m.group(2)) - _zone(from_)[0] + _zone(to)[0]
    shift, minutes = divmod(total, 24 * 60)
    return {"time": time, "from": from_, "to": to, "converted": f"{minutes // 60:02d}:{minutes % 60:02d}",
            "day_shift": shift}


@api.route("GET", "/v1/zones", region=OneOf("Europe", "Asia", "America", "Pacific"))
def zones(region):
    return {"zones": sorted(z for z in ZONES if z.startswith(region + "/"))}


EXAMPLES = [
    ("GET", "/v1/zone", {"name": "Asia/Kolkata"}),
    ("GET", "/v1/convert", {"time": "09:30", "from": "Europe/Lisbon", "to": "Asia/Tokyo"}),
]


def local_time(time, source, target):
    """Convert a clock time HH:MM from one time zone to another with the Clockwork API. Return the
    converted HH:MM, or None if the request fails."""
    import requests

    try:
        r = requests.get("https://api.clockwork.example/v1/convert",
                         params={"time": time, "from": source, "to": target}, timeout=10)
        r.raise_for_status()
        return r.json()["converted"]
    except requests.RequestException:
        return None


def utc_offset(zone):
    """Get the UTC offset of a time zone in minutes from the Clockwork API. Return the number, or None if
    the zone is unknown or the request fails."""
    import json
    import urllib.error
    import urllib.parse
    import urllib.request

    try:
        url = "https://api.clockwork.example/v1/zone?" + urllib.parse.urlencode({"name": zone})
        with urllib.request.urlopen(url, timeout=10) as resp:
            return json.loads(resp.read())["offset_minutes"]
    except urllib.error.URLError:
        return None


def zones_in(region):
    """List the time zone names of a region (Europe, Asia, America or Pacific) known to the Clockwork API.
    Return the list, or None if the request fails."""
    import requests

    try:
        r = requests.get("https://api.clockwork.example/v1/zones", params={"region": region}, timeout=10)
        r.raise_for_status()
        return r.json()["zones"]
    except requests.RequestException:
        return None


CASES = {
    "local_time": [("23:00", "Europe/Warsaw", "Asia/Kolkata"), ("01:15", "Europe/Lisbon", "America/Denver"),
                   ("25:00", "Asia/Tokyo", "Europe/Lisbon")],
    "utc_offset": [("America/Bogota",), ("Pacific/Auckland",), ("Mars/Base",)],
    "zones_in": [("Europe",), ("America",), ("Africa",)],
}
