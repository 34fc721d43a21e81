"""Boxstore, a file storage API at https://api.boxstore.example. Every request needs the header
X-Api-Key: bx-store-5 (401 otherwise). Two files exist: docs/readme.txt ("Welcome to the box.") and
docs/todo.txt ("1. tidy\n2. ship").
PUT /files/{name} with a JSON body {"content": text} stores (or replaces) a file and answers 201 {"name",
"size", "version"} when new, 200 when replaced (version counts the writes, from 1); names are letters,
digits, dots, dashes and underscores, with at most one slash, which PUT takes encoded (docs%2Fa.txt);
another name is a 400; content over 5000 characters is a 422.
GET /files/{name} returns {"name", "size", "version", "content"}; DELETE /files/{name} answers 204; both
take a name with a slash as it is (GET /files/docs/a.txt) or encoded; an unknown file is a 404.
GET /files?prefix=TEXT returns {"files": [{"name", "size"}, ...]} sorted by name, only names starting with
the prefix when given."""

import re

from aac.sandbox.web_service import HTTPError, Service

api = Service("api.boxstore.example", key_header="X-Api-Key", key="bx-store-5")

FILES = {"docs/readme.txt": ["Welcome to the box.", 1], "docs/todo.txt": ["1. tidy\n2. ship", 1]}


def _name(name):
    name = name.replace("%2F", "/").replace("%2f", "/")
    if not re.fullmatch(r"[\w.-]+(/[\w.-]+)?", name):
        raise HTTPError(400, "invalid file name")
    return name


def _file(name):
    name = _name(name)
    if name not in FILES:
        raise HTTPError(404, f"no file {name}")
    return name, FILES[name]


@api.route("PUT", "/files/{name}")
def put(name, content):
    name = _name(name)
    if len(content) > 5000:
        raise HTTPError(422, "content over 5000 characters")
    status = 200 if name in FILES else 201
    version = FILES[name][1] + 1 if name in FILES else 1
    FILES[name] = [content, version]
    return status, {"name": name, "size": len(content), "version": version}


@api.route("GET", "/files/{name}")
def get_file(name):
    name, (content, version) = _file(name)
    return {"name": name, "size": len(content), "version": version, "content": content}


@api.route("GET", "/files/{folder}/{name}")
def get_nested(folder, name):
    return get_file(f"{folder}/{name}")


@api.route("DELETE", "/files/{name}")
def delete(name):
    name, _ = _file(name)
    del FILES[name]
    return 204, None


@api.route("DELETE", "/files/{folder}/{name}")
def delete_nested(folder, name):
    return delete(f"{folder}/{name}")


@api.route("GET", "/files")
def list_files(prefix=""):
    return {"files": [{"name": n, "size": len(c)} for n, (c, _) in sorted(FILES.items()) if n.startswith(prefix)]}


EXAMPLES = [
    ("GET", "/files", None, {"X-Api-Key": "bx-store-5"}),
    ("GET", "/files/docs/todo.txt", None, {"X-Api-Key": "bx-store-5"}),
]


def save_text(name, text):
    """Store a text file under a name (no slash) in Boxstore (key bx-store-5 in the X-Api-Key header).
    Return the version number the service reports, or None if the request fails."""
    import requests

    try:
        r = requests.put(f"https://api.boxstore.example/files/{name}", json={"content": text},
                         headers={"X-Api-Key": "bx-store-5"}, timeout=10)
        r.raise_for_status()
        return r.json()["version"]
    except requests.RequestException:
        return None


def file_names(prefix):
    """List the names of the Boxstore files starting with a prefix (key bx-store-5 in the X-Api-Key header).
    Return the sorted list, or None if the request fails."""
    import httpx

    try:
        r = httpx.get("https://api.boxstore.example/files", params={"prefix": prefix},
                      headers={"X-Api-Key": "bx-store-5"})
        r.raise_for_status()
        return [f["name"] for f in r.json()["files"]]
    except httpx.HTTPError:
        return None


def read_file(name):
    """Read a text file from Boxstore by name, such as docs/readme.txt (key bx-store-5 in the X-Api-Key
    header). Return its content, or None if the file is unknown or the request fails."""
    import requests

    try:
        r = requests.get(f"https://api.boxstore.example/files/{name}", headers={"X-Api-Key": "bx-store-5"}, timeout=10)
        r.raise_for_status()
        return r.json()["content"]
    except requests.RequestException:
        return None


def delete_file(name):
    """Delete a Boxstore file by name, such as docs/todo.txt (key bx-store-5 in the X-Api-Key header).
    Return True if it was deleted, False otherwise."""
    import httpx

    try:
        r = httpx.delete(f"https://api.boxstore.example/files/{name}", headers={"X-Api-Key": "bx-store-5"})
        return r.status_code == 204
    except httpx.HTTPError:
        return False


CASES = {
    "save_text": [("notes.txt", "hello"), ("bad name!", "x"), ("big.txt", "long text long text")],
    "file_names": [("docs/",), ("docs/r",), ("img/",)],
    "read_file": [("docs/readme.txt",), ("docs/none.txt",)],
    "delete_file": [("docs/todo.txt",), ("x.txt",)],
}
