"""Textline, an SMS API at https://api.textline.example. Every request needs the header X-Auth-Token:
txl-acct-5 (401 otherwise). Phone numbers are E.164: a + and 8 to 15 digits. The account owns the sender
numbers +15550100 and +15550199.
POST /v1/messages with a JSON body {"to", "from", "body"} sends a message and answers 201 {"sid" (SM1,
SM2, ...), "to", "from", "status": "sent", "segments"}: segments = the body's length divided by 160,
rounded up. A malformed number is a 422; a from number the account does not own is a 403; an empty body or
one over 480 characters is a 422.
GET /v1/messages/{sid} returns the message (with its body); an unknown sid is a 404.
GET /v1/messages?to=NUMBER lists {"messages": [...], "count"} sent to that number, in sid order (all
messages when to is absent)."""

import re

from aac.sandbox.web_service import HTTPError, Service

api = Service("api.textline.example", key_header="X-Auth-Token", key="txl-acct-5")

OWNED = ("+15550100", "+15550199")
MESSAGES = {}


def _number(value):
    if not re.fullmatch(r"\+\d{8,15}", value):
        raise HTTPError(422, f"invalid phone number {value}")
    return value


@api.route("POST", "/v1/messages")
def send(to, from_, body):
    _number(to)
    _number(from_)
    if from_ not in OWNED:
        raise HTTPError(403, f"the account does not own {from_}")
    if not 1 <= len(body) <= 480:
        raise HTTPError(422, "body must have 1 to 480 characters")
    sid = f"SM{len(MESSAGES) + 1}"
    MESSAGES[sid] = {"sid": sid, "to": to, "from": from_, "status": "sent", "segments": -(-len(body) // 160),
                     "body": body}
    return 201, {k: v for k, v in MESSAGES[sid].items() if k != "body"}


@api.route("GET", "/v1/messages/{sid}")
def get_message(sid):
    if sid not in MESSAGES:
        raise HTTPError(404, f"no message {sid}")
    return dict(MESSAGES[sid])


@api.route("GET", "/v1/messages")
def list_messages(to=None):
    rows = [dict(m) for m in MESSAGES.values() if to is None or m["to"] == to]
    return {"messages": rows, "count": len(rows)}


EXAMPLES = [
    ("POST", "/v1/messages", {"to": "+447700900123", "from": "+15550100", "body": "Your code is 4411"},
     {"X-Auth-Token": "txl-acct-5"}),
    ("GET", "/v1/messages/SM1", None, {"X-Auth-Token": "txl-acct-5"}),
]


def send_sms(to, text):
    """Send a text message to a phone number from the sender number +15550100 with the Textline API (token
    txl-acct-5 in the X-Auth-Token header). Return the message's sid, or None if the request fails."""
    import requests

    try:
        r = requests.post("https://api.textline.example/v1/messages",
                          json={"to": to, "from": "+15550100", "body": text},
                          headers={"X-Auth-Token": "txl-acct-5"}, timeout=10)
        r.raise_for_status()
        return r.json()["sid"]
    except requests.RequestException:
        return None


def segment_count(text):
    """Send a text to +4915112345678 from the sender +15550199 with the Textline API (token txl-acct-5 in the
    X-Auth-Token header) and return how many SMS segments it took, or None if the request fails."""
    import httpx

    try:
        r = httpx.post("https://api.textline.example/v1/messages",
                       json={"to": "+4915112345678", "from": "+15550199", "body": text},
                       headers={"X-Auth-Token": "txl-acct-5"})
        r.raise_for_status()
        return r.json()["segments"]
    except httpx.HTTPError:
        return None


CASES = {
    "send_sms": [("+33612345678", "See you at 8"), ("+1555", "hi"), ("+4915112345678", "")],
    "segment_count": [("The plumber will arrive between nine and eleven tomorrow morning. Please leave the side gate "
                       "open and keep the dog inside. Call this number if the time no longer suits you.",), ("ok",),
                      ("",)],
}
