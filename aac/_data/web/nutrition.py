"""Nutrifacts, a food nutrition API at https://api.nutrifacts.example. Every request needs the header
X-App-Key: nf-free-44 (401 otherwise).
GET /v1/foods/search?query=TEXT&page_size=N returns {"foods": [{"id", "description"}, ...], "total"}:
foods whose description contains every word of the query (case-insensitive), in id order, at most N
(1..25, default 10; outside is a 422). An empty query is a 422.
GET /v1/foods/{food_id}?serving_g=G returns {"id", "description", "serving_g", "kcal", "protein_g",
"fat_g", "carbs_g"} for a serving of G grams (1..1000, default 100; outside is a 422), values scaled from
per-100 g figures and rounded to 1 decimal; an unknown id is a 404, a non-integer a 400."""

from aac.sandbox.web_service import HTTPError, Range, Service

api = Service("api.nutrifacts.example", key_header="X-App-Key", key="nf-free-44")

FOODS = {  # per 100 g: kcal, protein, fat, carbs
    1101: ("Apple, raw", 52, 0.3, 0.2, 13.8), 1102: ("Apple juice, unsweetened", 46, 0.1, 0.1, 11.3),
    1201: ("Oats, rolled", 379, 13.2, 6.5, 67.7), 1301: ("Egg, whole, boiled", 155, 12.6, 10.6, 1.1),
    1401: ("Rice, white, cooked", 130, 2.7, 0.3, 28.2), 1402: ("Rice, brown, cooked", 123, 2.7, 1.0, 25.6),
}


@api.route("GET", "/v1/foods/search", page_size=Range(1, 25))
def search(query, page_size=10):
    words = query.lower().split()
    if not words:
        raise HTTPError(422, "query must not be empty")
    rows = [{"id": k, "description": d[0]} for k, d in FOODS.items() if all(w in d[0].lower() for w in words)]
    return {"foods": rows[:page_size], "total": len(rows)}


@api.route("GET", "/v1/foods/{food_id}", food_id=int, serving_g=Range(1, 1000))
def food(food_id, serving_g=100):
    if food_id not in FOODS:
        raise HTTPError(404, f"no food {food_id}")
    name, kcal, protein, fat, carbs = FOODS[food_id]
    scale = serving_g / 100
    return {"id": food_id, "description": name, "serving_g": serving_g, "kcal": round(kcal * scale, 1),
            "protein_g": round(protein * scale, 1), "fat_g": round(fat * scale, 1), "carbs_g": round(carbs * scale, 1)}


EXAMPLES = [
    ("GET", "/v1/foods/search", {"query": "rice"}, {"X-App-Key": "nf-free-44"}),
    ("GET", "/v1/foods/1301", {"serving_g": 50}, {"X-App-Key": "nf-free-44"}),
]


def protein_in(food_id, grams):
    """Get the grams of protein in a serving of `grams` grams of a food by its Nutrifacts id (key nf-free-44
    in the X-App-Key header). Return the number, or None if the request fails."""
    import requests

    try:
        r = requests.get(f"https://api.nutrifacts.example/v1/foods/{food_id}", params={"serving_g": grams},
                         headers={"X-App-Key": "nf-free-44"}, timeout=10)
        r.raise_for_status()
        return r.json()["protein_g"]
    except requests.RequestException:
        return None


def food_ids(query):
    """Search the Nutrifacts database (key nf-free-44 in the X-App-Key header) for foods matching a text.
    Return the list of their ids, or None if the request fails."""
    import requests

    try:
        r = requests.get("https://api.nutrifacts.example/v1/foods/search", params={"query": query},
                         headers={"X-App-Key": "nf-free-44"}, timeout=10)
        r.raise_for_status()
        return [f["id"] for f in r.json()["foods"]]
    except requests.RequestException:
        return None


CASES = {
    "protein_in": [(1201, 40), (1101, 150), (1999, 100), (1301, 5000)],
    "food_ids": [("apple",), ("rice cooked",), ("",)],
}
