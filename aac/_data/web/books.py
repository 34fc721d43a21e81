"""Shelfspace, a book catalogue API at https://api.shelfspace.example (no authentication).
GET /books?author=NAME&year=Y&page=P returns {"books": [{"isbn", "title", "author", "year"}, ...], "page",
"total"}: books sorted by title, 3 per page (page from 1, default 1; page 0 or less is a 422), filtered by a
case-insensitive substring of the author and by the exact publication year when given; a page past the end
is an empty list.
GET /books/{isbn} returns one book with its "pages" and "subjects" besides; an unknown ISBN is a 404.
GET /authors/{author_id} returns {"id", "name", "born", "books": [isbns]}; author ids are integers (another
id is a 400, an unknown one a 404).
A year that is not an integer is a 400."""

from aac.sandbox.web_service import HTTPError, Range, Service

api = Service("api.shelfspace.example")

BOOKS = {
    "9780000000011": ("The Salt Road", 1, 1998, 312, ["travel", "history"]),
    "9780000000028": ("Winter Orchard", 2, 2004, 220, ["fiction"]),
    "9780000000035": ("A Map of Small Rivers", 1, 2011, 288, ["travel"]),
    "9780000000042": ("Copper and Glass", 3, 2011, 401, ["fiction", "mystery"]),
    "9780000000059": ("Counting Birds", 2, 2019, 156, ["nature"]),
    "9780000000066": ("The Quiet Engine", 3, 2020, 344, ["science fiction"]),
    "9780000000073": ("Letters from Halden", 1, 2020, 198, ["history"]),
}
AUTHORS = {1: ("Ines Varga", 1961), 2: ("Tomas Reyes", 1975), 3: ("Mira Okafor", 1983)}


def _summary(isbn):
    title, author, year, _, _ = BOOKS[isbn]
    return {"isbn": isbn, "title": title, "author": AUTHORS[author][0], "year": year}


@api.route("GET", "/books", year=int, page=Range(1, None))
def books(author=None, year=None, page=1):
    rows = [_summary(i) for i in BOOKS]
    if author is not None:
        rows = [b for b in rows if author.lower() in b["author"].lower()]
    if year is not None:
        rows = [b for b in rows if b["year"] == year]
    rows.sort(key=lambda b: b["title"])
    return {"books": rows[3 * (page - 1): 3 * page], "page": page, "total": len(rows)}


@api.route("GET", "/books/{isbn}")
def book(isbn):
    if isbn not in BOOKS:
        raise HTTPError(404, f"no book with ISBN {isbn}")
    _, _, _, pages, subjects = BOOKS[isbn]
    return {**_summary(isbn), "pages": pages, "subjects": subjects}


@api.route("GET", "/authors/{author_id}", author_id=int)
def author(author_id):
    if author_id not in AUTHORS:
        raise HTTPError(404, f"no author {author_id}")
    name, born = AUTHORS[author_id]
    return {"id": author_id, "name": name, "born": born, "books": [i for i, b in BOOKS.items() if b[1] == author_id]}


EXAMPLES = [
    ("GET", "/books", {"author": "reyes"}),
    ("GET", "/books/9780000000042"),
]


def page_count(isbn):
    """Look a book up by ISBN in the Shelfspace catalogue and return its number of pages, or None if the
    book is unknown or the request fails."""
    import requests

    try:
        r = requests.get(f"https://api.shelfspace.example/books/{isbn}", timeout=10)
        r.raise_for_status()
        return r.json()["pages"]
    except requests.RequestException:
        return None


def titles_of_year(year):
    """List the titles of the books published in a given year in the Shelfspace catalogue (the first page
    of results). Return the list of titles, or None if the request fails."""
    import requests

    try:
        r = requests.get("https://api.shelfspace.example/books", params={"year": year}, timeout=10)
        r.raise_for_status()
        return [b["title"] for b in r.json()["books"]]
    except requests.RequestException:
        return None


def author_birth_year(author_id):
    """Get the birth year of a Shelfspace author by the author's numeric id. Return it, or None if the
    author is unknown or the request fails."""
    import json
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(f"https://api.shelfspace.example/authors/{author_id}", timeout=10) as resp:
            return json.loads(resp.read())["born"]
    except urllib.error.URLError:
        return None


CASES = {
    "page_count": [("9780000000059",), ("9780000000011",), ("9780000000999",)],
    "titles_of_year": [(2011,), (2020,), (1990,)],
    "author_birth_year": [(3,), (1,), (9,)],
}
