"""Ticktask, a to-do list API at https://api.ticktask.example. Every request needs the header
Authorization: Bearer tt-secret-42 (401 without it or with another token). The list starts with three
tasks (ids 1-3); ids of new tasks continue from 4.
GET /todos?done=true|false returns {"todos": [{"id", "title", "done", "priority"}, ...]} in id order,
filtered by done when given.
POST /todos with a JSON body {"title": text, "priority": "low"|"normal"|"high" (default normal)} creates an
open task and answers 201 with it; an empty title is a 422, another priority a 422.
GET /todos/{todo_id} returns one task; PATCH /todos/{todo_id} with any of {"title", "done", "priority"}
changes them and returns the task; DELETE /todos/{todo_id} removes it and answers 204 with no body. An
unknown id is a 404, a non-integer id a 400; a body value of the wrong type (done not a boolean) is a 400."""

from aac.sandbox.web_service import HTTPError, OneOf, Service

api = Service("api.ticktask.example", key_header="Authorization", key="tt-secret-42", bearer=True)

TODOS = {1: {"id": 1, "title": "buy stamps", "done": False, "priority": "low"},
         2: {"id": 2, "title": "call the plumber", "done": True, "priority": "high"},
         3: {"id": 3, "title": "renew passport", "done": False, "priority": "normal"}}
NEXT = [4]
PRIORITY = OneOf("low", "normal", "high")


def _todo(todo_id):
    if todo_id not in TODOS:
        raise HTTPError(404, f"no todo {todo_id}")
    return TODOS[todo_id]


@api.route("GET", "/todos", done=bool)
def list_todos(done=None):
    return {"todos": [dict(t) for t in TODOS.values() if done is None or t["done"] == done]}


@api.route("POST", "/todos", priority=PRIORITY)
def create(title, priority="normal"):
    if not title.strip():
        raise HTTPError(422, "the title must not be empty")
    todo = {"id": NEXT[0], "title": title, "done": False, "priority": priority}
    TODOS[todo["id"]] = todo
    NEXT[0] += 1
    return 201, dict(todo)


@api.route("GET", "/todos/{todo_id}", todo_id=int)
def get_todo(todo_id):
    return dict(_todo(todo_id))


@api.route("PATCH", "/todos/{todo_id}", todo_id=int, done=bool, priority=PRIORITY)
def update(todo_id, title=None, done=None, priority=None):
    todo = _todo(todo_id)
    for key, value in (("title", title), ("done", done), ("priority", priority)):
        if value is not None:
            todo[key] = value
    return dict(todo)


@api.route("DELETE", "/todos/{todo_id}", todo_id=int)
def delete(todo_id):
    _todo(todo_id)
    del TODOS[todo_id]
    return 204, None


EXAMPLES = [
    ("GET", "/todos", {"done": False}, {"Authorization": "Bearer tt-secret-42"}),
    ("POST", "/todos", {"title": "water plants"}, {"Authorization": "Bearer tt-secret-42"}),
]


def add_task(title, priority):
    """Create a task with a title and a priority (low, normal or high) in the Ticktask to-do API, whose
    bearer token is tt-secret-42. Return the new task's id, or None if the request fails."""
    import requests

    try:
        r = requests.post("https://api.ticktask.example/todos", json={"title": title, "priority": priority},
                          headers={"Authorization": "Bearer tt-secret-42"}, timeout=10)
        r.raise_for_status()
        return r.json()["id"]
    except requests.RequestException:
        return None


def complete_task(todo_id):
    """Mark a Ticktask task (bearer token tt-secret-42) as done by its id. Return True when the service
    confirms it is done, False if the request fails."""
    import httpx

    try:
        r = httpx.patch(f"https://api.ticktask.example/todos/{todo_id}", json={"done": True},
                        headers={"Authorization": "Bearer tt-secret-42"})
        r.raise_for_status()
        return r.json()["done"] is True
    except httpx.HTTPError:
        return False


def open_titles():
    """List the titles of the Ticktask tasks that are not done yet (bearer token tt-secret-42), in id
    order. Return the list, or None if the request fails."""
    import requests

    try:
        r = requests.get("https://api.ticktask.example/todos", params={"done": "false"},
                         headers={"Authorization": "Bearer tt-secret-42"}, timeout=10)
        r.raise_for_status()
        return [t["title"] for t in r.json()["todos"]]
    except requests.RequestException:
        return None


def remove_task(todo_id):
    """Delete a Ticktask task by id (bearer token tt-secret-42). Return True if it was deleted, False
    otherwise."""
    import requests

    try:
        r = requests.delete(f"https://api.ticktask.example/todos/{todo_id}",
                            headers={"Authorization": "Bearer tt-secret-42"}, timeout=10)
        return r.status_code == 204
    except requests.RequestException:
        return False


CASES = {
    "add_task": [("file taxes", "high"), ("sweep", "low"), ("nap", "urgent"), ("", "normal")],
    "complete_task": [(1,), (3,), (12,)],
    "open_titles": [()],
    "remove_task": [(2,), (7,)],
}
