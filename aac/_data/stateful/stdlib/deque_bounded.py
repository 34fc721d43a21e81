"""A double-ended queue of at most `capacity` items (collections.deque with maxlen): new(capacity) makes it
empty; {push_right}(x) and {push_left}(x) add x at one end and, when full, silently drop the item at the
other end, returning the current length; {pop_right}() and {pop_left}() remove and return an end item
(IndexError when empty); {rotate}(n) rotates the items n steps to the right (left for negative n);
{items}() returns the items from left to right."""
import collections


class BoundedDeque:
    def __init__(self, capacity):
        self.items_ = collections.deque(maxlen=capacity)

    def push_right(self, x):
        self.items_.append(x)
        return len(self.items_)

    def push_left(self, x):
        self.items_.appendleft(x)
        return len(self.items_)

    def pop_right(self):
        return self.items_.pop()

    def pop_left(self):
        return self.items_.popleft()

    def rotate(self, n):
        self.items_.rotate(n)
        return list(self.items_)

    def items(self):
        return list(self.items_)


SEEDS = [
    [("new", (3,)), ("push_right", (1,)), ("push_right", (2,)), ("push_left", (0,)), ("items", ())],
    [("new", (2,)), ("push_right", ("a",)), ("push_right", ("b",)), ("push_right", ("c",)), ("pop_left", ())],
    [("new", (4,)), ("push_right", (5,)), ("push_right", (6,)), ("rotate", (1,)), ("pop_right", ()),
     ("pop_right", ()), ("pop_left", ())],
]
