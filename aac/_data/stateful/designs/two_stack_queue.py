"""A first-in first-out queue (kept as two stacks): new() makes it empty; {enqueue}(x) adds x at the back and
returns the size; {dequeue}() removes and returns the front item (IndexError when empty); {front}() returns the
front item without removing it (IndexError when empty); {size}() returns the number of items."""


class Queue:
    def __init__(self):
        self.inbox = []
        self.outbox = []

    def _shift(self):
        if not self.outbox:
            while self.inbox:
                self.outbox.append(self.inbox.pop())
        if not self.outbox:
            raise IndexError("the queue is empty")

    def enqueue(self, x):
        self.inbox.append(x)
        return len(self.inbox) + len(self.outbox)

    def dequeue(self):
        self._shift()
        return self.outbox.pop()

    def front(self):
        self._shift()
        return self.outbox[-1]

    def size(self):
        return len(self.inbox) + len(self.outbox)


SEEDS = [
    [("new", ()), ("enqueue", (1,)), ("enqueue", (2,)), ("dequeue", ()), ("front", ())],
    [("new", ()), ("dequeue", ()), ("enqueue", ("x",)), ("size", ())],
]
