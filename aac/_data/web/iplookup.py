"""Netwhere, an IP address lookup API at https://ipinfo.netwhere.example (no authentication). At most 15
requests are served; after that 429 {"error": ..., "retry_after": 60}.
GET /json/{address} returns {"ip", "version": 4 or 6, "country", "city", "asn", "org"} for an address in
one of the service's known ranges; a private address (10.x, 192.168.x, 127.x) is 200 {"ip", "version",
"private": true}; a well-formed public address outside the known ranges is a 404; a malformed address is a
400 {"error": "invalid IP address"}.
GET /asn/{number} (an integer; "AS" in front is accepted) returns {"asn": "AS<n>", "org", "prefixes":
[CIDR ranges]}; an unknown ASN is a 404.
GET /json?fields=a,b returns the caller's own address (the service sees 203.0.113.9), reduced to the
listed fields when fields is given."""

from aac.sandbox.web_service import HTTPError, Service

api = Service("ipinfo.netwhere.example", rate_limit=15)

RANGES = [  # (first three octets, country, city, asn, org)
    ("203.0.113", "AU", "Sydney", 64500, "Harbour Net"),
    ("198.51.100", "DE", "Berlin", 64501, "Spree Hosting"),
    ("192.0.2", "BR", "Recife", 64502, "Mangue Telecom"),
]
ME = "203.0.113.9"


def _parse(address):
    if ":" in address:
        return 6
    parts = address.split(".")
    if len(parts) != 4 or not all(p.isdigit() and int(p) < 256 for p in parts):
        raise HTTPError(400, "invalid IP address")
    return 4


def _info(address):
    version = _parse(address)
    if address.startswith(("10.", "192.168.", "127.")):
        return {"ip": address, "version": version, "private": True}
    for prefix, country, city, asn, org in RANGES:
        if address.startswith(prefix + "."):
            return {"ip": address, "version": version, "country": country, "city": city, "asn": f"AS{asn}",
                    "org": org}
    raise HTTPError(404, f"no data for {address}")


@api.route("GET", "/json/{address}")
def lookup(address):
    return _info(address)


@api.route("GET", "/asn/{number}")
def asn(number):
    digits = number.upper().removeprefix("AS")
    if not digits.isdigit():
        raise HTTPError(400, "parameter 'number' must be an integer")
    for prefix, _, _, n, org in RANGES:
        if n == int(digits):
            return {"asn": f"AS{n}", "org": org, "prefixes": [prefix + ".0/24"]}
    raise HTTPError(404, f"no data for AS{digits}")


@api.route("GET", "/json", fields=list)
def me(fields=None):
    info = _info(ME)
    return {k: v for k, v in info.items() if not fields or k in fields}


EXAMPLES = [
    ("GET", "/json/198.51.100.23"),
    ("GET", "/asn/AS64502"),
]


def country_of_ip(address):
    """Find the country code of an IP address with the Netwhere API. Return the code, or None if the address
    is private, unknown or malformed, or the request fails."""
    import requests

    try:
        r = requests.get(f"https://ipinfo.netwhere.example/json/{address}", timeout=10)
        r.raise_for_status()
        return r.json().get("country")
    except requests.RequestException:
        return None


def network_owner(asn):
    """Get the organisation that runs an autonomous system (an ASN number such as 64500) from the Netwhere
    API. Return its name, or None if the request fails."""
    import requests

    try:
        r = requests.get(f"https://ipinfo.netwhere.example/asn/{asn}", timeout=10)
        if not r.ok:
            return None
        return r.json()["org"]
    except requests.RequestException:
        return None


def is_private(address):
    """Ask the Netwhere API whether an IP address is private. Return True or False, or None if the request
    fails or the address is unknown."""
    import httpx

    try:
        r = httpx.get(f"https://ipinfo.netwhere.example/json/{address}")
        r.raise_for_status()
        return r.json().get("private", False)
    except httpx.HTTPError:
        return None


CASES = {
    "country_of_ip": [("192.0.2.77",), ("10.1.2.3",), ("8.8.8.8",), ("300.1.1.1",)],
    "network_owner": [(64501,), (64500,), (1,)],
    "is_private": [("127.0.0.1",), ("203.0.113.5",), ("1.2.3",)],
}
