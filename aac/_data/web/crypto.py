"""Coinpulse, a cryptocurrency price API at https://api.coinpulse.example (no authentication). At most 20
requests are served; the 21st and later get 429 {"error": ..., "retry_after": 60}.
GET /api/v3/simple/price?ids=a,b&vs_currencies=x,y returns {coin_id: {currency: price}} for each known
coin id and currency (both lists comma-separated, lower-case); unknown coin ids are left out (all unknown:
{}); an unknown currency is a 422 naming it. Currencies: usd, eur, btc.
GET /api/v3/coins/{coin_id}/market_chart?vs_currency=usd&days=N returns {"prices": [[day, price], ...]}
for the last N days (1..7; outside is a 422), day 1 oldest; an unknown coin is a 404.
GET /api/v3/coins/list returns [{"id", "symbol", "name"}, ...] sorted by id."""

from aac.sandbox.web_service import HTTPError, OneOf, Range, Service

api = Service("api.coinpulse.example", rate_limit=20)

COINS = {"bitcoin": ("btc", "Bitcoin", [61200.0, 62050.5, 60890.0, 63110.2, 64020.8, 63540.1, 65010.0]),
         "ether": ("eth", "Ether", [3410.2, 3390.0, 3450.7, 3502.3, 3488.9, 3550.0, 3601.4]),
         "solace": ("sol", "Solace", [141.2, 139.8, 145.5, 150.1, 148.0, 152.6, 155.3])}
PER_USD = {"usd": 1.0, "eur": 0.92, "btc": 1 / 65010.0}


def _price(coin, currency):
    return round(COINS[coin][2][-1] * PER_USD[currency], 8 if currency == "btc" else 2)


@api.route("GET", "/api/v3/simple/price", ids=list, vs_currencies=list)
def simple_price(ids, vs_currencies):
    for currency in vs_currencies:
        if currency not in PER_USD:
            raise HTTPError(422, f"unknown currency {currency}")
    return {c: {v: _price(c, v) for v in vs_currencies} for c in ids if c in COINS}


@api.route("GET", "/api/v3/coins/{coin_id}/market_chart", vs_currency=OneOf(*PER_USD), days=Range(1, 7))
def market_chart(coin_id, vs_currency, days):
    if coin_id not in COINS:
        raise HTTPError(404, "coin not found")
    closes = COINS[coin_id][2][-days:]
    rate = PER_USD[vs_currency]
    return {"prices": [[k + 1, round(p * rate, 8 if vs_currency == "btc" else 2)] for k, p in enumerate(closes)]}


@api.route("GET", "/api/v3/coins/list")
def coins():
    return [{"id": k, "symbol": v[0], "name": v[1]} for k, v in sorted(COINS.items())]


EXAMPLES = [
    ("GET", "/api/v3/simple/price", {"ids": "bitcoin", "vs_currencies": "usd"}),
    ("GET", "/api/v3/coins/list"),
]


def coin_price(coin_id, currency):
    """Get the current price of a coin (by its Coinpulse id, such as bitcoin) in a currency (usd, eur or
    btc) from the Coinpulse API. Return the price, or None if the coin is unknown or the request fails."""
    import requests

    try:
        r = requests.get("https://api.coinpulse.example/api/v3/simple/price",
                         params={"ids": coin_id, "vs_currencies": currency}, timeout=10)
        r.raise_for_status()
        return r.json().get(coin_id, {}).get(currency)
    except requests.RequestException:
        return None


def price_change(coin_id, days):
    """Compute how much a coin's USD price changed over the last `days` days of the Coinpulse market chart
    (last price minus first), rounded to 2 decimals. Return None if the request fails."""
    import httpx

    try:
        r = httpx.get(f"https://api.coinpulse.example/api/v3/coins/{coin_id}/market_chart",
                      params={"vs_currency": "usd", "days": days})
        r.raise_for_status()
        prices = r.json()["prices"]
        return round(prices[-1][1] - prices[0][1], 2)
    except httpx.HTTPError:
        return None


CASES = {
    "coin_price": [("ether", "eur"), ("solace", "usd"), ("dogecoin", "usd"), ("bitcoin", "gbp")],
    "price_change": [("bitcoin", 3), ("solace", 7), ("ether", 30)],
}
