"""A fixed-size ring buffer: new(capacity) makes it empty (ValueError for a capacity below 1); {write}(x) stores x,
overwriting the oldest item when full, and returns the overwritten item or None; {read}() removes and returns the
oldest item (IndexError when empty); {size}() returns the number of items; {snapshot}() returns the items oldest
first."""


class RingBuffer:
    def __init__(self, capacity):
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        self.slots = [None] * capacity
        self.start = 0
        self.count = 0

    def write(self, x):
        cap = len(self.slots)
        end = (self.start + self.count) % cap
        if self.count == cap:
            lost = self.slots[self.start]
            self.slots[self.start] = x
            self.start = (self.start + 1) % cap
            return lost
        self.slots[end] = x
        self.count += 1
        return None

    def read(self):
        if not self.count:
            raise IndexError("the buffer is empty")
        x = self.slots[self.start]
        self.start = (self.start + 1) % len(self.slots)
        self.count -= 1
        return x

    def size(self):
        return self.count

    def snapshot(self):
        return [self.slots[(self.start + k) % len(self.slots)] for k in range(self.count)]


SEEDS = [
    [("new", (2,)), ("write", (1,)), ("write", (2,)), ("write", (3,)), ("snapshot", ())],
    [("new", (3,)), ("read", ()), ("write", ("a",)), ("read", ()), ("size", ())],
    [("new", (0,)), ("new", (1,)), ("write", (5,)), ("write", (6,))],
]
