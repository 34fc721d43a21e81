"""Flagship, a feature flag API at https://api.flagship.example. Every request needs the header
Authorization: Bearer fs-env-prod (401 otherwise).
GET /v1/flags returns {"flags": [{"key", "enabled", "rollout"}, ...]} sorted by key.
GET /v1/flags/{key}/evaluate?user=ID tells whether the flag is on for a user: {"key", "user", "on"}: off
when the flag is disabled; otherwise on when the user's bucket is below the rollout percentage, the
bucket being the sum of the character codes of the user id modulo 100. An unknown flag is a 404; a missing
user a 400.
PUT /v1/flags/{key} with a JSON body {"enabled": bool, "rollout": int 0..100} creates or replaces a flag
and returns it (201 when new); a key that is not lower-case letters, digits and dashes is a 400; rollout
outside 0..100 is a 422."""

import re

from aac.sandbox.web_service import HTTPError, Range, Service

api = Service("api.flagship.example", key_header="Authorization", key="fs-env-prod", bearer=True)

FLAGS = {"dark-mode": [True, 100], "new-checkout": [True, 30], "beta-search": [False, 50]}


@api.route("GET", "/v1/flags")
def flags():
    return {"flags": [{"key": k, "enabled": e, "rollout": r} for k, (e, r) in sorted(FLAGS.items())]}


@api.route("GET", "/v1/flags/{key}/evaluate")
def evaluate(key, user):
    if key not in FLAGS:
        raise HTTPError(404, f"no flag {key}")
    enabled, rollout = FLAGS[key]
    return {"key": key, "user": user, "on": enabled and sum(map(ord, user)) % 100 < rollout}


@api.route("PUT", "/v1/flags/{key}", enabled=bool, rollout=Range(0, 100))
def put(key, enabled, rollout):
    if not re.fullmatch(r"[a-z0-9-]+", key):
        raise HTTPError(400, "flag keys are lower-case letters, digits and dashes")
    status = 200 if key in FLAGS else 201
    FLAGS[key] = [enabled, rollout]
    return status, {"key": key, "enabled": enabled, "rollout": rollout}


EXAMPLES = [
    ("GET", "/v1/flags", None, {"Authorization": "Bearer fs-env-prod"}),
    ("GET", "/v1/flags/new-checkout/evaluate", {"user": "u-17"}, {"Authorization": "Bearer fs-env-prod"}),
]


def flag_on(key, user):
    """Ask Flagship whether a feature flag is on for a user id (bearer token fs-env-prod). Return True or
    False, or None if the flag is unknown or the request fails."""
    import requests

    try:
        r = requests.get(f"https://api.flagship.example/v1/flags/{key}/evaluate", params={"user": user},
                         headers={"Authorization": "Bearer fs-env-prod"}, timeout=10)
        r.raise_for_status()
        return r.json()["on"]
    except requests.RequestException:
        return None


def set_rollout(key, percent):
    """Enable a Flagship feature flag for a rollout percentage (bearer token fs-env-prod), creating it if
    needed. Return the rollout the service stored, or None if the request fails."""
    import httpx

    try:
        r = httpx.put(f"https://api.flagship.example/v1/flags/{key}", json={"enabled": True, "rollout": percent},
                      headers={"Authorization": "Bearer fs-env-prod"})
        r.raise_for_status()
        return r.json()["rollout"]
    except httpx.HTTPError:
        return None


CASES = {
    "flag_on": [("dark-mode", "alice"), ("new-checkout", "bob"), ("beta-search", "carol"), ("nope", "dan")],
    "set_rollout": [("new-checkout", 75), ("fast-export", 10), ("Bad_Key", 5), ("dark-mode", 150)],
}
