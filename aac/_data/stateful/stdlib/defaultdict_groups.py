"""A grouping of values by key (collections.defaultdict(list)): new() makes it empty; {add}(key, value)
appends value to the key's group and returns the group's size; {group}(key) returns the key's values in the
order added (an empty list for an unseen key, which then counts as a key); {keys}() returns the keys in first-
seen order; {pop_group}(key) removes and returns the key's group (KeyError when absent); {largest}() returns
the key with the most values (the first such key), or None when there are no keys."""
import collections


class Groups:
    def __init__(self):
        self.groups = collections.defaultdict(list)

    def add(self, key, value):
        self.groups[key].append(value)
        return len(self.groups[key])

    def group(self, key):
        return list(self.groups[key])

    def keys(self):
        return list(self.groups)

    def pop_group(self, key):
        return self.groups.pop(key)

    def largest(self):
        if not self.groups:
            return None
        return max(self.groups, key=lambda k: len(self.groups[k]))


SEEDS = [
    [("new", ()), ("add", ("a", 1)), ("add", ("b", 2)), ("add", ("a", 3)), ("group", ("a",))],
    [("new", ()), ("group", ("z",)), ("keys", ()), ("largest", ())],
    [("new", ()), ("add", ("x", "p")), ("pop_group", ("x",)), ("pop_group", ("x",)), ("largest", ())],
]
