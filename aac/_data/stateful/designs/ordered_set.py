"""A set that remembers insertion order: new() makes it empty; {add}(x) adds x at the end unless present and returns
True when it was added; {discard}(x) removes x if present and returns the size; {contains}(x) says whether x is in
the set; {pop_first}() removes and returns the oldest element (KeyError when empty); {items}() returns the elements
in insertion order."""


class OrderedSet:
    def __init__(self):
        self.data = {}

    def add(self, x):
        if x in self.data:
            return False
        self.data[x] = None
        return True

    def discard(self, x):
        self.data.pop(x, None)
        return len(self.data)

    def contains(self, x):
        return x in self.data

    def pop_first(self):
        if not self.data:
            raise KeyError("pop from an empty set")
        first = next(iter(self.data))
        del self.data[first]
        return first

    def items(self):
        return list(self.data)


SEEDS = [
    [("new", ()), ("add", (3,)), ("add", (1,)), ("add", (3,)), ("items", ())],
    [("new", ()), ("pop_first", ()), ("add", ("b",)), ("contains", ("b",)), ("discard", ("b",))],
]
