"""Gigpass, an event ticketing API at https://api.gigpass.example. Every request needs the header
Authorization: Bearer gp-box-office (401 otherwise).
GET /v1/events?city=NAME&from=YYYY-MM-DD returns {"events": [{"id", "name", "city", "date",
"tickets_left", "price"}, ...]} sorted by date, filtered by city (case-insensitive) and by date >= from
(a malformed date is a 400).
GET /v1/events/{event_id} returns one event with its "venue"; an unknown id is a 404.
POST /v1/events/{event_id}/tickets with a JSON body {"quantity": int 1..6, "email"} buys tickets and
answers 201 {"order" (o1, o2, ...), "event", "quantity", "total"}: total = quantity x price; more than the
tickets left is a 409, quantity outside 1..6 a 422, an e-mail without @ a 422."""

import re

from aac.sandbox.web_service import HTTPError, Range, Service

api = Service("api.gigpass.example", key_header="Authorization", key="gp-box-office", bearer=True)

EVENTS = {
    "e-10": ["Salt Choir", "Dublin", "2024-06-14", 40, 35, "The Old Hall"],
    "e-11": ["Neon Tide", "Dublin", "2024-06-02", 3, 50, "Dock Arena"],
    "e-12": ["Quiet Orbit", "Leeds", "2024-06-20", 120, 25, "Corn Exchange"],
    "e-13": ["Brass Parade", "Leeds", "2024-05-30", 0, 18, "Town Square"],
}
ORDERS = []


def _event(event_id):
    if event_id not in EVENTS:
        raise HTTPError(404, f"no event {event_id}")
    return EVENTS[event_id]


def _view(k, e):
    return {"id": k, "name": e[0], "city": e[1], "date": e[2], "tickets_left": e[3], "price": e[4]}


@api.route("GET", "/v1/events")
def events(city=None, from_=None):
    if from_ is not None and not re.fullmatch(r"\d{4}-\d\d-\d\d", from_):
        raise HTTPError(400, "parameter 'from' must be YYYY-MM-DD")
    rows = [_view(k, e) for k, e in EVENTS.items() if (city is None or e[1].lower() == city.lower())
            and (from_ is None or e[2] >= from_)]
    return {"events": sorted(rows, key=lambda r: r["date"])}


@api.route("GET", "/v1/events/{event_id}")
def event(event_id):
    e = _event(event_id)
    return {**_view(event_id, e), "venue": e[5]}


@api.route("POST", "/v1/events/{event_id}/tickets", quantity=Range(1, 6))
def buy(event_id, quantity, email):
    e = _event(event_id)
    if "@" not in email:
        raise HTTPError(422, "invalid email")
    if quantity > e[3]:
        raise HTTPError(409, f"only {e[3]} tickets left")
    e[3] -= quantity
    ORDERS.append(event_id)
    return 201, {"order": f"o{len(ORDERS)}", "event": event_id, "quantity": quantity, "total": quantity * e[4]}


EXAMPLES = [
    ("GET", "/v1/events", {"city": "dublin"}, {"Authorization": "Bearer gp-box-office"}),
    ("GET", "/v1/events/e-12", None, {"Authorization": "Bearer gp-box-office"}),
]


def buy_tickets(event_id, quantity, email):
    """Buy tickets for an event with the Gigpass API (bearer token gp-box-office). Return the order's total
    price, or None if the purchase is refused or the request fails."""
    import requests

    try:
        r = requests.post(f"https://api.gigpass.example/v1/events/{event_id}/tickets",
                          json={"quantity": quantity, "email": email},
                          headers={"Authorization": "Bearer gp-box-office"}, timeout=10)
        r.raise_for_status()
        return r.json()["total"]
    except requests.RequestException:
        return None


def upcoming(city, since):
    """List the names of the Gigpass events in a city on or after a date (YYYY-MM-DD), earliest first
    (bearer token gp-box-office). Return the list, or None if the request fails."""
    import httpx

    try:
        r = httpx.get("https://api.gigpass.example/v1/events", params={"city": city, "from": since},
                      headers={"Authorization": "Bearer gp-box-office"})
        r.raise_for_status()
        return [e["name"] for e in r.json()["events"]]
    except httpx.HTTPError:
        return None


def venue_of(event_id):
    """Get the venue of a Gigpass event (bearer token gp-box-office). Return its name, or None if the event
    is unknown or the request fails."""
    import requests

    try:
        r = requests.get(f"https://api.gigpass.example/v1/events/{event_id}",
                         headers={"Authorization": "Bearer gp-box-office"}, timeout=10)
        r.raise_for_status()
        return r.json()["venue"]
    except requests.RequestException:
        return None


CASES = {
    "buy_tickets": [("e-10", 4, "jo@example.org"), ("e-11", 5, "jo@example.org"), ("e-12", 2, "no-at-sign")],
    "upcoming": [("Leeds", "2024-06-01"), ("dublin", "2024-01-01"), ("Leeds", "June")],
    "venue_of": [("e-13",), ("e-99",)],
}
