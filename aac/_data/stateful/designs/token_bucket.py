"""A token-bucket rate limiter on a logical clock: new(capacity, rate) starts full with capacity tokens, refilled
at rate tokens per time unit up to capacity; {allow}(now, cost) first refills for the time elapsed since the last
call (a time earlier than the last one counts as no time) and then, if at least cost tokens are there, takes them
and returns True, else returns False; {tokens}(now) refills the same way and returns the tokens available,
rounded to 3 places."""


class TokenBucket:
    def __init__(self, capacity, rate):
        self.capacity = capacity
        self.rate = rate
        self.level = capacity
        self.last = None

    def _refill(self, now):
        if self.last is not None and now > self.last:
            self.level = min(self.capacity, self.level + (now - self.last) * self.rate)
        if self.last is None or now > self.last:
            self.last = now

    def allow(self, now, cost):
        self._refill(now)
        if self.level >= cost:
            self.level -= cost
            return True
        return False

    def tokens(self, now):
        self._refill(now)
        return round(self.level, 3)


SEEDS = [
    [("new", (3, 1)), ("allow", (0, 2)), ("allow", (0, 2)), ("allow", (2, 2)), ("tokens", (2,))],
    [("new", (1, 0.5)), ("allow", (10, 1)), ("tokens", (11,)), ("tokens", (5,))],
]
