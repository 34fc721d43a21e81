"""A least-recently-used cache of at most `capacity` entries (built on collections.OrderedDict): new(capacity);
{get}(key) returns the value stored under key and marks it most recently used, or -1 when the key is absent;
{put}(key, value) stores value under key (marking it most recent) and, when that makes more than capacity
entries, evicts the least recently used one; it returns the evicted key, or None; {keys}() returns the keys
from least to most recently used."""
import collections


class LRUCache:
    def __init__(self, capacity):
        self.capacity = capacity
        self.data = collections.OrderedDict()

    def get(self, key):
        if key not in self.data:
            return -1
        self.data.move_to_end(key)
        return self.data[key]

    def put(self, key, value):
        self.data[key] = value
        self.data.move_to_end(key)
        if len(self.data) > self.capacity:
            oldest, _ = self.data.popitem(last=False)
            return oldest
        return None

    def keys(self):
        return list(self.data)


SEEDS = [
    [("new", (2,)), ("put", (1, "a")), ("put", (2, "b")), ("get", (1,)), ("put", (3, "c")), ("keys", ())],
    [("new", (1,)), ("put", ("x", 10)), ("get", ("y",)), ("put", ("y", 20)), ("get", ("x",))],
    [("new", (3,)), ("put", (5, 5)), ("put", (6, 6)), ("put", (5, 50)), ("get", (5,)), ("keys", ())],
]
