"""Basket, a shopping cart API at https://api.basket.example (no authentication). Prices are in cents.
The catalogue: SKU-APL (apple, 40), SKU-BRD (bread, 250), SKU-MLK (milk, 120), SKU-TEA (tea, 480).
POST /carts (no body) creates an empty cart and answers 201 {"id" (c1, c2, ...), "items": [], "total": 0}.
POST /carts/{cart_id}/items with a JSON body {"sku", "qty": int 1..20 (default 1)} adds to the quantity of
that line (at most 20 per line: more is a 422) and returns the cart; an unknown SKU or cart is a 404.
GET /carts/{cart_id} returns {"id", "items": [{"sku", "qty", "line_total"}, ...] (in the order first
added), "total"}; orders of 1000 cents or more get 10% off the total (rounded down), shown as "discount".
DELETE /carts/{cart_id}/items/{sku} removes a line and returns the cart; a SKU not in the cart is a 404."""

from aac.sandbox.web_service import HTTPError, Range, Service

api = Service("api.basket.example")

PRICES = {"SKU-APL": 40, "SKU-BRD": 250, "SKU-MLK": 120, "SKU-TEA": 480}
CARTS = {}


def _cart(cart_id):
    if cart_id not in CARTS:
        raise HTTPError(404, f"no cart {cart_id}")
    return CARTS[cart_id]


def _view(cart_id):
    lines = [{"sku": s, "qty": q, "line_total": q * PRICES[s]} for s, q in CARTS[cart_id].items()]
    subtotal = sum(line["line_total"] for line in lines)
    discount = subtotal // 10 if subtotal >= 1000 else 0
    return {"id": cart_id, "items": lines, "discount": discount, "total": subtotal - discount}


@api.route("POST", "/carts")
def create():
    cart_id = f"c{len(CARTS) + 1}"
    CARTS[cart_id] = {}
    return 201, _view(cart_id)


@api.route("POST", "/carts/{cart_id}/items", qty=Range(1, 20))
def add(cart_id, sku, qty=1):
    cart = _cart(cart_id)
    if sku not in PRICES:
        raise HTTPError(404, f"unknown sku {sku}")
    if cart.get(sku, 0) + qty > 20:
        raise HTTPError(422, "at most 20 of one item")
    cart[sku] = cart.get(sku, 0) + qty
    return _view(cart_id)


@api.route("GET", "/carts/{cart_id}")
def get_cart(cart_id):
    _cart(cart_id)
    return _view(cart_id)


@api.route("DELETE", "/carts/{cart_id}/items/{sku}")
def remove(cart_id, sku):
    cart = _cart(cart_id)
    if sku not in cart:
        raise HTTPError(404, f"{sku} is not in the cart")
    del cart[sku]
    return _view(cart_id)


EXAMPLES = [
    ("POST", "/carts"),
    ("POST", "/carts/c1/items", {"sku": "SKU-TEA", "qty": 2}),
]


def order_total(items):
    """Create a cart with the Basket API, add each (sku, quantity) pair of `items` to it, and return the
    cart's total in cents after any discount, or None if a request fails."""
    import requests

    try:
        r = requests.post("https://api.basket.example/carts", timeout=10)
        r.raise_for_status()
        cart_id = r.json()["id"]
        for sku, qty in items:
            r = requests.post(f"https://api.basket.example/carts/{cart_id}/items", json={"sku": sku, "qty": qty},
                              timeout=10)
            r.raise_for_status()
        return r.json()["total"]
    except requests.RequestException:
        return None


def new_cart_id():
    """Create an empty cart with the Basket API and return its id, or None if the request fails."""
    import httpx

    try:
        r = httpx.post("https://api.basket.example/carts")
        r.raise_for_status()
        return r.json()["id"]
    except httpx.HTTPError:
        return None


def remove_item(items, sku):
    """Create a cart with the Basket API, add each (sku, quantity) pair of `items`, remove the line of `sku`,
    and return the SKUs left in the cart as the service shows it, or None if a request fails."""
    import requests

    base = "https://api.basket.example/carts"
    try:
        r = requests.post(base, timeout=10)
        r.raise_for_status()
        cart_id = r.json()["id"]
        for item, qty in items:
            requests.post(f"{base}/{cart_id}/items", json={"sku": item, "qty": qty}, timeout=10).raise_for_status()
        requests.delete(f"{base}/{cart_id}/items/{sku}", timeout=10).raise_for_status()
        r = requests.get(f"{base}/{cart_id}", timeout=10)
        r.raise_for_status()
        return [line["sku"] for line in r.json()["items"]]
    except requests.RequestException:
        return None


CASES = {
    "order_total": [([["SKU-APL", 3], ["SKU-BRD", 1]],), ([["SKU-TEA", 2], ["SKU-MLK", 1]],), ([["SKU-XYZ", 1]],)],
    "new_cart_id": [()],
    "remove_item": [([["SKU-APL", 1], ["SKU-TEA", 2], ["SKU-MLK", 1]], "SKU-APL"), ([["SKU-MLK", 1]], "SKU-BRD")],
}
