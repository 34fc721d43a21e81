"""Shopfront, a product catalogue API at https://api.shopfront.example. Every request needs the header
X-Api-Key: sf-cat-90 (401 otherwise).
GET /v1/products?category=NAME&min_price=X&max_price=Y&sort=price|-price|name returns {"products":
[{"sku", "name", "category", "price", "in_stock"}, ...], "count"}: filtered by category (exact, lower
case) and price bounds (numbers), sorted by name by default (price ascending, -price descending; another
sort is a 422); min_price above max_price is a 422.
GET /v1/products/{sku} returns one product with its "description"; an unknown SKU is a 404.
GET /v1/categories returns {"categories": [{"name", "count"}, ...]} sorted by name."""

from aac.sandbox.web_service import HTTPError, OneOf, Service

api = Service("api.shopfront.example", key_header="X-Api-Key", key="sf-cat-90")

PRODUCTS = [
    ("KT-100", "Kettle", "kitchen", 34.9, True, "1.7 litre steel kettle"),
    ("KT-220", "Toaster", "kitchen", 27.5, False, "two-slot toaster"),
    ("GD-010", "Trowel", "garden", 9.99, True, "hand trowel with ash handle"),
    ("GD-044", "Hose reel", "garden", 45.0, True, "wall-mounted reel, 20 m"),
    ("OF-301", "Desk lamp", "office", 22.0, True, "LED lamp with dimmer"),
    ("OF-310", "Stapler", "office", 6.5, True, "staples up to 20 sheets"),
]


def _view(p):
    return {"sku": p[0], "name": p[1], "category": p[2], "price": p[3], "in_stock": p[4]}


@api.route("GET", "/v1/products", min_price=float, max_price=float, sort=OneOf("price", "-price", "name"))
def products(category=None, min_price=None, max_price=None, sort="name"):
    if min_price is not None and max_price is not None and min_price > max_price:
        raise HTTPError(422, "min_price is above max_price")
    rows = [_view(p) for p in PRODUCTS if (category is None or p[2] == category)
            and (min_price is None or p[3] >= min_price) and (max_price is None or p[3] <= max_price)]
    key = {"price": lambda p: p["price"], "-price": lambda p: -p["price"], "name": lambda p: p["name"]}[sort]
    return {"products": sorted(rows, key=key), "count": len(rows)}


@api.route("GET", "/v1/products/{sku}")
def product(sku):
    for p in PRODUCTS:
        if p[0] == sku:
            return {**_view(p), "description": p[5]}
    raise HTTPError(404, f"no product {sku}")


@api.route("GET", "/v1/categories")
def categories():
    names = sorted({p[2] for p in PRODUCTS})
    return {"categories": [{"name": n, "count": sum(p[2] == n for p in PRODUCTS)} for n in names]}


EXAMPLES = [
    ("GET", "/v1/products", {"category": "office"}, {"X-Api-Key": "sf-cat-90"}),
    ("GET", "/v1/products/KT-220", None, {"X-Api-Key": "sf-cat-90"}),
]


def priciest_in(category):
    """Find the most expensive product of a category in the Shopfront catalogue (key sf-cat-90 in the
    X-Api-Key header). Return its SKU, or None if the category is empty or the request fails."""
    import requests

    try:
        r = requests.get("https://api.shopfront.example/v1/products", params={"category": category, "sort": "-price"},
                         headers={"X-Api-Key": "sf-cat-90"}, timeout=10)
        r.raise_for_status()
        rows = r.json()["products"]
        return rows[0]["sku"] if rows else None
    except requests.RequestException:
        return None


def names_in_price_range(low, high):
    """List the names of the Shopfront products (key sf-cat-90 in the X-Api-Key header) priced between low
    and high, sorted by name. Return the list, or None if the request fails."""
    import requests

    try:
        r = requests.get("https://api.shopfront.example/v1/products", params={"min_price": low, "max_price": high},
                         headers={"X-Api-Key": "sf-cat-90"}, timeout=10)
        r.raise_for_status()
        return [p["name"] for p in r.json()["products"]]
    except requests.RequestException:
        return None


def in_stock(sku):
    """Tell whether a Shopfront product is in stock (key sf-cat-90 in the X-Api-Key header). Return True or
    False, or None if the product is unknown or the request fails."""
    import httpx

    try:
        r = httpx.get(f"https://api.shopfront.example/v1/products/{sku}", headers={"X-Api-Key": "sf-cat-90"})
        r.raise_for_status()
        return r.json()["in_stock"]
    except httpx.HTTPError:
        return None


CASES = {
    "priciest_in": [("garden",), ("kitchen",), ("toys",)],
    "names_in_price_range": [(5, 25), (30, 50), (50, 10)],
    "in_stock": [("KT-220",), ("GD-010",), ("XX-000",)],
}
