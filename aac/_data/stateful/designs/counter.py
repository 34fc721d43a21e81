"""A counter: new(start) starts at start; {increment}() adds 1 and returns the value; {add}(n) adds n and returns
the value; {value}() returns the value; {reset}() goes back to the starting value and returns it."""


class Counter:
    def __init__(self, start):
        self.start = start
        self.n = start

    def increment(self):
        self.n += 1
        return self.n

    def add(self, n):
        self.n += n
        return self.n

    def value(self):
        return self.n

    def reset(self):
        self.n = self.start
        return self.n


SEEDS = [
    [("new", (0,)), ("increment", ()), ("increment", ()), ("value", ())],
    [("new", (10,)), ("add", (-3,)), ("reset", ())],
]
