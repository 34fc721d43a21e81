"""Monsterdex, a creature encyclopedia API at https://api.monsterdex.example (no authentication).
GET /api/v2/creature/{name_or_id} returns {"id", "name", "types": [...], "height", "weight", "stats":
{"hp", "attack", "defense"}}; names are lower-case (the lookup lower-cases), ids integers 1-6; an unknown
one is a 404 "Not Found".
GET /api/v2/type/{type_name} returns {"name", "double_damage_to": [...], "half_damage_from": [...],
"creatures": [names]}; an unknown type is a 404.
GET /api/v2/creature?limit=N&offset=M returns {"count", "results": [{"id", "name"}, ...]}: the creatures
in id order from position offset (default 0), at most limit (1..20, default 20); negative offset is a 422."""

from aac.sandbox.web_service import HTTPError, Range, Service

api = Service("api.monsterdex.example")

CREATURES = [
    (1, "sproutle", ["grass"], 7, 69, (45, 49, 49)), (2, "embercub", ["fire"], 6, 85, (39, 52, 43)),
    (3, "puddlet", ["water"], 5, 90, (44, 48, 65)), (4, "voltmouse", ["electric"], 4, 60, (35, 55, 40)),
    (5, "stonehorn", ["rock", "ground"], 12, 2100, (80, 90, 120)), (6, "galewing", ["flying", "normal"], 11, 300, (60, 65, 55)),
]
TYPES = {"grass": (["water", "rock", "ground"], ["water", "electric", "grass"]),
         "fire": (["grass"], ["fire", "grass"]), "water": (["fire", "rock", "ground"], ["fire", "water"]),
         "electric": (["water", "flying"], ["electric", "flying"]), "rock": (["fire", "flying"], ["normal", "fire"]),
         "ground": (["fire", "electric", "rock"], ["rock"]), "flying": (["grass"], ["grass"]), "normal": ([], [])}


def _creature(key):
    for c in CREATURES:
        if key.lower() in (c[1], str(c[0])):
            return c
    raise HTTPError(404, "Not Found")


@api.route("GET", "/api/v2/creature/{name_or_id}")
def creature(name_or_id):
    cid, name, types, height, weight, (hp, attack, defense) = _creature(name_or_id)
    return {"id": cid, "name": name, "types": types, "height": height, "weight": weight,
            "stats": {"hp": hp, "attack": attack, "defense": defense}}


@api.route("GET", "/api/v2/type/{type_name}")
def type_info(type_name):
    if type_name not in TYPES:
        raise HTTPError(404, "Not Found")
    to, half = TYPES[type_name]
    return {"name": type_name, "double_damage_to": to, "half_damage_from": half,
            "creatures": [c[1] for c in CREATURES if type_name in c[2]]}


@api.route("GET", "/api/v2/creature", limit=Range(1, 20), offset=Range(0, None))
def creatures(limit=20, offset=0):
    return {"count": len(CREATURES), "results": [{"id": c[0], "name": c[1]} for c in CREATURES[offset: offset + limit]]}


EXAMPLES = [
    ("GET", "/api/v2/creature/embercub"),
    ("GET", "/api/v2/creature", {"limit": 2}),
]


def attack_stat(name):
    """Get the attack stat of a creature by name from the Monsterdex API. Return it, or None if the
    creature is unknown or the request fails."""
    import requests

    try:
        r = requests.get(f"https://api.monsterdex.example/api/v2/creature/{name}", timeout=10)
        r.raise_for_status()
        return r.json()["stats"]["attack"]
    except requests.RequestException:
        return None


def strong_against(type_name):
    """List the types a creature type deals double damage to, from the Monsterdex API. Return the list, or
    None if the request fails."""
    import requests

    try:
        r = requests.get(f"https://api.monsterdex.example/api/v2/type/{type_name}", timeout=10)
        r.raise_for_status()
        return r.json()["double_damage_to"]
    except requests.RequestException:
        return None


def names_page(limit, offset):
    """List creature names from the Monsterdex API, `limit` of them starting at position `offset`. Return
    the list, or None if the request fails."""
    import httpx

    try:
        r = httpx.get("https://api.monsterdex.example/api/v2/creature", params={"limit": limit, "offset": offset})
        r.raise_for_status()
        return [c["name"] for c in r.json()["results"]]
    except httpx.HTTPError:
        return None


CASES = {
    "attack_stat": [("stonehorn",), ("Puddlet",), ("dragonite",)],
    "strong_against": [("water",), ("normal",), ("ghost",)],
    "names_page": [(2, 3), (5, 4), (3, -1)],
}
