"""Postbox, a transactional e-mail API at https://api.postbox.example. Every request needs the header
X-Api-Key: pb-sk-12 (401 otherwise). At most 20 requests are served; after that 429 {"error": ...,
"retry_after": 60}. One message exists: msg_0 (delivered).
POST /v3/mail/send with a JSON body {"to": [addresses], "subject", "text", "from": optional address
(default noreply@postbox.example)} queues a message and answers 201 {"id" (msg_1, msg_2, ...),
"status": "queued", "recipients": n}. Each address needs one @ and a dot after it (else 422 naming it);
"to" must hold 1 to 5 addresses (else 422); an empty subject is a 422. Addresses ending in
@bounce.example make the message's status "bounced" instead.
GET /v3/messages/{message_id} returns {"id", "status", "to", "subject"}; an unknown id is a 404.
GET /v3/stats returns {"sent", "bounced"}: counts of the messages so far (msg_0 included)."""

import re

from aac.sandbox.web_service import HTTPError, Service

api = Service("api.postbox.example", key_header="X-Api-Key", key="pb-sk-12", rate_limit=20)

MESSAGES = {"msg_0": {"id": "msg_0", "status": "delivered", "to": ["ops@example.org"], "subject": "welcome"}}
NEXT = [1]


@api.route("POST", "/v3/mail/send", to=list)
def send(to, subject, text, from_="noreply@postbox.example"):
    if not 1 <= len(to) <= 5:
        raise HTTPError(422, "to must hold 1 to 5 addresses")
    for address in [*to, from_]:
        if not isinstance(address, str) or not re.fullmatch(r"[^@\s]+@[^@\s]+\.[^@\s]+", address):
            raise HTTPError(422, f"invalid address: {address}")
    if not subject.strip():
        raise HTTPError(422, "subject must not be empty")
    status = "bounced" if any(a.endswith("@bounce.example") for a in to) else "queued"
    message = {"id": f"msg_{NEXT[0]}", "status": status, "to": to, "subject": subject}
    NEXT[0] += 1
    MESSAGES[message["id"]] = message
    return 201, {"id": message["id"], "status": status, "recipients": len(to)}


@api.route("GET", "/v3/messages/{message_id}")
def message(message_id):
    if message_id not in MESSAGES:
        raise HTTPError(404, f"no message {message_id}")
    return dict(MESSAGES[message_id])


@api.route("GET", "/v3/stats")
def stats():
    return {"sent": len(MESSAGES), "bounced": sum(m["status"] == "bounced" for m in MESSAGES.values())}


EXAMPLES = [
    ("POST", "/v3/mail/send", {"to": ["kim@example.org"], "subject": "Hi", "text": "Hello Kim"},
     {"X-Api-Key": "pb-sk-12"}),
    ("GET", "/v3/messages/msg_0", None, {"X-Api-Key": "pb-sk-12"}),
]


def send_email(recipient, subject, text):
    """Send an e-mail to one recipient with the Postbox API (key pb-sk-12 in the X-Api-Key header). Return
    the new message's id, or None if the service refuses it or the request fails."""
    import requests

    try:
        r = requests.post("https://api.postbox.example/v3/mail/send",
                          json={"to": [recipient], "subject": subject, "text": text},
                          headers={"X-Api-Key": "pb-sk-12"}, timeout=10)
        r.raise_for_status()
        return r.json()["id"]
    except requests.RequestException:
        return None


def message_status(message_id):
    """Get the delivery status of a Postbox message by id (key pb-sk-12 in the X-Api-Key header). Return the
    status, or None if the message is unknown or the request fails."""
    import requests

    try:
        r = requests.get(f"https://api.postbox.example/v3/messages/{message_id}",
                         headers={"X-Api-Key": "pb-sk-12"}, timeout=10)
        r.raise_for_status()
        return r.json()["status"]
    except requests.RequestException:
        return None


def broadcast(recipients, subject):
    """Send one e-mail with a subject and a short text "See you there." to several recipients at once with
    the Postbox API (key pb-sk-12 in the X-Api-Key header). Return the status of the queued message, or None
    if the request fails."""
    import httpx

    try:
        r = httpx.post("https://api.postbox.example/v3/mail/send",
                       json={"to": recipients, "subject": subject, "text": "See you there."},
                       headers={"X-Api-Key": "pb-sk-12"})
        r.raise_for_status()
        return r.json()["status"]
    except httpx.HTTPError:
        return None


CASES = {
    "send_email": [("ana@example.org", "Invoice", "Attached."), ("bo@example.net", "", "x"),
                   ("not-an-address", "Hi", "x")],
    "message_status": [("msg_0",), ("msg_9",)],
    "broadcast": [(["a@example.org", "b@example.org"], "Party"), (["c@bounce.example"], "Party"), ([], "Party")],
}
