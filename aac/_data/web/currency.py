"""Coinrate, a currency exchange-rate API at https://fx.coinrate.example (no authentication). Rates are fixed
reference rates of one day. Currency codes are three letters, case-insensitive; an unknown code is a 404
naming it.
GET /latest?base=CODE&symbols=A,B (base default EUR; symbols optional, comma-separated or repeated) returns
{"base", "date", "rates": {code: rate}} with one unit of base expressed in each currency, rounded to 4
decimals, for every known currency but the base when symbols is absent.
GET /convert?from=CODE&to=CODE&amount=X (amount a number > 0, default 1) returns {"from", "to", "amount",
"rate", "result"}, result rounded to 2 decimals; amount 0 or less is a 422.
GET /currencies returns {"currencies": {code: name}}.
Missing or unknown parameters are 400s."""

from aac.sandbox.web_service import HTTPError, Range, Service

api = Service("fx.coinrate.example")

DATE = "2024-03-01"
PER_EUR = {"EUR": 1.0, "USD": 1.0832, "GBP": 0.8551, "JPY": 162.41, "CHF": 0.9547, "INR": 89.77}
NAMES = {"EUR": "Euro", "USD": "US Dollar", "GBP": "Pound Sterling", "JPY": "Yen", "CHF": "Swiss Franc",
         "INR": "Indian Rupee"}


def _code(code):
    code = code.strip().upper()
    if code not in PER_EUR:
        raise HTTPError(404, f"unknown currency {code}")
    return code


def _rate(base, target):
    return round(PER_EUR[target] / PER_EUR[base], 4)


@api.route("GET", "/latest", symbols=list)
def latest(base="EUR", symbols=None):
    base = _code(base)
    wanted = [_code(s) for s in symbols] if symbols else [c for c in PER_EUR if c != base]
    return {"base": base, "date": DATE, "rates": {c: _rate(base, c) for c in wanted}}


@api.route("GET", "/convert", amount=Range(0, None, float))
def convert(from_, to, amount=1.0):
    base, target = _code(from_), _code(to)
    if amount <= 0:
        raise HTTPError(422, "parameter 'amount' must be > 0")
    rate = _rate(base, target)
    return {"from": base, "to": target, "amount": amount, "rate": rate, "result": round(amount * rate, 2)}


@api.route("GET", "/currencies")
def currencies():
    return {"currencies": NAMES}


EXAMPLES = [
    ("GET", "/latest", {"base": "USD", "symbols": "EUR,JPY"}),
    ("GET", "/currencies"),
]


def convert_amount(amount, source, target):
    """Convert an amount of money from one currency to another with the Coinrate API. Return the converted
    amount as a number, or None if the request fails."""
    import requests

    try:
        r = requests.get("https://fx.coinrate.example/convert",
                         params={"from": source, "to": target, "amount": amount}, timeout=10)
        r.raise_for_status()
        return r.json()["result"]
    except requests.RequestException:
        return None


def rate_table(base):
    """Get the Coinrate exchange rates of every currency against a base currency. Return a dict mapping each
    currency code to its rate, or None if the request fails."""
    import requests

    try:
        r = requests.get("https://fx.coinrate.example/latest", params={"base": base}, timeout=10)
        if r.status_code != 200:
            return None
        return r.json()["rates"]
    except requests.RequestException:
        return None


CASES = {
    "convert_amount": [(100, "EUR", "USD"), (2500, "jpy", "GBP"), (10, "EUR", "XYZ"), (-5, "USD", "EUR")],
    "rate_table": [("GBP",), ("chf",), ("ABC",)],
}
