"""The average of the last `size` numbers (a collections.deque window): new(size) makes the window; {add}(x)
adds x, dropping the oldest number when the window is full, and returns the average of the window rounded to
4 places; {window}() returns the numbers in the window, oldest first; {clear}() empties it and returns 0."""
import collections


class MovingAverage:
    def __init__(self, size):
        self.window_ = collections.deque(maxlen=size)

    def add(self, x):
        self.window_.append(x)
        return round(sum(self.window_) / len(self.window_), 4)

    def window(self):
        return list(self.window_)

    def clear(self):
        self.window_.clear()
        return 0


SEEDS = [
    [("new", (3,)), ("add", (1,)), ("add", (10,)), ("add", (3,)), ("add", (5,)), ("window", ())],
    [("new", (1,)), ("add", (2.5,)), ("add", (4,)), ("clear", ()), ("window", ())],
    [("new", (0,)), ("add", (1,))],
]
