"""Summary statistics of the numbers added so far (the statistics module): new() starts with none; {add}(x)
adds x and returns how many there are; {mean}() returns the arithmetic mean rounded to 4 places; {median}()
returns the median (the mean of the middle two for an even count); {stdev}() returns the sample standard
deviation rounded to 4 places (needs at least two numbers); {mode}() returns the most common number (the first
seen on ties). Each raises statistics.StatisticsError when there are too few numbers."""
import statistics


class RunningStats:
    def __init__(self):
        self.xs = []

    def add(self, x):
        self.xs.append(x)
        return len(self.xs)

    def mean(self):
        return round(statistics.mean(self.xs), 4)

    def median(self):
        return statistics.median(self.xs)

    def stdev(self):
        return round(statistics.stdev(self.xs), 4)

    def mode(self):
        return statistics.mode(self.xs)


SEEDS = [
    [("new", ()), ("add", (1,)), ("add", (2,)), ("add", (4,)), ("mean", ()), ("median", ())],
    [("new", ()), ("mean", ()), ("add", (3,)), ("stdev", ())],
    [("new", ()), ("add", (2.5,)), ("add", (2.5,)), ("add", (7,)), ("mode", ()), ("stdev", ())],
]
