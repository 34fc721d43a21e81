"""Quickpoll, a polling API at https://api.quickpoll.example (no authentication). Poll 1 exists: "Best
season?" with options spring, summer, autumn, winter and votes 3, 5, 2, 1.
POST /polls with a JSON body {"question", "options": list of 2 to 6 distinct strings} answers 201 {"id"
(2, 3, ...), "question", "options"}; fewer than 2, more than 6 or repeated options are a 422.
POST /polls/{poll_id}/votes with {"option": one of the poll's options} counts a vote and answers 201
{"poll", "option", "votes": that option's new count}; another option is a 422.
GET /polls/{poll_id}/results returns {"poll", "question", "total", "results": [{"option", "votes",
"percent"}, ...]} in option order, percent of the total rounded to 1 decimal (0.0 with no votes), and
"leader": the option with most votes (the first one on a tie; null with no votes).
Poll ids are integers; an unknown poll is a 404."""

from aac.sandbox.web_service import HTTPError, Service

api = Service("api.quickpoll.example")

POLLS = {1: {"question": "Best season?", "votes": {"spring": 3, "summer": 5, "autumn": 2, "winter": 1}}}


def _poll(poll_id):
    if poll_id not in POLLS:
        raise HTTPError(404, f"no poll {poll_id}")
    return POLLS[poll_id]


@api.route("POST", "/polls", options=list)
def create(question, options):
    if not 2 <= len(options) <= 6 or len(set(map(str, options))) != len(options):
        raise HTTPError(422, "options must be 2 to 6 distinct strings")
    poll_id = max(POLLS) + 1
    POLLS[poll_id] = {"question": question, "votes": {str(o): 0 for o in options}}
    return 201, {"id": poll_id, "question": question, "options": [str(o) for o in options]}


@api.route("POST", "/polls/{poll_id}/votes", poll_id=int)
def vote(poll_id, option):
    poll = _poll(poll_id)
    if option not in poll["votes"]:
        raise HTTPError(422, f"option must be one of: {', '.join(poll['votes'])}")
    poll["votes"][option] += 1
    return 201, {"poll": poll_id, "option": option, "votes": poll["votes"][option]}


@api.route("GET", "/polls/{poll_id}/results", poll_id=int)
def results(poll_id):
    poll = _poll(poll_id)
    total = sum(poll["votes"].values())
    rows = [{"option": o, "votes": v, "percent": round(100 * v / total, 1) if total else 0.0}
            for o, v in poll["votes"].items()]
    leader = max(poll["votes"], key=lambda o: poll["votes"][o]) if total else None
    return {"poll": poll_id, "question": poll["question"], "total": total, "results": rows, "leader": leader}


EXAMPLES = [
    ("GET", "/polls/1/results"),
    ("POST", "/polls/1/votes", {"option": "winter"}),
]


def poll_leader(poll_id):
    """Get the leading option of a Quickpoll poll. Return it, or None if the poll has no votes or the request
    fails."""
    import requests

    try:
        r = requests.get(f"https://api.quickpoll.example/polls/{poll_id}/results", timeout=10)
        r.raise_for_status()
        return r.json()["leader"]
    except requests.RequestException:
        return None


def cast_vote(poll_id, option):
    """Vote for an option of a Quickpoll poll. Return the option's new vote count, or None if the vote is
    refused or the request fails."""
    import httpx

    try:
        r = httpx.post(f"https://api.quickpoll.example/polls/{poll_id}/votes", json={"option": option})
        r.raise_for_status()
        return r.json()["votes"]
    except httpx.HTTPError:
        return None


def open_poll(question, options):
    """Create a Quickpoll poll with a question and a list of options. Return the new poll's id, or None if
    the service refuses or the request fails."""
    import requests

    try:
        r = requests.post("https://api.quickpoll.example/polls", json={"question": question, "options": options},
                          timeout=10)
        r.raise_for_status()
        return r.json()["id"]
    except requests.RequestException:
        return None


CASES = {
    "poll_leader": [(1,), (4,)],
    "cast_vote": [(1, "autumn"), (1, "summer"), (1, "monsoon"), (8, "spring")],
    "open_poll": [("Tea or coffee?", ["tea", "coffee"]), ("Pick one", ["a"]), ("Dup?", ["x", "x"])],
}
