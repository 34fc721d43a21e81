"""An action guard with a cooldown on a logical clock: new(cooldown) allows the action again only cooldown time
units after it last fired; {trigger}(now) fires at time now and returns True when the action has never fired or at
least cooldown units passed since it last fired, else returns False (and does not fire); {remaining}(now) returns
how long until it may fire again (0 when it may fire now); {fired}() returns how many times it fired."""


class Cooldown:
    def __init__(self, cooldown):
        self.cooldown = cooldown
        self.last = None
        self.count = 0

    def trigger(self, now):
        if self.last is None or now - self.last >= self.cooldown:
            self.last = now
            self.count += 1
            return True
        return False

    def remaining(self, now):
        if self.last is None:
            return 0
        return max(0, self.cooldown - (now - self.last))

    def fired(self):
        return self.count


SEEDS = [
    [("new", (5,)), ("trigger", (0,)), ("trigger", (3,)), ("remaining", (3,)), ("trigger", (5,))],
    [("new", (2,)), ("remaining", (0,)), ("trigger", (10,)), ("fired", ())],
]
