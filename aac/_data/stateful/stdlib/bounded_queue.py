"""A FIFO queue with a size limit (queue.Queue(maxsize)): new(maxsize) makes it empty (a maxsize of 0 or less
means no limit); {put}(item) appends item without waiting and returns the size (queue.Full when the queue is
full); {get}() removes and returns the oldest item (queue.Empty when empty); {size}() returns the number of
items; {full}() says whether a put would fail."""
import queue


class BoundedQueue:
    def __init__(self, maxsize):
        self.q = queue.Queue(maxsize)

    def put(self, item):
        self.q.put_nowait(item)
        return self.q.qsize()

    def get(self):
        return self.q.get_nowait()

    def size(self):
        return self.q.qsize()

    def full(self):
        return self.q.full()


SEEDS = [
    [("new", (2,)), ("put", ("a",)), ("put", ("b",)), ("full", ()), ("put", ("c",)), ("get", ())],
    [("new", (0,)), ("get", ()), ("put", (1,)), ("size", ())],
]
