"""Codehub, a code hosting API at https://api.codehub.example. Every request needs the header
Authorization: Bearer ghp_demo_61 (401 otherwise).
GET /users/{user}/repos?sort=name|stars returns [{"name", "stars", "language", "archived"}, ...]: the
user's repositories sorted by name (default) or by stars, most first (another sort is a 422); an unknown
user is a 404.
GET /repos/{owner}/{repo} returns {"full_name": "owner/repo", "stars", "language", "open_issues",
"default_branch"}; an unknown repository is a 404.
GET /repos/{owner}/{repo}/issues?state=open|closed|all&label=NAME returns the issues [{"number",
"title", "state", "labels"}, ...] in number order (state default open; another is a 422), optionally
with a label."""

from aac.sandbox.web_service import HTTPError, OneOf, Service

api = Service("api.codehub.example", key_header="Authorization", key="ghp_demo_61", bearer=True)

REPOS = {
    ("ada", "tinyjson"): (412, "C", "main", [(1, "crash on empty input", "closed", ["bug"]),
                                             (2, "support comments", "open", ["enhancement"]),
                                             (3, "wrong line numbers", "open", ["bug"])]),
    ("ada", "dotfiles"): (3, "Shell", "master", []),
    ("ada", "raytracer"): (87, "Rust", "main", [(1, "add soft shadows", "open", ["enhancement"])]),
    ("ben", "notes-app"): (29, "TypeScript", "main", [(4, "dark mode", "closed", ["ui"])]),
}


def _repo(owner, repo):
    if (owner, repo) not in REPOS:
        raise HTTPError(404, "Not Found")
    return REPOS[(owner, repo)]


@api.route("GET", "/users/{user}/repos", sort=OneOf("name", "stars"))
def user_repos(user, sort="name"):
    rows = [{"name": name, "stars": r[0], "language": r[1], "archived": name == "dotfiles"}
            for (owner, name), r in REPOS.items() if owner == user]
    if not rows:
        raise HTTPError(404, "Not Found")
    return sorted(rows, key=lambda r: r["name"] if sort == "name" else -r["stars"])


@api.route("GET", "/repos/{owner}/{repo}")
def repository(owner, repo):
    stars, language, branch, issues = _repo(owner, repo)
    return {"full_name": f"{owner}/{repo}", "stars": stars, "language": language,
            "open_issues": sum(i[2] == "open" for i in issues), "default_branch": branch}


@api.route("GET", "/repos/{owner}/{repo}/issues", state=OneOf("open", "closed", "all"))
def issues(owner, repo, state="open", label=None):
    rows = _repo(owner, repo)[3]
    return [{"number": n, "title": t, "state": s, "labels": ls} for n, t, s, ls in rows
            if (state == "all" or s == state) and (label is None or label in ls)]


EXAMPLES = [
    ("GET", "/users/ada/repos", None, {"Authorization": "Bearer ghp_demo_61"}),
    ("GET", "/repos/ada/tinyjson/issues", None, {"Authorization": "Bearer ghp_demo_61"}),
]


def star_count(owner, repo):
    """Get the number of stars of a Codehub repository (bearer token ghp_demo_61). Return it, or None if the
    repository is unknown or the request fails."""
    import requests

    try:
        r = requests.get(f"https://api.codehub.example/repos/{owner}/{repo}",
                         headers={"Authorization": "Bearer ghp_demo_61"}, timeout=10)
        r.raise_for_status()
        return r.json()["stars"]
    except requests.RequestException:
        return None


def most_starred(user):
    """Find the name of a Codehub user's most starred repository (bearer token ghp_demo_61). Return it, or
    None if the user is unknown or the request fails."""
    import requests

    try:
        r = requests.get(f"https://api.codehub.example/users/{user}/repos", params={"sort": "stars"},
                         headers={"Authorization": "Bearer ghp_demo_61"}, timeout=10)
        r.raise_for_status()
        return r.json()[0]["name"]
    except requests.RequestException:
        return None


def bug_titles(owner, repo):
    """List the titles of all the issues (open and closed) labelled "bug" in a Codehub repository (bearer
    token ghp_demo_61). Return them in issue-number order, or None if the request fails."""
    import httpx

    try:
        r = httpx.get(f"https://api.codehub.example/repos/{owner}/{repo}/issues",
                      params={"state": "all", "label": "bug"}, headers={"Authorization": "Bearer ghp_demo_61"})
        r.raise_for_status()
        return [i["title"] for i in r.json()]
    except httpx.HTTPError:
        return None


CASES = {
    "star_count": [("ada", "raytracer"), ("ben", "notes-app"), ("ada", "missing")],
    "most_starred": [("ada",), ("ben",), ("carl",)],
    "bug_titles": [("ada", "tinyjson"), ("ada", "raytracer"), ("zed", "x")],
}
