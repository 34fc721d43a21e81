"""A seeded pseudo-random generator (random.Random(seed), Mersenne Twister): new(seed) seeds it; {randint}(a, b)
returns the next integer N with a <= N <= b (ValueError when a > b); {choice}(seq) returns the next random
element of a non-empty sequence (IndexError when empty); {shuffled}(items) returns a shuffled copy of the list;
{uniform}() returns the next float in [0, 1) rounded to 6 places; {reseed}(seed) restarts the stream from a
seed. The same seed always gives the same stream."""
import random


class SeededRandom:
    def __init__(self, seed):
        self.rng = random.Random(seed)

    def randint(self, a, b):
        return self.rng.randint(a, b)

    def choice(self, seq):
        return self.rng.choice(seq)

    def shuffled(self, items):
        out = list(items)
        self.rng.shuffle(out)
        return out

    def uniform(self):
        return round(self.rng.random(), 6)

    def reseed(self, seed):
        self.rng.seed(seed)
        return seed


SEEDS = [
    [("new", (42,)), ("randint", (1, 6)), ("randint", (1, 6)), ("uniform", ())],
    [("new", (0,)), ("choice", ("abc",)), ("shuffled", ([1, 2, 3, 4],))],
    [("new", (7,)), ("uniform", ()), ("reseed", (7,)), ("uniform", ()), ("randint", (5, 1))],
]
