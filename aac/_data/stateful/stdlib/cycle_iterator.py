"""An endless round-robin over a list (itertools.cycle): new(items) starts at the first item; {next}() returns
the current item and moves on, wrapping around after the last (StopIteration when items is empty); {take}(k)
returns the next k items as a list; {skip}(k) moves k items ahead and returns how many items have been handed
out or skipped in all."""
import itertools


class RoundRobin:
    def __init__(self, items):
        self.it = itertools.cycle(list(items))
        self.used = 0

    def next(self):
        value = next(self.it)
        self.used += 1
        return value

    def take(self, k):
        out = list(itertools.islice(self.it, k))
        self.used += len(out)
        return out

    def skip(self, k):
        for _ in range(k):
            next(self.it)
            self.used += 1
        return self.used


SEEDS = [
    [("new", (["a", "b", "c"],)), ("next", ()), ("next", ()), ("take", (3,))],
    [("new", ([1, 2],)), ("skip", (3,)), ("next", ())],
    [("new", ([],)), ("next", ()), ("take", (2,))],
]
