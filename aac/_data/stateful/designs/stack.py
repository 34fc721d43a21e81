"""A last-in first-out stack: new() makes it empty; {push}(x) puts x on top and returns the size; {pop}()
removes and returns the top item (IndexError when empty); {peek}() returns the top item without removing it
(IndexError when empty); {size}() returns the number of items; {is_empty}() says whether there are none."""


class Stack:
    def __init__(self):
        self.items = []

    def push(self, x):
        self.items.append(x)
        return len(self.items)

    def pop(self):
        if not self.items:
            raise IndexError("pop from an empty stack")
        return self.items.pop()

    def peek(self):
        if not self.items:
            raise IndexError("peek at an empty stack")
        return self.items[-1]

    def size(self):
        return len(self.items)

    def is_empty(self):
        return not self.items


SEEDS = [
    [("new", ()), ("push", (1,)), ("push", (2,)), ("pop", ()), ("peek", ())],
    [("new", ()), ("is_empty", ()), ("pop", ()), ("push", ("a",)), ("size", ())],
]
