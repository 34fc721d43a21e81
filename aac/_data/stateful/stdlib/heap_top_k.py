"""The k largest numbers seen (a heapq min-heap of size k): new(k) keeps up to k numbers; {offer}(x) considers x
and returns True when it is now among the kept ones (it replaces the smallest kept number when k are kept and x
is larger); {top}() returns the kept numbers from largest to smallest; {threshold}() returns the smallest kept
number when k are kept, else None."""
import heapq


class TopK:
    def __init__(self, k):
        self.k = k
        self.heap = []

    def offer(self, x):
        if len(self.heap) < self.k:
            heapq.heappush(self.heap, x)
            return True
        if self.heap and x > self.heap[0]:
            heapq.heapreplace(self.heap, x)
            return True
        return False

    def top(self):
        return sorted(self.heap, reverse=True)

    def threshold(self):
        return self.heap[0] if len(self.heap) == self.k and self.heap else None


SEEDS = [
    [("new", (2,)), ("offer", (5,)), ("offer", (1,)), ("offer", (3,)), ("top", ())],
    [("new", (3,)), ("offer", (4,)), ("threshold", ()), ("offer", (9,)), ("offer", (2,)), ("threshold", ())],
    [("new", (0,)), ("offer", (1,)), ("top", ())],
]
