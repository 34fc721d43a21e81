"""Hireboard, a job listings API at https://api.hireboard.example (no authentication).
GET /api/jobs?keyword=TEXT&location=CITY&remote=true|false&page=P returns {"jobs": [{"id", "title",
"company", "location", "remote", "salary_min"}, ...], "page", "pages"}: newest (highest id) first, 2 per
page (page from 1; 0 or less is a 422), filtered by a case-insensitive keyword in the title, the exact
city (case-insensitive) and remote.
GET /api/jobs/{job_id} returns one job with "description" and "posted"; an unknown id is a 404.
GET /api/companies/{slug} returns {"slug", "name", "size", "open_jobs": [ids, newest first]}; an unknown
slug is a 404."""

from aac.sandbox.web_service import HTTPError, Range, Service

api = Service("api.hireboard.example")

COMPANIES = {"tidal": ("Tidal Works", "51-200"), "north-bakery": ("North Bakery", "1-50"),
             "orbitlab": ("Orbit Lab", "201-1000")}
JOBS = [
    (11, "Backend engineer", "tidal", "Lisbon", True, 52000, "Python services", "2024-04-02"),
    (12, "Head baker", "north-bakery", "Tromso", False, 41000, "Early mornings", "2024-04-03"),
    (13, "Data engineer", "orbitlab", "Lisbon", False, 58000, "Pipelines", "2024-04-05"),
    (14, "Frontend engineer", "tidal", "Porto", True, 50000, "TypeScript", "2024-04-06"),
    (15, "Test engineer", "orbitlab", "Munich", True, 55000, "Flight software", "2024-04-08"),
]


def _view(j):
    return {"id": j[0], "title": j[1], "company": COMPANIES[j[2]][0], "location": j[3], "remote": j[4],
            "salary_min": j[5]}


@api.route("GET", "/api/jobs", remote=bool, page=Range(1, None))
def jobs(keyword=None, location=None, remote=None, page=1):
    rows = [_view(j) for j in reversed(JOBS) if (keyword is None or keyword.lower() in j[1].lower())
            and (location is None or location.lower() == j[3].lower()) and (remote is None or j[4] == remote)]
    return {"jobs": rows[2 * (page - 1): 2 * page], "page": page, "pages": -(-len(rows) // 2)}


@api.route("GET", "/api/jobs/{job_id}", job_id=int)
def job(job_id):
    for j in JOBS:
        if j[0] == job_id:
            return {**_view(j), "description": j[6], "posted": j[7]}
    raise HTTPError(404, f"no job {job_id}")


@api.route("GET", "/api/companies/{slug}")
def company(slug):
    if slug not in COMPANIES:
        raise HTTPError(404, f"no company {slug}")
    name, size = COMPANIES[slug]
    return {"slug": slug, "name": name, "size": size, "open_jobs": [j[0] for j in reversed(JOBS) if j[2] == slug]}


EXAMPLES = [
    ("GET", "/api/jobs", {"keyword": "engineer"}),
    ("GET", "/api/companies/tidal"),
]


def remote_titles(keyword):
    """List the titles of the remote Hireboard jobs whose title contains a keyword (the first page only),
    newest first. Return the list, or None if the request fails."""
    import requests

    try:
        r = requests.get("https://api.hireboard.example/api/jobs", params={"keyword": keyword, "remote": "true"},
                         timeout=10)
        r.raise_for_status()
        return [j["title"] for j in r.json()["jobs"]]
    except requests.RequestException:
        return None


def minimum_salary(job_id):
    """Get the minimum salary of a Hireboard job by its id. Return it, or None if the job is unknown or the
    request fails."""
    import requests

    try:
        r = requests.get(f"https://api.hireboard.example/api/jobs/{job_id}", timeout=10)
        r.raise_for_status()
        return r.json()["salary_min"]
    except requests.RequestException:
        return None


def company_size(slug):
    """Get the size band of a company on Hireboard by its slug. Return it, or None if the company is unknown
    or the request fails."""
    import httpx

    try:
        r = httpx.get(f"https://api.hireboard.example/api/companies/{slug}")
        r.raise_for_status()
        return r.json()["size"]
    except httpx.HTTPError:
        return None


CASES = {
    "remote_titles": [("engineer",), ("baker",), ("pilot",)],
    "minimum_salary": [(13,), (12,), (99,)],
    "company_size": [("orbitlab",), ("north-bakery",), ("acme",)],
}
