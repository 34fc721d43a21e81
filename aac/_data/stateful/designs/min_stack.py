"""A stack that knows its minimum: new() makes it empty; {push}(x) puts x on top and returns the current minimum;
{pop}() removes and returns the top item (IndexError when empty); {minimum}() returns the smallest item on the stack
(IndexError when empty); {top}() returns the top item (IndexError when empty)."""


class MinStack:
    def __init__(self):
        self.items = []
        self.mins = []

    def push(self, x):
        self.items.append(x)
        self.mins.append(x if not self.mins else min(x, self.mins[-1]))
        return self.mins[-1]

    def pop(self):
        if not self.items:
            raise IndexError("pop from an empty stack")
        self.mins.pop()
        return self.items.pop()

    def minimum(self):
        if not self.mins:
            raise IndexError("the stack is empty")
        return self.mins[-1]

    def top(self):
        if not self.items:
            raise IndexError("the stack is empty")
        return self.items[-1]


SEEDS = [
    [("new", ()), ("push", (3,)), ("push", (1,)), ("push", (2,)), ("pop", ()), ("pop", ()), ("minimum", ())],
    [("new", ()), ("minimum", ()), ("push", (5,)), ("top", ())],
]
