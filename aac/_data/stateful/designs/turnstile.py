"""A coin-operated turnstile (a finite-state machine): new() starts 'locked'; {coin}() unlocks it and returns the
state ('unlocked'), a coin while already unlocked counting as a donation; {push}() lets one person through when
unlocked (locking it again) and returns 'passed', or returns 'blocked' when locked; {state}() returns the state;
{stats}() returns [people passed, coins inserted, pushes blocked]."""


class Turnstile:
    def __init__(self):
        self.locked = True
        self.passed = 0
        self.coins = 0
        self.blocked = 0

    def coin(self):
        self.coins += 1
        self.locked = False
        return "unlocked"

    def push(self):
        if self.locked:
            self.blocked += 1
            return "blocked"
        self.locked = True
        self.passed += 1
        return "passed"

    def state(self):
        return "locked" if self.locked else "unlocked"

    def stats(self):
        return [self.passed, self.coins, self.blocked]


SEEDS = [
    [("new", ()), ("push", ()), ("coin", ()), ("push", ()), ("state", ())],
    [("new", ()), ("coin", ()), ("coin", ()), ("push", ()), ("push", ()), ("stats", ())],
]
