"""A key-value store with nested transactions: new() makes it empty; {set}(key, value) stores value; {get}(key)
returns the value (None when absent); {begin}() opens a transaction and returns the nesting depth; {rollback}()
undoes every set since the innermost open begin and returns the depth left (RuntimeError when no transaction is
open); {commit}() closes all open transactions, keeping their changes, and returns 0 (RuntimeError when none is
open)."""


class Store:
    def __init__(self):
        self.data = {}
        self.saved = []

    def set(self, key, value):
        self.data[key] = value
        return value

    def get(self, key):
        return self.data.get(key)

    def begin(self):
        self.saved.append(dict(self.data))
        return len(self.saved)

    def rollback(self):
        if not self.saved:
            raise RuntimeError("no transaction")
        self.data = self.saved.pop()
        return len(self.saved)

    def commit(self):
        if not self.saved:
            raise RuntimeError("no transaction")
        self.saved = []
        return 0


SEEDS = [
    [("new", ()), ("set", ("k", 3)), ("get", ("k",)), ("get", ("j",))],
    [("new", ()), ("begin", ()), ("begin", ()), ("commit", ())],
    [("new", ()), ("set", ("a", 1)), ("begin", ()), ("set", ("a", 2)), ("rollback", ()), ("get", ("a",))],
    [("new", ()), ("begin", ()), ("set", ("x", 5)), ("commit", ()), ("rollback", ()), ("get", ("x",))],
]
