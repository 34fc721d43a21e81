"""A shopping cart: new() makes it empty; {add}(item, quantity, unit_price) adds quantity units of item (a positive
quantity, else ValueError; the unit price of a later add of the same item replaces the earlier one) and returns the
number of distinct items; {remove}(item, quantity) takes up to quantity units of item out (KeyError when it is not in
the cart; the item goes when none is left) and returns the units left of it; {total}() returns the sum of quantity
times unit price, rounded to 2 places; {discount}(percent) returns the total after that percent off, rounded to 2
places, without changing the cart (ValueError outside 0-100)."""


class Cart:
    def __init__(self):
        self.lines = {}

    def add(self, item, quantity, unit_price):
        if quantity <= 0:
            raise ValueError("quantity must be positive")
        held = self.lines.get(item, (0, unit_price))[0]
        self.lines[item] = (held + quantity, unit_price)
        return len(self.lines)

    def remove(self, item, quantity):
        held, price = self.lines[item]
        left = max(0, held - quantity)
        if left:
            self.lines[item] = (left, price)
        else:
            del self.lines[item]
        return left

    def total(self):
        return round(sum(q * p for q, p in self.lines.values()), 2)

    def discount(self, percent):
        if not 0 <= percent <= 100:
            raise ValueError("percent must be within 0-100")
        return round(self.total() * (100 - percent) / 100, 2)


SEEDS = [
    [("new", ()), ("add", ("apple", 3, 0.5)), ("add", ("pear", 1, 2.0)), ("total", ()), ("discount", (10,))],
    [("new", ()), ("add", ("pen", 2, 1.25)), ("remove", ("pen", 1)), ("remove", ("pen", 5)), ("remove", ("pen", 1))],
    [("new", ()), ("add", ("x", 0, 1.0)), ("discount", (150,))],
]
