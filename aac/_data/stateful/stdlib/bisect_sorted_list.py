"""A list kept in sorted order (bisect): new() makes it empty; {add}(x) inserts x after any equal items and
returns its index; {remove}(x) removes one occurrence of x (ValueError when absent) and returns the size;
{count_below}(x) returns how many items are less than x; {count_range}(lo, hi) returns how many items are
>= lo and <= hi; {items}() returns the items in increasing order."""
import bisect


class SortedList:
    def __init__(self):
        self.data = []

    def add(self, x):
        i = bisect.bisect_right(self.data, x)
        self.data.insert(i, x)
        return i

    def remove(self, x):
        i = bisect.bisect_left(self.data, x)
        if i == len(self.data) or self.data[i] != x:
            raise ValueError(f"{x!r} not in list")
        del self.data[i]
        return len(self.data)

    def count_below(self, x):
        return bisect.bisect_left(self.data, x)

    def count_range(self, lo, hi):
        return max(0, bisect.bisect_right(self.data, hi) - bisect.bisect_left(self.data, lo))

    def items(self):
        return list(self.data)


SEEDS = [
    [("new", ()), ("add", (5,)), ("add", (1,)), ("add", (3,)), ("items", ())],
    [("new", ()), ("add", (2,)), ("add", (2,)), ("count_below", (3,)), ("remove", (4,))],
    [("new", ()), ("add", (10,)), ("add", (20,)), ("add", (30,)), ("count_range", (15, 30)), ("remove", (20,)),
     ("items", ())],
]
