"""Pantry, a recipe API at https://api.pantry.example (no authentication).
GET /recipes?ingredient=NAME&max_minutes=N&diet=vegetarian|vegan returns {"recipes": [{"id", "name",
"minutes"}, ...]} sorted by minutes then id: recipes using the ingredient (case-insensitive, whole
ingredient name), taking at most N minutes (a positive integer; 0 or less is a 422), fitting the diet
(vegan recipes count as vegetarian; another diet is a 422). All filters are optional.
GET /recipes/{recipe_id} returns {"id", "name", "minutes", "servings", "ingredients": [names], "diet"};
GET /recipes/{recipe_id}/nutrition?servings=N returns {"id", "servings", "kcal"}: the calories of N
servings (default: the recipe's servings; 1..12, else 422). An unknown id is a 404, a non-integer a 400."""

from aac.sandbox.web_service import HTTPError, OneOf, Range, Service

api = Service("api.pantry.example")

RECIPES = {
    1: ("Tomato soup", 30, 4, ["tomato", "onion", "garlic"], "vegan", 180),
    2: ("Omelette", 10, 1, ["egg", "butter", "chives"], "vegetarian", 320),
    3: ("Chicken curry", 45, 4, ["chicken", "onion", "tomato", "rice"], "none", 610),
    4: ("Garlic bread", 15, 2, ["bread", "garlic", "butter"], "vegetarian", 290),
    5: ("Lentil stew", 40, 6, ["lentil", "onion", "carrot"], "vegan", 350),
}


def _recipe(recipe_id):
    if recipe_id not in RECIPES:
        raise HTTPError(404, f"no recipe {recipe_id}")
    return RECIPES[recipe_id]


@api.route("GET", "/recipes", max_minutes=Range(1, None), diet=OneOf("vegetarian", "vegan"))
def recipes(ingredient=None, max_minutes=None, diet=None):
    found = []
    for rid, (name, minutes, _, ingredients, kind, _) in RECIPES.items():
        if ingredient is not None and ingredient.lower() not in ingredients:
            continue
        if max_minutes is not None and minutes > max_minutes:
            continue
        if diet == "vegan" and kind != "vegan" or diet == "vegetarian" and kind == "none":
            continue
        found.append({"id": rid, "name": name, "minutes": minutes})
    return {"recipes": sorted(found, key=lambda r: (r["minutes"], r["id"]))}


@api.route("GET", "/recipes/{recipe_id}", recipe_id=int)
def recipe(recipe_id):
    name, minutes, servings, ingredients, diet, _ = _recipe(recipe_id)
    return {"id": recipe_id, "name": name, "minutes": minutes, "servings": servings, "ingredients": ingredients,
            "diet": diet}


@api.route("GET", "/recipes/{recipe_id}/nutrition", recipe_id=int, servings=Range(1, 12))
def nutrition(recipe_id, servings=None):
    found = _recipe(recipe_id)
    servings = found[2] if servings is None else servings
    return {"id": recipe_id, "servings": servings, "kcal": found[5] * servings}


EXAMPLES = [
    ("GET", "/recipes", {"ingredient": "onion"}),
    ("GET", "/recipes/2"),
]


def quick_recipes(ingredient, minutes):
    """Find recipes with an ingredient that take at most a number of minutes, with the Pantry API. Return
    the recipe names, quickest first, or None if the request fails."""
    import requests

    try:
        r = requests.get("https://api.pantry.example/recipes",
                         params={"ingredient": ingredient, "max_minutes": minutes}, timeout=10)
        r.raise_for_status()
        return [x["name"] for x in r.json()["recipes"]]
    except requests.RequestException:
        return None


def calories(recipe_id, servings):
    """Get the calories of a number of servings of a Pantry recipe, by recipe id. Return the number of
    kcal, or None if the request fails."""
    import requests

    try:
        r = requests.get(f"https://api.pantry.example/recipes/{recipe_id}/nutrition",
                         params={"servings": servings}, timeout=10)
        r.raise_for_status()
        return r.json()["kcal"]
    except requests.RequestException:
        return None


def ingredients_of(recipe_id):
    """List the ingredients of a Pantry recipe by its id. Return the list, or None if the recipe is
    unknown or the request fails."""
    import httpx

    try:
        r = httpx.get(f"https://api.pantry.example/recipes/{recipe_id}")
        r.raise_for_status()
        return r.json()["ingredients"]
    except httpx.HTTPError:
        return None


CASES = {
    "quick_recipes": [("garlic", 20), ("onion", 60), ("egg", 0)],
    "calories": [(2, 3), (5, 1), (4, 20)],
    "ingredients_of": [(3,), (1,), (42,)],
}
