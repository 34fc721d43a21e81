"""Reelbase, a film database API at https://api.reelbase.example. Every request needs the query parameter
api_key=rb-demo-8 (a missing or wrong key is a 401 {"error": "invalid api_key"}).
GET /3/search/movie?query=TEXT&year=Y&api_key=... returns {"results": [{"id", "title", "year"}, ...],
"total_results"}: films whose title contains the text (case-insensitive), in id order, optionally only of
one year. An empty query is a 422.
GET /3/movie/{movie_id}?api_key=... returns {"id", "title", "year", "runtime", "genres", "rating"}; an
unknown id is a 404 {"error": "The resource you requested could not be found."}.
GET /3/movie/{movie_id}/credits?api_key=... returns {"id", "director", "cast": [names, lead first]}.
Ids are integers (another id is a 400)."""

from aac.sandbox.web_service import HTTPError, Service

api = Service("api.reelbase.example")

KEY = "rb-demo-8"
MOVIES = {
    101: ("The Lighthouse Keeper", 2009, 118, ["drama"], 7.4, "Ana Lind", ["Oskar Berg", "Lea Moss"]),
    102: ("Night Train to Vigo", 2015, 97, ["thriller"], 6.8, "Pablo Ruiz", ["Marta Gil", "Ian Shaw", "Ola Ek"]),
    103: ("Keeper of Bees", 2015, 104, ["family", "drama"], 7.9, "Ana Lind", ["Ida Noor"]),
    104: ("Orbit Nine", 2021, 131, ["science fiction"], 8.1, "Ken Mori", ["Sara Voss", "Tom Ash"]),
    105: ("The Last Train", 2021, 89, ["comedy"], 5.9, "Pablo Ruiz", ["Ian Shaw"]),
}


def _check(api_key):
    if api_key != KEY:
        raise HTTPError(401, "invalid api_key")


def _movie(movie_id):
    if movie_id not in MOVIES:
        raise HTTPError(404, "The resource you requested could not be found.")
    return MOVIES[movie_id]


@api.route("GET", "/3/search/movie", year=int)
def search(query, api_key="", year=None):
    _check(api_key)
    if not query.strip():
        raise HTTPError(422, "query must not be empty")
    found = [{"id": i, "title": m[0], "year": m[1]} for i, m in MOVIES.items()
             if query.lower() in m[0].lower() and (year is None or m[1] == year)]
    return {"results": found, "total_results": len(found)}


@api.route("GET", "/3/movie/{movie_id}", movie_id=int)
def movie(movie_id, api_key=""):
    _check(api_key)
    title, year, runtime, genres, rating, _, _ = _movie(movie_id)
    return {"id": movie_id, "title": title, "year": year, "runtime": runtime, "genres": genres, "rating": rating}


@api.route("GET", "/3/movie/{movie_id}/credits", movie_id=int)
def credits(movie_id, api_key=""):
    _check(api_key)
    found = _movie(movie_id)
    return {"id": movie_id, "director": found[5], "cast": found[6]}


EXAMPLES = [
    ("GET", "/3/search/movie", {"query": "train", "api_key": "rb-demo-8"}),
    ("GET", "/3/movie/103", {"api_key": "rb-demo-8"}),
]


def runtime_minutes(movie_id):
    """Get a film's running time in minutes from the Reelbase API (api key rb-demo-8) by the film's numeric
    id. Return it, or None if the film is unknown or the request fails."""
    import requests

    try:
        r = requests.get(f"https://api.reelbase.example/3/movie/{movie_id}", params={"api_key": "rb-demo-8"},
                         timeout=10)
        r.raise_for_status()
        return r.json()["runtime"]
    except requests.RequestException:
        return None


def director_of(movie_id):
    """Find the director of a film in the Reelbase API (api key rb-demo-8) by its numeric id. Return the
    director's name, or None if the request fails."""
    import requests

    try:
        r = requests.get(f"https://api.reelbase.example/3/movie/{movie_id}/credits",
                         params={"api_key": "rb-demo-8"}, timeout=10)
        r.raise_for_status()
        return r.json()["director"]
    except requests.RequestException:
        return None


def film_ids(title, year):
    """Search the Reelbase film database (api key rb-demo-8) for films whose title contains a text and that
    came out in a given year. Return the list of their ids, or None if the request fails."""
    import httpx

    try:
        r = httpx.get("https://api.reelbase.example/3/search/movie",
                      params={"query": title, "year": year, "api_key": "rb-demo-8"})
        r.raise_for_status()
        return [m["id"] for m in r.json()["results"]]
    except httpx.HTTPError:
        return None


CASES = {
    "runtime_minutes": [(104,), (101,), (999,)],
    "director_of": [(102,), (105,), (7,)],
    "film_ids": [("train", 2021), ("keeper", 2015), ("orbit", 1999)],
}
