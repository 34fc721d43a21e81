"""Paybridge, a payments API at https://api.paybridge.example. Every request needs the header
Authorization: Bearer sk_test_9f2 (401 without it or with another key). Amounts are integers in the
currency's smallest unit (cents). There is one existing charge, ch_1001 (2500 usd, succeeded).
POST /v1/charges with a JSON body {"amount": int >= 50, "currency": "usd"|"eur"|"gbp", "source": token,
"description": optional text} creates a charge and answers 201 with {"id", "amount", "currency", "status",
"refunded": 0}; ids continue ch_1002, ch_1003, ... The source tok_visa succeeds (status "succeeded");
tok_declined gives a 402-like refusal: the charge is created with status "failed"; another source is a 422.
An amount under 50 is a 422.
GET /v1/charges/{charge_id} returns the charge; an unknown id is a 404.
POST /v1/refunds with {"charge": id, "amount": int (optional: the rest)} refunds part or all of a succeeded
charge and answers 201 with {"id" (re_1, re_2, ...), "charge", "amount"}; more than what is left, or a
failed charge, is a 422; an unknown charge a 404."""

from aac.sandbox.web_service import HTTPError, OneOf, Range, Service

api = Service("api.paybridge.example", key_header="Authorization", key="sk_test_9f2", bearer=True)

CHARGES = {"ch_1001": {"id": "ch_1001", "amount": 2500, "currency": "usd", "status": "succeeded", "refunded": 0}}
COUNTERS = {"charge": 1002, "refund": 1}
SOURCES = {"tok_visa": "succeeded", "tok_declined": "failed"}


def _charge(charge_id):
    if charge_id not in CHARGES:
        raise HTTPError(404, f"no such charge: {charge_id}")
    return CHARGES[charge_id]


@api.route("POST", "/v1/charges", amount=Range(50, None), currency=OneOf("usd", "eur", "gbp"))
def create_charge(amount, currency, source, description=""):
    if source not in SOURCES:
        raise HTTPError(422, f"unknown source {source}")
    charge = {"id": f"ch_{COUNTERS['charge']}", "amount": amount, "currency": currency,
              "status": SOURCES[source], "refunded": 0}
    COUNTERS["charge"] += 1
    CHARGES[charge["id"]] = charge
    return 201, dict(charge)


@api.route("GET", "/v1/charges/{charge_id}")
def get_charge(charge_id):
    return dict(_charge(charge_id))


@api.route("POST", "/v1/refunds", amount=Range(1, None))
def refund(charge, amount=None):
    found = _charge(charge)
    left = found["amount"] - found["refunded"]
    if found["status"] != "succeeded":
        raise HTTPError(422, "only a succeeded charge can be refunded")
    amount = left if amount is None else amount
    if amount > left or amount == 0:
        raise HTTPError(422, f"at most {left} can be refunded")
    found["refunded"] += amount
    refund_id = f"re_{COUNTERS['refund']}"
    COUNTERS["refund"] += 1
    return 201, {"id": refund_id, "charge": charge, "amount": amount}


EXAMPLES = [
    ("GET", "/v1/charges/ch_1001", None, {"Authorization": "Bearer sk_test_9f2"}),
    ("POST", "/v1/charges", {"amount": 1200, "currency": "eur", "source": "tok_visa"},
     {"Authorization": "Bearer sk_test_9f2"}),
]


def charge_card(amount, currency, token):
    """Charge a card token for an amount in cents in a currency with the Paybridge API (secret key
    sk_test_9f2, sent as a bearer token). Return the charge's status ("succeeded" or "failed"), or None if
    the request fails."""
    import requests

    try:
        r = requests.post("https://api.paybridge.example/v1/charges",
                          json={"amount": amount, "currency": currency, "source": token},
                          headers={"Authorization": "Bearer sk_test_9f2"}, timeout=10)
        r.raise_for_status()
        return r.json()["status"]
    except requests.RequestException:
        return None


def refund_amount(charge_id, amount):
    """Refund part of a Paybridge charge (secret key sk_test_9f2 as a bearer token). Return the amount the
    service refunded, or None if the refund is refused or the request fails."""
    import httpx

    try:
        r = httpx.post("https://api.paybridge.example/v1/refunds", json={"charge": charge_id, "amount": amount},
                       headers={"Authorization": "Bearer sk_test_9f2"})
        if r.status_code != 201:
            return None
        return r.json()["amount"]
    except httpx.HTTPError:
        return None


def charge_status(charge_id):
    """Get the status of a Paybridge charge by its id (secret key sk_test_9f2 as a bearer token). Return
    the status, or None if the charge is unknown or the request fails."""
    import requests

    try:
        r = requests.get(f"https://api.paybridge.example/v1/charges/{charge_id}",
                         headers={"Authorization": "Bearer sk_test_9f2"}, timeout=10)
        r.raise_for_status()
        return r.json()["status"]
    except requests.RequestException:
        return None


CASES = {
    "charge_card": [(5000, "usd", "tok_visa"), (990, "gbp", "tok_declined"), (20, "usd", "tok_visa"),
                    (700, "yen", "tok_visa")],
    "refund_amount": [("ch_1001", 500), ("ch_1001", 2500), ("ch_0000", 10)],
    "charge_status": [("ch_1001",), ("ch_9",)],
}
