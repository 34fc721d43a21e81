"""Libris, a library loans API at https://api.libris.example. Every request needs the header X-Api-Key:
lb-desk-3 (401 otherwise). Members M1-M3 and books B1-B5 exist; M2 already has B3 on loan (loan L1, due
2024-05-20). A member may hold at most 3 loans.
GET /members/{member_id}/loans returns {"member", "loans": [{"id", "book", "due"}, ...]} in loan order;
an unknown member is a 404.
POST /loans with a JSON body {"member": id, "book": id} lends a book for 21 days from 2024-05-01 and
answers 201 {"id" (L2, L3, ...), "member", "book", "due": "2024-05-22"}; a book already on loan is a 409, a
member at the limit a 409, an unknown member or book a 404.
POST /loans/{loan_id}/return (no body) ends a loan and answers {"id", "returned": true, "late_days"}:
returns happen on 2024-05-25, so late_days counts the days past due (0 if none); an unknown or ended loan
is a 404."""

from aac.sandbox.web_service import HTTPError, Service

api = Service("api.libris.example", key_header="X-Api-Key", key="lb-desk-3")

MEMBERS = ("M1", "M2", "M3")
BOOKS = ("B1", "B2", "B3", "B4", "B5")
LOANS = {"L1": {"id": "L1", "member": "M2", "book": "B3", "due": "2024-05-20"}}
COUNTER = [2]


@api.route("GET", "/members/{member_id}/loans")
def member_loans(member_id):
    if member_id not in MEMBERS:
        raise HTTPError(404, f"no member {member_id}")
    return {"member": member_id, "loans": [{"id": k, "book": v["book"], "due": v["due"]}
                                           for k, v in LOANS.items() if v["member"] == member_id]}


@api.route("POST", "/loans")
def lend(member, book):
    if member not in MEMBERS or book not in BOOKS:
        raise HTTPError(404, f"unknown {'member' if member not in MEMBERS else 'book'}")
    if any(v["book"] == book for v in LOANS.values()):
        raise HTTPError(409, f"{book} is already on loan")
    if sum(v["member"] == member for v in LOANS.values()) >= 3:
        raise HTTPError(409, f"{member} already has 3 loans")
    loan = {"id": f"L{COUNTER[0]}", "member": member, "book": book, "due": "2024-05-22"}
    COUNTER[0] += 1
    LOANS[loan["id"]] = loan
    return 201, dict(loan)


@api.route("POST", "/loans/{loan_id}/return")
def give_back(loan_id):
    if loan_id not in LOANS:
        raise HTTPError(404, f"no open loan {loan_id}")
    due_day = int(LOANS.pop(loan_id)["due"][-2:])
    return {"id": loan_id, "returned": True, "late_days": max(0, 25 - due_day)}


EXAMPLES = [
    ("GET", "/members/M2/loans", None, {"X-Api-Key": "lb-desk-3"}),
    ("POST", "/loans", {"member": "M1", "book": "B1"}, {"X-Api-Key": "lb-desk-3"}),
]


def borrow(member, book):
    """Lend a book to a library member with the Libris API (key lb-desk-3 in the X-Api-Key header). Return
    the due date of the new loan, or None if the loan is refused or the request fails."""
    import requests

    try:
        r = requests.post("https://api.libris.example/loans", json={"member": member, "book": book},
                          headers={"X-Api-Key": "lb-desk-3"}, timeout=10)
        r.raise_for_status()
        return r.json()["due"]
    except requests.RequestException:
        return None


def late_days(loan_id):
    """Return a Libris loan (key lb-desk-3 in the X-Api-Key header) and report how many days late it was.
    Return the number of days, or None if the request fails."""
    import httpx

    try:
        r = httpx.post(f"https://api.libris.example/loans/{loan_id}/return", headers={"X-Api-Key": "lb-desk-3"})
        r.raise_for_status()
        return r.json()["late_days"]
    except httpx.HTTPError:
        return None


def books_on_loan(member):
    """List the book ids a Libris member has on loan (key lb-desk-3 in the X-Api-Key header). Return the
    list, or None if the member is unknown or the request fails."""
    import requests

    try:
        r = requests.get(f"https://api.libris.example/members/{member}/loans", headers={"X-Api-Key": "lb-desk-3"},
                         timeout=10)
        r.raise_for_status()
        return [loan["book"] for loan in r.json()["loans"]]
    except requests.RequestException:
        return None


CASES = {
    "borrow": [("M3", "B2"), ("M1", "B3"), ("M7", "B1")],
    "late_days": [("L1",), ("L4",)],
    "books_on_loan": [("M2",), ("M3",), ("M0",)],
}
