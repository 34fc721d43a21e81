"""Autodecode, a vehicle data API at https://api.autodecode.example (no authentication).
GET /api/vehicles/decodevin/{vin}?format=json decodes a 17-character VIN (letters and digits without I, O
or Q; case-insensitive; another form is a 400 {"error": "invalid VIN"}) and returns {"vin", "make",
"model", "year", "plant_country"}: the make from the first three characters (the WMI), the model year from
the tenth (A=2010 ... H=2017, J=2018 ... N=2022, P=2023, R=2024). An unknown WMI gives make null.
format must be json (another value is a 422).
GET /api/vehicles/getallmakes?format=json returns {"Count", "Results": [{"Make_ID", "Make_Name"}, ...]}.
GET /api/vehicles/getmodelsformake/{make}?year=Y&format=json returns {"Count", "Results": [model names]}
of a make (case-insensitive) in a year (any year if absent); an unknown make gives Count 0."""

import re

from aac.sandbox.web_service import HTTPError, OneOf, Service

api = Service("api.autodecode.example")

MAKES = {1: "Volta", 2: "Kestrel", 3: "Marlin"}
WMI = {"1VA": ("Volta", "United States"), "WK5": ("Kestrel", "Germany"), "JM9": ("Marlin", "Japan")}
MODELS = {"volta": [("Spark", 2021), ("Spark", 2022), ("Current", 2023)], "kestrel": [("K3", 2018), ("K5", 2022)],
          "marlin": [("Reef", 2020), ("Tide", 2024)]}
YEARS = dict(zip("ABCDEFGHJKLMNPR", range(2010, 2025)))
FORMAT = OneOf("json")


@api.route("GET", "/api/vehicles/decodevin/{vin}", format=FORMAT)
def decode(vin, format="json"):
    vin = vin.upper()
    if not re.fullmatch(r"[A-HJ-NPR-Z0-9]{17}", vin):
        raise HTTPError(400, "invalid VIN")
    make, country = WMI.get(vin[:3], (None, None))
    return {"vin": vin, "make": make, "model": None, "year": YEARS.get(vin[9]), "plant_country": country}


@api.route("GET", "/api/vehicles/getallmakes", format=FORMAT)
def makes(format="json"):
    return {"Count": len(MAKES), "Results": [{"Make_ID": k, "Make_Name": v} for k, v in MAKES.items()]}


@api.route("GET", "/api/vehicles/getmodelsformake/{make}", year=int, format=FORMAT)
def models(make, year=None, format="json"):
    names = sorted({m for m, y in MODELS.get(make.lower(), []) if year is None or y == year})
    return {"Count": len(names), "Results": names}


EXAMPLES = [
    ("GET", "/api/vehicles/decodevin/1VA4X2B31NC123456", {"format": "json"}),
    ("GET", "/api/vehicles/getallmakes", {"format": "json"}),
]


def vin_year(vin):
    """Decode a VIN with the Autodecode API and return the vehicle's model year, or None if the VIN is invalid
    or the request fails."""
    import requests

    try:
        r = requests.get(f"https://api.autodecode.example/api/vehicles/decodevin/{vin}", params={"format": "json"},
                         timeout=10)
        r.raise_for_status()
        return r.json()["year"]
    except requests.RequestException:
        return None


def models_in_year(make, year):
    """List the model names a make offered in a year, from the Autodecode API. Return the sorted list, or None
    if the request fails."""
    import requests

    try:
        r = requests.get(f"https://api.autodecode.example/api/vehicles/getmodelsformake/{make}",
                         params={"year": year, "format": "json"}, timeout=10)
        r.raise_for_status()
        return r.json()["Results"]
    except requests.RequestException:
        return None


CASES = {
    "vin_year": [("WK5AB12C0J4000001",), ("jm9zz00x1r0000777",), ("SHORTVIN",), ("1VA4X2B31OC123456",)],
    "models_in_year": [("Volta", 2022), ("marlin", 2024), ("Kestrel", 1999)],
}
