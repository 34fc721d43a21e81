"""Tickerline, a stock quote API at https://api.tickerline.example. Every request needs the header
X-Api-Key: tl-4410 (401 otherwise). At most 20 requests are served; the 21st and later get 429
{"error": ..., "retry_after": 60}.
GET /v1/quote?symbol=SYM returns {"symbol", "price", "change", "change_pct", "currency"} (symbols are
upper-cased; an unknown one is a 404).
GET /v1/history?symbol=SYM&days=N returns {"symbol", "closes": [{"date", "close"}, ...]}: the last N
closing prices (1..10, default 5; outside is a 422), oldest first.
GET /v1/symbols?exchange=NYSE|NASDAQ|XETRA returns {"symbols": [...]} sorted; another exchange is a 422."""

from aac.sandbox.web_service import HTTPError, OneOf, Range, Service

api = Service("api.tickerline.example", key_header="X-Api-Key", key="tl-4410", rate_limit=20)

CLOSES = {
    "ACME": ("NYSE", "USD", [41.2, 41.9, 42.5, 41.7, 42.0, 43.1, 43.3, 42.8, 44.0, 44.6]),
    "GLOBX": ("NASDAQ", "USD", [310.0, 305.5, 299.8, 301.2, 298.4, 297.0, 303.3, 306.1, 304.9, 302.5]),
    "NRDX": ("XETRA", "EUR", [88.1, 88.4, 87.9, 89.0, 90.2, 90.0, 91.4, 92.3, 91.8, 93.0]),
    "QBIT": ("NASDAQ", "USD", [12.5, 12.9, 13.4, 13.1, 12.2, 11.8, 12.0, 12.6, 12.4, 13.5]),
}
DATES = [f"2024-02-{d:02d}" for d in (15, 16, 19, 20, 21, 22, 23, 26, 27, 28)]


def _symbol(symbol):
    symbol = symbol.upper()
    if symbol not in CLOSES:
        raise HTTPError(404, f"unknown symbol {symbol}")
    return symbol


@api.route("GET", "/v1/quote")
def quote(symbol):
    symbol = _symbol(symbol)
    _, currency, closes = CLOSES[symbol]
    change = round(closes[-1] - closes[-2], 2)
    return {"symbol": symbol, "price": closes[-1], "change": change,
            "change_pct": round(100 * change / closes[-2], 2), "currency": currency}


@api.route("GET", "/v1/history", days=Range(1, 10))
def history(symbol, days=5):
    symbol = _symbol(symbol)
    closes = CLOSES[symbol][2]
    return {"symbol": symbol, "closes": [{"date": d, "close": c} for d, c in zip(DATES[-days:], closes[-days:])]}


@api.route("GET", "/v1/symbols", exchange=OneOf("NYSE", "NASDAQ", "XETRA"))
def symbols(exchange):
    return {"symbols": sorted(s for s, v in CLOSES.items() if v[0] == exchange)}


EXAMPLES = [
    ("GET", "/v1/quote", {"symbol": "acme"}, {"X-Api-Key": "tl-4410"}),
    ("GET", "/v1/symbols", {"exchange": "NASDAQ"}, {"X-Api-Key": "tl-4410"}),
]


def last_price(symbol):
    """Get the latest price of a stock symbol from the Tickerline API (key tl-4410 in the X-Api-Key header).
    Return the price, or None if the symbol is unknown or the request fails."""
    import requests

    try:
        r = requests.get("https://api.tickerline.example/v1/quote", params={"symbol": symbol},
                         headers={"X-Api-Key": "tl-4410"}, timeout=10)
        r.raise_for_status()
        return r.json()["price"]
    except requests.RequestException:
        return None


def average_close(symbol, days):
    """Compute the average of the last `days` closing prices of a stock from the Tickerline API (key tl-4410
    in the X-Api-Key header), rounded to 2 decimals. Return None if the request fails."""
    import requests

    try:
        r = requests.get("https://api.tickerline.example/v1/history", params={"symbol": symbol, "days": days},
                         headers={"X-Api-Key": "tl-4410"}, timeout=10)
        r.raise_for_status()
        closes = [c["close"] for c in r.json()["closes"]]
        return round(sum(closes) / len(closes), 2)
    except requests.RequestException:
        return None


def listed_on(exchange):
    """List the symbols traded on an exchange (NYSE, NASDAQ or XETRA) according to the Tickerline API (key
    tl-4410 in the X-Api-Key header). Return the list, or None if the request fails."""
    import httpx

    try:
        r = httpx.get("https://api.tickerline.example/v1/symbols", params={"exchange": exchange},
                      headers={"X-Api-Key": "tl-4410"})
        r.raise_for_status()
        return r.json()["symbols"]
    except httpx.HTTPError:
        return None


CASES = {
    "last_price": [("GLOBX",), ("nrdx",), ("ZZZ",)],
    "average_close": [("ACME", 3), ("QBIT", 10), ("ACME", 30)],
    "listed_on": [("NASDAQ",), ("XETRA",), ("LSE",)],
}
