"""A singly linked list: new() makes it empty; {append}(x) adds x at the end and {prepend}(x) at the front, each
returning the length; {remove}(x) unlinks the first node holding x and returns True, or returns False when there is
none; {index}(x) returns the position of the first x (ValueError when absent); {reverse}() reverses the list in
place and returns its items; {items}() returns the items front to back."""


class LinkedList:
    def __init__(self):
        self.head = None
        self.length = 0

    def append(self, x):
        node = [x, None]
        if self.head is None:
            self.head = node
        else:
            cur = self.head
            while cur[1] is not None:
                cur = cur[1]
            cur[1] = node
        self.length += 1
        return self.length

    def prepend(self, x):
        self.head = [x, self.head]
        self.length += 1
        return self.length

    def remove(self, x):
        prev, cur = None, self.head
        while cur is not None:
            if cur[0] == x:
                if prev is None:
                    self.head = cur[1]
                else:
                    prev[1] = cur[1]
                self.length -= 1
                return True
            prev, cur = cur, cur[1]
        return False

    def index(self, x):
        cur, i = self.head, 0
        while cur is not None:
            if cur[0] == x:
                return i
            cur, i = cur[1], i + 1
        raise ValueError(f"{x!r} is not in the list")

    def reverse(self):
        prev, cur = None, self.head
        while cur is not None:
            cur[1], prev, cur = prev, cur, cur[1]
        self.head = prev
        return self.items()

    def items(self):
        out, cur = [], self.head
        while cur is not None:
            out.append(cur[0])
            cur = cur[1]
        return out


SEEDS = [
    [("new", ()), ("append", (1,)), ("append", (2,)), ("prepend", (0,)), ("items", ())],
    [("new", ()), ("append", ("a",)), ("append", ("b",)), ("remove", ("a",)), ("index", ("a",)), ("reverse", ())],
]
