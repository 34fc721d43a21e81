"""Peoplebase, a user directory API at https://api.peoplebase.example. Every request needs the header
X-Api-Key: pb-dir-7 (401 otherwise). Four users exist (ids 1-4); new users get ids from 5.
GET /api/users?page=P&per_page=N returns {"page", "per_page", "total", "total_pages", "data": [{"id",
"name", "email"}, ...]} in id order (per_page 1..10, default 2; page from 1, default 1; outside is a 422; a
page past the end gives an empty list).
GET /api/users/{user_id} returns {"data": {"id", "name", "email", "team"}}; an unknown id is a 404 with an
empty body {}.
POST /api/users with {"name", "email", "team": optional (default "none")} creates a user: 201 with the
user; an e-mail without @ is a 422, an e-mail already in use a 409.
PUT /api/users/{user_id} with {"name", "email", "team"} (all three required) replaces a user and returns
it under "data"."""

from aac.sandbox.web_service import HTTPError, Range, Service

api = Service("api.peoplebase.example", key_header="X-Api-Key", key="pb-dir-7")

USERS = {1: {"id": 1, "name": "Amara Diallo", "email": "amara@corp.example", "team": "design"},
         2: {"id": 2, "name": "Bruno Costa", "email": "bruno@corp.example", "team": "sales"},
         3: {"id": 3, "name": "Chen Wei", "email": "chen@corp.example", "team": "design"},
         4: {"id": 4, "name": "Dana Kohl", "email": "dana@corp.example", "team": "ops"}}


def _user(user_id):
    if user_id not in USERS:
        raise HTTPError(404, "not found")
    return USERS[user_id]


def _check_email(email, user_id=None):
    if "@" not in email:
        raise HTTPError(422, "invalid email")
    if any(u["email"] == email and u["id"] != user_id for u in USERS.values()):
        raise HTTPError(409, "email already in use")


@api.route("GET", "/api/users", page=Range(1, None), per_page=Range(1, 10))
def list_users(page=1, per_page=2):
    rows = [{"id": u["id"], "name": u["name"], "email": u["email"]} for u in USERS.values()]
    return {"page": page, "per_page": per_page, "total": len(rows), "total_pages": -(-len(rows) // per_page),
            "data": rows[(page - 1) * per_page: page * per_page]}


@api.route("GET", "/api/users/{user_id}", user_id=int)
def get_user(user_id):
    return {"data": dict(_user(user_id))}


@api.route("POST", "/api/users")
def create(name, email, team="none"):
    _check_email(email)
    user = {"id": max(USERS) + 1, "name": name, "email": email, "team": team}
    USERS[user["id"]] = user
    return 201, dict(user)


@api.route("PUT", "/api/users/{user_id}", user_id=int)
def replace(user_id, name, email, team):
    _user(user_id)
    _check_email(email, user_id)
    USERS[user_id] = {"id": user_id, "name": name, "email": email, "team": team}
    return {"data": dict(USERS[user_id])}


EXAMPLES = [
    ("GET", "/api/users", {"page": 2}, {"X-Api-Key": "pb-dir-7"}),
    ("GET", "/api/users/3", None, {"X-Api-Key": "pb-dir-7"}),
]


def user_team(user_id):
    """Get the team of a Peoplebase user by id (key pb-dir-7 in the X-Api-Key header). Return the team, or
    None if the user is unknown or the request fails."""
    import requests

    try:
        r = requests.get(f"https://api.peoplebase.example/api/users/{user_id}", headers={"X-Api-Key": "pb-dir-7"},
                         timeout=10)
        r.raise_for_status()
        return r.json()["data"]["team"]
    except requests.RequestException:
        return None


def register(name, email):
    """Create a Peoplebase user with a name and an e-mail (key pb-dir-7 in the X-Api-Key header). Return the
    new user's id, or None if the service refuses or the request fails."""
    import httpx

    try:
        r = httpx.post("https://api.peoplebase.example/api/users", json={"name": name, "email": email},
                       headers={"X-Api-Key": "pb-dir-7"})
        r.raise_for_status()
        return r.json()["id"]
    except httpx.HTTPError:
        return None


def page_count(per_page):
    """Ask Peoplebase (key pb-dir-7 in the X-Api-Key header) how many pages the user list has with a page
    size of per_page. Return the number, or None if the request fails."""
    import requests

    try:
        r = requests.get("https://api.peoplebase.example/api/users", params={"per_page": per_page},
                         headers={"X-Api-Key": "pb-dir-7"}, timeout=10)
        r.raise_for_status()
        return r.json()["total_pages"]
    except requests.RequestException:
        return None


CASES = {
    "user_team": [(4,), (1,), (23,)],
    "register": [("Eli Moss", "eli@corp.example"), ("Fay", "chen@corp.example"), ("Gus", "gus-at-corp")],
    "page_count": [(3,), (1,), (11,)],
}
