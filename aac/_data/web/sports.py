"""Scoreboard, a football results API at https://api.scoreboard.example. Every request needs the header
X-Auth-Token: sb-fan-2 (401 otherwise).
GET /v4/competitions returns {"competitions": [{"code", "name", "teams"}, ...]} by code.
GET /v4/competitions/{code}/standings returns {"competition", "table": [{"position", "team", "played",
"points", "goal_difference"}, ...]}: 3 points a win, 1 a draw, ordered by points, then goal difference,
then name; an unknown code is a 404.
GET /v4/matches?team=NAME&date=YYYY-MM-DD returns {"matches": [{"id", "date", "home", "away", "score":
"H-A"}, ...]} in id order, filtered by team (home or away, case-insensitive) and date when given; a
malformed date is a 400."""

import re

from aac.sandbox.web_service import HTTPError, Service

api = Service("api.scoreboard.example", key_header="X-Auth-Token", key="sb-fan-2")

COMPETITIONS = {"NL1": "North League", "CUP": "Coastal Cup"}
MATCHES = [
    (1, "NL1", "2024-03-02", "Harbour FC", "Mill Town", 2, 1), (2, "NL1", "2024-03-02", "Ridge United", "Lakeside", 0, 0),
    (3, "NL1", "2024-03-09", "Mill Town", "Ridge United", 1, 3), (4, "NL1", "2024-03-09", "Lakeside", "Harbour FC", 2, 2),
    (5, "CUP", "2024-03-13", "Harbour FC", "Ridge United", 1, 0),
]


def _table(code):
    rows = {}
    for _, comp, _, home, away, hg, ag in MATCHES:
        if comp != code:
            continue
        for team, mine, theirs in ((home, hg, ag), (away, ag, hg)):
            row = rows.setdefault(team, {"team": team, "played": 0, "points": 0, "goal_difference": 0})
            row["played"] += 1
            row["points"] += 3 if mine > theirs else 1 if mine == theirs else 0
            row["goal_difference"] += mine - theirs
    ordered = sorted(rows.values(), key=lambda r: (-r["points"], -r["goal_difference"], r["team"]))
    return [{"position": k + 1, **r} for k, r in enumerate(ordered)]


@api.route("GET", "/v4/competitions")
def competitions():
    return {"competitions": [{"code": c, "name": n, "teams": len(_table(c))} for c, n in sorted(COMPETITIONS.items())]}


@api.route("GET", "/v4/competitions/{code}/standings")
def standings(code):
    if code not in COMPETITIONS:
        raise HTTPError(404, f"no competition {code}")
    return {"competition": code, "table": _table(code)}


@api.route("GET", "/v4/matches")
def matches(team=None, date=None):
    if date is not None and not re.fullmatch(r"\d{4}-\d\d-\d\d", date):
        raise HTTPError(400, "parameter 'date' must be YYYY-MM-DD")
    rows = [m for m in MATCHES if (team is None or team.lower() in (m[3].lower(), m[4].lower()))
            and (date is None or m[2] == date)]
    return {"matches": [{"id": m[0], "date": m[2], "home": m[3], "away": m[4], "score": f"{m[5]}-{m[6]}"} for m in rows]}


EXAMPLES = [
    ("GET", "/v4/competitions", None, {"X-Auth-Token": "sb-fan-2"}),
    ("GET", "/v4/matches", {"date": "2024-03-09"}, {"X-Auth-Token": "sb-fan-2"}),
]


def league_leader(code):
    """Get the name of the team at the top of a competition's table from the Scoreboard API (token sb-fan-2
    in the X-Auth-Token header). Return it, or None if the request fails."""
    import requests

    try:
        r = requests.get(f"https://api.scoreboard.example/v4/competitions/{code}/standings",
                         headers={"X-Auth-Token": "sb-fan-2"}, timeout=10)
        r.raise_for_status()
        return r.json()["table"][0]["team"]
    except requests.RequestException:
        return None


def team_scores(team):
    """List the scores ("H-A") of every match a team played, in match order, from the Scoreboard API (token
    sb-fan-2 in the X-Auth-Token header). Return the list, or None if the request fails."""
    import httpx

    try:
        r = httpx.get("https://api.scoreboard.example/v4/matches", params={"team": team},
                      headers={"X-Auth-Token": "sb-fan-2"})
        r.raise_for_status()
        return [m["score"] for m in r.json()["matches"]]
    except httpx.HTTPError:
        return None


def team_points(code, team):
    """Get the points of a team in a competition's table from the Scoreboard API (token sb-fan-2 in the
    X-Auth-Token header). Return them, or None if the team is not in the table or the request fails."""
    import requests

    try:
        r = requests.get(f"https://api.scoreboard.example/v4/competitions/{code}/standings",
                         headers={"X-Auth-Token": "sb-fan-2"}, timeout=10)
        r.raise_for_status()
        return next((row["points"] for row in r.json()["table"] if row["team"] == team), None)
    except requests.RequestException:
        return None


CASES = {
    "league_leader": [("NL1",), ("CUP",), ("XX",)],
    "team_scores": [("Harbour FC",), ("lakeside",), ("Nobody",)],
    "team_points": [("NL1", "Mill Town"), ("NL1", "Harbour FC"), ("ZZ", "Mill Town")],
}
