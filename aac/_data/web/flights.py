"""Skytrack, a flight status API at https://api.skytrack.example. Every request needs the header
X-Api-Key: sk-fl-3 (401 otherwise).
GET /v1/flights/{number}?date=YYYY-MM-DD returns {"flight", "date", "from", "to", "scheduled", "status",
"delay_min", "gate"} for a flight number (letters then digits, upper-cased) on a date (default 2024-04-10;
only 2024-04-10 and 2024-04-11 are known: another date is a 404); an unknown flight is a 404.
GET /v1/airports/{iata}/departures?hour=H returns {"airport", "departures": [{"flight", "to",
"scheduled", "status"}, ...]} for 2024-04-10, sorted by time, only those in the hour H (0..23; outside is a
422) when given; an unknown airport code is a 404.
Statuses are scheduled, delayed, cancelled or departed."""

from aac.sandbox.web_service import HTTPError, Range, Service

api = Service("api.skytrack.example", key_header="X-Api-Key", key="sk-fl-3")

FLIGHTS = {  # (flight, date): (from, to, scheduled, status, delay, gate)
    ("NX101", "2024-04-10"): ("OSL", "LIS", "07:40", "departed", 0, "C4"),
    ("NX101", "2024-04-11"): ("OSL", "LIS", "07:40", "scheduled", 0, "C4"),
    ("NX230", "2024-04-10"): ("OSL", "BER", "09:15", "delayed", 45, "B2"),
    ("QL88", "2024-04-10"): ("OSL", "JFK", "09:55", "cancelled", 0, None),
    ("QL90", "2024-04-10"): ("LIS", "OSL", "13:05", "scheduled", 0, "A1"),
}


@api.route("GET", "/v1/flights/{number}")
def flight(number, date="2024-04-10"):
    number = number.upper()
    if (number, date) not in FLIGHTS:
        raise HTTPError(404, f"no flight {number} on {date}")
    origin, dest, scheduled, status, delay, gate = FLIGHTS[(number, date)]
    return {"flight": number, "date": date, "from": origin, "to": dest, "scheduled": scheduled, "status": status,
            "delay_min": delay, "gate": gate}


@api.route("GET", "/v1/airports/{iata}/departures", hour=Range(0, 23))
def departures(iata, hour=None):
    iata = iata.upper()
    if iata not in {v[0] for v in FLIGHTS.values()} | {v[1] for v in FLIGHTS.values()}:
        raise HTTPError(404, f"unknown airport {iata}")
    rows = sorted((v[2], f, v[1], v[3]) for (f, d), v in FLIGHTS.items() if d == "2024-04-10" and v[0] == iata
                  and (hour is None or int(v[2][:2]) == hour))
    return {"airport": iata, "departures": [{"flight": f, "to": to, "scheduled": t, "status": s} for t, f, to, s in rows]}


EXAMPLES = [
    ("GET", "/v1/flights/NX230", None, {"X-Api-Key": "sk-fl-3"}),
    ("GET", "/v1/airports/OSL/departures", {"hour": 9}, {"X-Api-Key": "sk-fl-3"}),
]


def flight_delay(number, date):
    """Get the delay in minutes of a flight on a date (YYYY-MM-DD) from the Skytrack API (key sk-fl-3 in the
    X-Api-Key header). Return the minutes, or None if the flight is unknown or the request fails."""
    import requests

    try:
        r = requests.get(f"https://api.skytrack.example/v1/flights/{number}", params={"date": date},
                         headers={"X-Api-Key": "sk-fl-3"}, timeout=10)
        r.raise_for_status()
        return r.json()["delay_min"]
    except requests.RequestException:
        return None


def departing_flights(airport):
    """List the flight numbers departing from an airport (IATA code) according to the Skytrack API (key
    sk-fl-3 in the X-Api-Key header), in departure order. Return the list, or None if the request fails."""
    import httpx

    try:
        r = httpx.get(f"https://api.skytrack.example/v1/airports/{airport}/departures", headers={"X-Api-Key": "sk-fl-3"})
        r.raise_for_status()
        return [d["flight"] for d in r.json()["departures"]]
    except httpx.HTTPError:
        return None


def is_cancelled(number):
    """Tell whether a flight is cancelled today (the service's default date) with the Skytrack API (key sk-fl-3
    in the X-Api-Key header). Return True or False, or None if the request fails."""
    import requests

    try:
        r = requests.get(f"https://api.skytrack.example/v1/flights/{number}", headers={"X-Api-Key": "sk-fl-3"},
                         timeout=10)
        r.raise_for_status()
        return r.json()["status"] == "cancelled"
    except requests.RequestException:
        return None


CASES = {
    "flight_delay": [("NX230", "2024-04-10"), ("nx101", "2024-04-11"), ("NX101", "2024-05-01")],
    "departing_flights": [("OSL",), ("lis",), ("CDG",)],
    "is_cancelled": [("QL88",), ("QL90",), ("ZZ1",)],
}
