"""A warehouse inventory: new() is empty; {receive}(item, n) adds n units (a positive n, else ValueError) and
returns the stock of item; {ship}(item, n) removes n units and returns the stock left (ValueError when fewer than n
are in stock, which is then unchanged); {stock}(item) returns the units of item (0 when unknown); {low}(threshold)
returns, sorted, the items whose stock is below threshold (items received at least once, shipped out to 0
included)."""


class Inventory:
    def __init__(self):
        self.units = {}

    def receive(self, item, n):
        if n <= 0:
            raise ValueError("n must be positive")
        self.units[item] = self.units.get(item, 0) + n
        return self.units[item]

    def ship(self, item, n):
        have = self.units.get(item, 0)
        if n > have:
            raise ValueError(f"only {have} in stock")
        self.units[item] = have - n
        return self.units[item]

    def stock(self, item):
        return self.units.get(item, 0)

    def low(self, threshold):
        return sorted(k for k, v in self.units.items() if v < threshold)


SEEDS = [
    [("new", ()), ("receive", ("bolt", 10)), ("ship", ("bolt", 4)), ("stock", ("bolt",)), ("low", (7,))],
    [("new", ()), ("ship", ("nut", 1)), ("receive", ("nut", -2)), ("stock", ("nut",))],
]
