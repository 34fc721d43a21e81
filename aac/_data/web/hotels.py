"""Staywell, a hotel booking API at https://api.staywell.example. Every request needs the header
Authorization: Bearer sw-partner-2 (401 otherwise).
GET /hotels?city=NAME&max_price=N returns {"hotels": [{"id", "name", "city", "price_per_night",
"rooms_left"}, ...]} sorted by price: hotels in the city (case-insensitive, required) costing at most N
per night when given (a positive integer, else 422).
POST /bookings with a JSON body {"hotel_id": int, "nights": int 1..14, "guest": name} books one room and
answers 201 {"id" (b1, b2, ...), "hotel_id", "nights", "guest", "total"} with total = nights x price; no
room left is a 409, an unknown hotel a 404, nights outside 1..14 a 422, an empty guest name a 422.
GET /bookings/{booking_id} returns a booking; DELETE /bookings/{booking_id} cancels it and answers
{"id", "status": "cancelled"}; an unknown booking is a 404."""

from aac.sandbox.web_service import HTTPError, Range, Service

api = Service("api.staywell.example", key_header="Authorization", key="sw-partner-2", bearer=True)

HOTELS = {1: ("Harbour Inn", "Bergen", 120, 3), 2: ("Fjord View", "Bergen", 210, 1), 3: ("Old Mill", "Bergen", 95, 0),
          4: ("Casa Azul", "Seville", 80, 5), 5: ("Plaza Real", "Seville", 160, 2)}
ROOMS = {k: v[3] for k, v in HOTELS.items()}
BOOKINGS = {}


@api.route("GET", "/hotels", max_price=Range(1, None))
def hotels(city, max_price=None):
    rows = [{"id": k, "name": n, "city": c, "price_per_night": p, "rooms_left": ROOMS[k]}
            for k, (n, c, p, _) in HOTELS.items() if c.lower() == city.lower() and (max_price is None or p <= max_price)]
    return {"hotels": sorted(rows, key=lambda h: h["price_per_night"])}


@api.route("POST", "/bookings", hotel_id=int, nights=Range(1, 14))
def book(hotel_id, nights, guest):
    if hotel_id not in HOTELS:
        raise HTTPError(404, f"no hotel {hotel_id}")
    if not guest.strip():
        raise HTTPError(422, "guest must not be empty")
    if ROOMS[hotel_id] == 0:
        raise HTTPError(409, "no room left")
    ROOMS[hotel_id] -= 1
    booking = {"id": f"b{len(BOOKINGS) + 1}", "hotel_id": hotel_id, "nights": nights, "guest": guest,
               "total": nights * HOTELS[hotel_id][2]}
    BOOKINGS[booking["id"]] = booking
    return 201, dict(booking)


def _booking(booking_id):
    if booking_id not in BOOKINGS:
        raise HTTPError(404, f"no booking {booking_id}")
    return BOOKINGS[booking_id]


@api.route("GET", "/bookings/{booking_id}")
def get_booking(booking_id):
    return dict(_booking(booking_id))


@api.route("DELETE", "/bookings/{booking_id}")
def cancel(booking_id):
    booking = _booking(booking_id)
    ROOMS[booking["hotel_id"]] += 1
    del BOOKINGS[booking_id]
    return {"id": booking_id, "status": "cancelled"}


EXAMPLES = [
    ("GET", "/hotels", {"city": "Bergen"}, {"Authorization": "Bearer sw-partner-2"}),
    ("POST", "/bookings", {"hotel_id": 4, "nights": 2, "guest": "R. Lund"}, {"Authorization": "Bearer sw-partner-2"}),
]


def cheapest_hotel(city, budget):
    """Find the cheapest hotel in a city costing at most `budget` per night with the Staywell API (bearer
    token sw-partner-2). Return its name, or None if there is none or the request fails."""
    import requests

    try:
        r = requests.get("https://api.staywell.example/hotels", params={"city": city, "max_price": budget},
                         headers={"Authorization": "Bearer sw-partner-2"}, timeout=10)
        r.raise_for_status()
        hotels = r.json()["hotels"]
        return hotels[0]["name"] if hotels else None
    except requests.RequestException:
        return None


def book_room(hotel_id, nights, guest):
    """Book a room in a hotel for a number of nights for a guest with the Staywell API (bearer token
    sw-partner-2). Return the booking's total price, or None if the booking fails."""
    import requests

    try:
        r = requests.post("https://api.staywell.example/bookings",
                          json={"hotel_id": hotel_id, "nights": nights, "guest": guest},
                          headers={"Authorization": "Bearer sw-partner-2"}, timeout=10)
        r.raise_for_status()
        return r.json()["total"]
    except requests.RequestException:
        return None


def cancel_new_booking(hotel_id, guest):
    """Book one night in a hotel for a guest with the Staywell API (bearer token sw-partner-2), then cancel
    that booking. Return the status the cancellation reports, or None if a request fails."""
    import requests

    headers = {"Authorization": "Bearer sw-partner-2"}
    try:
        r = requests.post("https://api.staywell.example/bookings",
                          json={"hotel_id": hotel_id, "nights": 1, "guest": guest}, headers=headers, timeout=10)
        r.raise_for_status()
        r = requests.delete(f"https://api.staywell.example/bookings/{r.json()['id']}", headers=headers, timeout=10)
        r.raise_for_status()
        return r.json()["status"]
    except requests.RequestException:
        return None


CASES = {
    "cheapest_hotel": [("Seville", 200), ("bergen", 150), ("Bergen", 50), ("Paris", 500)],
    "book_room": [(2, 3, "Ada"), (5, 1, "Bo"), (3, 2, "Cy"), (1, 30, "Di")],
    "cancel_new_booking": [(1, "Ann"), (3, "Ben")],
}
