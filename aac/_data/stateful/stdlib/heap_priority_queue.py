"""A min-priority queue (heapq): new() makes it empty; {push}(item, priority) adds item with a numeric
priority and returns the size; {pop}() removes and returns the item of lowest priority, items of equal
priority in the order they were pushed (IndexError when empty); {peek}() returns that item without removing
it (IndexError when empty); {size}() returns the number of items."""
import heapq


class PriorityQueue:
    def __init__(self):
        self.heap = []
        self.counter = 0

    def push(self, item, priority):
        heapq.heappush(self.heap, (priority, self.counter, item))
        self.counter += 1
        return len(self.heap)

    def pop(self):
        if not self.heap:
            raise IndexError("pop from an empty queue")
        return heapq.heappop(self.heap)[2]

    def peek(self):
        if not self.heap:
            raise IndexError("peek at an empty queue")
        return self.heap[0][2]

    def size(self):
        return len(self.heap)


SEEDS = [
    [("new", ()), ("push", ("a", 3)), ("push", ("b", 1)), ("push", ("c", 2)), ("pop", ()), ("pop", ())],
    [("new", ()), ("push", ("x", 5)), ("push", ("y", 5)), ("peek", ()), ("size", ())],
    [("new", ()), ("pop", ()), ("push", ("z", -1)), ("peek", ())],
]
