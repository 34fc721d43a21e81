"""An incremental SHA-256 hasher (hashlib.sha256): new() starts an empty message; {update}(text) appends the
UTF-8 bytes of text and returns the total number of bytes fed; {digest}() returns the first 16 hex digits of
the SHA-256 of everything fed so far (feeding may go on afterwards); {reset}() starts over with an empty
message and returns 0."""
import hashlib


class Hasher:
    def __init__(self):
        self.h = hashlib.sha256()
        self.n = 0

    def update(self, text):
        data = text.encode("utf-8")
        self.h.update(data)
        self.n += len(data)
        return self.n

    def digest(self):
        return self.h.hexdigest()[:16]

    def reset(self):
        self.h = hashlib.sha256()
        self.n = 0
        return 0


SEEDS = [
    [("new", ()), ("update", ("abc",)), ("digest", ())],
    [("new", ()), ("digest", ()), ("update", ("a",)), ("update", ("bc",)), ("digest", ())],
    [("new", ()), ("update", ("héllo",)), ("reset", ()), ("digest", ())],
]
