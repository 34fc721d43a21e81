"""Jotter, a notes API at https://api.jotter.example. Every request needs the header Authorization:
Bearer jt-user-19 (401 otherwise). Two notes exist: 1 "Groceries" (tags home, list) and 2 "Ideas" (tags
work).
GET /notes?tag=NAME returns {"notes": [{"id", "title", "tags"}, ...]} in id order, only those with the
tag when given.
POST /notes with a JSON body {"title", "body": optional text (default ""), "tags": optional list of
strings} answers 201 with the note {"id", "title", "body", "tags"}; ids continue from 3; an empty title is
a 422; tags that are not a list of strings are a 400 or 422.
GET /notes/{note_id} returns one note; PATCH /notes/{note_id} with any of {"title", "body", "tags"}
changes them and returns the note; DELETE /notes/{note_id} answers 204. An unknown id is a 404."""

from aac.sandbox.web_service import HTTPError, Service

api = Service("api.jotter.example", key_header="Authorization", key="jt-user-19", bearer=True)

NOTES = {1: {"id": 1, "title": "Groceries", "body": "eggs, flour", "tags": ["home", "list"]},
         2: {"id": 2, "title": "Ideas", "body": "a tide clock", "tags": ["work"]}}


def _note(note_id):
    if note_id not in NOTES:
        raise HTTPError(404, f"no note {note_id}")
    return NOTES[note_id]


def _tags(tags):
    if not all(isinstance(t, str) for t in tags):
        raise HTTPError(422, "tags must be strings")
    return tags


@api.route("GET", "/notes")
def list_notes(tag=None):
    return {"notes": [{"id": n["id"], "title": n["title"], "tags": n["tags"]} for n in NOTES.values()
                      if tag is None or tag in n["tags"]]}


@api.route("POST", "/notes", tags=list)
def create(title, body="", tags=None):
    if not title.strip():
        raise HTTPError(422, "title must not be empty")
    note = {"id": max(NOTES) + 1, "title": title, "body": body, "tags": _tags(tags or [])}
    NOTES[note["id"]] = note
    return 201, dict(note)


@api.route("GET", "/notes/{note_id}", note_id=int)
def get_note(note_id):
    return dict(_note(note_id))


@api.route("PATCH", "/notes/{note_id}", note_id=int, tags=list)
def update(note_id, title=None, body=None, tags=None):
    note = _note(note_id)
    if title is not None:
        note["title"] = title
    if body is not None:
        note["body"] = body
    if tags is not None:
        note["tags"] = _tags(tags)
    return dict(note)


@api.route("DELETE", "/notes/{note_id}", note_id=int)
def delete(note_id):
    _note(note_id)
    del NOTES[note_id]
    return 204, None


EXAMPLES = [
    ("GET", "/notes", None, {"Authorization": "Bearer jt-user-19"}),
    ("GET", "/notes/2", None, {"Authorization": "Bearer jt-user-19"}),
]


def add_note(title, tags):
    """Create a Jotter note with a title and a list of tags (bearer token jt-user-19). Return the new note's
    id, or None if the request fails."""
    import requests

    try:
        r = requests.post("https://api.jotter.example/notes", json={"title": title, "tags": tags},
                          headers={"Authorization": "Bearer jt-user-19"}, timeout=10)
        r.raise_for_status()
        return r.json()["id"]
    except requests.RequestException:
        return None


def titles_tagged(tag):
    """List the titles of the Jotter notes with a tag (bearer token jt-user-19). Return the list, or None if
    the request fails."""
    import requests

    try:
        r = requests.get("https://api.jotter.example/notes", params={"tag": tag},
                         headers={"Authorization": "Bearer jt-user-19"}, timeout=10)
        r.raise_for_status()
        return [n["title"] for n in r.json()["notes"]]
    except requests.RequestException:
        return None


def rename(note_id, title):
    """Change the title of a Jotter note (bearer token jt-user-19). Return the title the service now shows,
    or None if the note is unknown or the request fails."""
    import httpx

    try:
        r = httpx.patch(f"https://api.jotter.example/notes/{note_id}", json={"title": title},
                        headers={"Authorization": "Bearer jt-user-19"})
        r.raise_for_status()
        return r.json()["title"]
    except httpx.HTTPError:
        return None


CASES = {
    "add_note": [("Books to read", ["home"]), ("Plan", []), ("", ["x"])],
    "titles_tagged": [("home",), ("work",), ("travel",)],
    "rename": [(1, "Shopping"), (2, "Big ideas"), (5, "x")],
}
