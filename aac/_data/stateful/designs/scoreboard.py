"""A game scoreboard: new() has no players; {score}(player, points) adds points to the player's total (new players
start at 0) and returns the total; {leader}() returns the player with the highest total, the earliest to reach it
on ties (None with no players); {rank}(player) returns the player's 1-based place, players with equal totals
sharing the best place (KeyError for an unknown player); {standings}() returns [player, total] pairs from highest
to lowest total, ties in alphabetical order."""


class Scoreboard:
    def __init__(self):
        self.totals = {}
        self.reached = {}
        self.clock = 0

    def score(self, player, points):
        self.totals[player] = self.totals.get(player, 0) + points
        self.clock += 1
        self.reached[player] = self.clock
        return self.totals[player]

    def leader(self):
        if not self.totals:
            return None
        return min(self.totals, key=lambda p: (-self.totals[p], self.reached[p]))

    def rank(self, player):
        mine = self.totals[player]
        return 1 + sum(t > mine for t in self.totals.values())

    def standings(self):
        return [[p, t] for p, t in sorted(self.totals.items(), key=lambda kv: (-kv[1], kv[0]))]


SEEDS = [
    [("new", ()), ("score", ("ann", 3)), ("score", ("bob", 5)), ("leader", ()), ("rank", ("ann",))],
    [("new", ()), ("leader", ()), ("score", ("z", 1)), ("score", ("a", 1)), ("standings", ()), ("rank", ("q",))],
]
