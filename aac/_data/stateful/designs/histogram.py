"""A histogram with fixed-width bins: new(width) sets the bin width (ValueError unless positive); {add}(x) counts x
in the bin floor(x / width) and returns that bin's index; {bins}() returns [bin start, count] pairs for the
non-empty bins in increasing order, where a bin's start is index * width; {count}(x) returns the count of the bin
that x falls in; {mode_bin}() returns the start of the fullest bin, the lowest on ties (None when empty)."""
import math


class Histogram:
    def __init__(self, width):
        if width <= 0:
            raise ValueError("width must be positive")
        self.width = width
        self.counts = {}

    def add(self, x):
        i = math.floor(x / self.width)
        self.counts[i] = self.counts.get(i, 0) + 1
        return i

    def bins(self):
        return [[i * self.width, c] for i, c in sorted(self.counts.items())]

    def count(self, x):
        return self.counts.get(math.floor(x / self.width), 0)

    def mode_bin(self):
        if not self.counts:
            return None
        best = min(self.counts, key=lambda i: (-self.counts[i], i))
        return best * self.width


SEEDS = [
    [("new", (10,)), ("add", (3,)), ("add", (15,)), ("add", (7,)), ("bins", ()), ("mode_bin", ())],
    [("new", (0.5,)), ("add", (-0.2,)), ("count", (-0.4,)), ("mode_bin", ())],
    [("new", (0,)), ("new", (2,)), ("mode_bin", ())],
]
