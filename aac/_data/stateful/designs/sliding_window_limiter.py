"""A sliding-window rate limiter on a logical clock: new(limit, window) allows at most limit hits in any window
time units; {hit}(now) records a hit at time now and returns True when fewer than limit accepted hits happened in
(now - window, now], else returns False without recording it; {count}(now) returns the number of accepted hits in
(now - window, now]; {reset}() forgets every hit and returns 0."""


class SlidingWindowLimiter:
    def __init__(self, limit, window):
        self.limit = limit
        self.window = window
        self.hits = []

    def _recent(self, now):
        return [t for t in self.hits if now - self.window < t <= now]

    def hit(self, now):
        if len(self._recent(now)) < self.limit:
            self.hits.append(now)
            return True
        return False

    def count(self, now):
        return len(self._recent(now))

    def reset(self):
        self.hits = []
        return 0


SEEDS = [
    [("new", (1, 3)), ("hit", (0,)), ("hit", (2,)), ("hit", (3,))],
    [("new", (2, 10)), ("hit", (1,)), ("hit", (2,)), ("hit", (3,)), ("hit", (12,)), ("count", (12,))],
    [("new", (1, 5)), ("hit", (0,)), ("count", (4,)), ("reset", ()), ("hit", (1,))],
]
