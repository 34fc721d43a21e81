"""Unitly, a unit conversion API at https://api.unitly.example (no authentication).
GET /convert?value=X&from=UNIT&to=UNIT returns {"value", "from", "to", "result"} with result rounded to 4
significant decimals (4 decimal places). Units of length (m, km, mi, ft, in), mass (g, kg, lb, oz) and
temperature (c, f, k) are known, case-insensitive; an unknown unit is a 404; units of different kinds are a
422 {"error": "cannot convert mass to length"}; a value that is not a number is a 400.
GET /units?kind=length|mass|temperature returns {"kind", "units": [...]} in the service's order (another
kind is a 422)."""

from aac.sandbox.web_service import HTTPError, OneOf, Service

api = Service("api.unitly.example")

FACTORS = {"length": {"m": 1.0, "km": 1000.0, "mi": 1609.344, "ft": 0.3048, "in": 0.0254},
           "mass": {"g": 1.0, "kg": 1000.0, "lb": 453.59237, "oz": 28.349523125}}
TEMPERATURE = ("c", "f", "k")


def _kind(unit):
    unit = unit.lower()
    if unit in TEMPERATURE:
        return "temperature", unit
    for kind, table in FACTORS.items():
        if unit in table:
            return kind, unit
    raise HTTPError(404, f"unknown unit {unit}")


def _kelvin(value, unit):
    return {"c": value + 273.15, "f": (value - 32) * 5 / 9 + 273.15, "k": value}[unit]


@api.route("GET", "/convert", value=float)
def convert(value, from_, to):
    (kind_a, a), (kind_b, b) = _kind(from_), _kind(to)
    if kind_a != kind_b:
        raise HTTPError(422, f"cannot convert {kind_a} to {kind_b}")
    if kind_a == "temperature":
        k = _kelvin(value, a)
        result = {"c": k - 273.15, "f": (k - 273.15) * 9 / 5 + 32, "k": k}[b]
    else:
        result = value * FACTORS[kind_a][a] / FACTORS[kind_a][b]
    return {"value": value, "from": a, "to": b, "result": round(result, 4)}


@api.route("GET", "/units", kind=OneOf("length", "mass", "temperature"))
def units(kind):
    return {"kind": kind, "units": list(TEMPERATURE) if kind == "temperature" else list(FACTORS[kind])}


EXAMPLES = [
    ("GET", "/convert", {"value": 5, "from": "km", "to": "mi"}),
    ("GET", "/units", {"kind": "mass"}),
]


def convert_units(value, source, target):
    """Convert a value from one unit to another (such as km to mi, or c to f) with the Unitly API. Return
    the result, or None if the request fails."""
    import requests

    try:
        r = requests.get("https://api.unitly.example/convert", params={"value": value, "from": source, "to": target},
                         timeout=10)
        r.raise_for_status()
        return r.json()["result"]
    except requests.RequestException:
        return None


def unit_names(kind):
    """List the units of a kind (length, mass or temperature) known to the Unitly API. Return the list, or
    None if the request fails."""
    import httpx

    try:
        r = httpx.get("https://api.unitly.example/units", params={"kind": kind})
        r.raise_for_status()
        return r.json()["units"]
    except httpx.HTTPError:
        return None


CASES = {
    "convert_units": [(100, "c", "f"), (3, "lb", "kg"), (1, "kg", "m"), (2, "parsec", "m")],
    "unit_names": [("length",), ("temperature",), ("time",)],
}
