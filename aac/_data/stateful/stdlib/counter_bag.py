"""A multiset of counts (collections.Counter): new() makes it empty; {add}(item, n) adds n to the count of
item and returns the new count; {subtract}(item, n) subtracts n (counts may go to zero or below) and returns
the new count; {count}(item) returns the count (0 for an unseen item); {most_common}(k) returns the k
[item, count] pairs with the highest counts, ties in first-added order; {total}() returns the sum of all
counts; {positive}() returns the items with a count above zero, in first-added order."""
import collections


class CounterBag:
    def __init__(self):
        self.counts = collections.Counter()

    def add(self, item, n):
        self.counts[item] += n
        return self.counts[item]

    def subtract(self, item, n):
        self.counts.subtract({item: n})
        return self.counts[item]

    def count(self, item):
        return self.counts[item]

    def most_common(self, k):
        return self.counts.most_common(k)

    def total(self):
        return self.counts.total()

    def positive(self):
        return list((+self.counts).keys())


SEEDS = [
    [("new", ()), ("add", ("a", 2)), ("add", ("b", 1)), ("add", ("a", 1)), ("most_common", (1,))],
    [("new", ()), ("add", ("x", 3)), ("subtract", ("x", 5)), ("count", ("x",)), ("positive", ())],
    [("new", ()), ("add", ("p", 1)), ("add", ("q", 4)), ("total", ()), ("count", ("z",)), ("most_common", (5,))],
]
