"""What is on the shelves and what it costs."""


def parse_sku(text):
    """Split a stock-keeping unit such as "TEA-042" into its family and number ("TEA", 42); a code
    without a dash, with an empty family or a number that is not a whole number gives None."""
    family, sep, number = text.strip().partition("-")
    if not sep or not family or not number.isdigit():
        return None
    return family.upper(), int(number)


class Inventory:
    """Quantities on hand per SKU. Adding a quantity that is not positive raises ValueError;
    removing more than is on hand raises ValueError and changes nothing."""

    def __init__(self):
        self.levels = {}

    def add(self, sku, quantity):
        """Put quantity units of sku on the shelf; returns the new level."""
        if quantity <= 0:
            raise ValueError("quantity must be positive")
        self.levels[sku] = self.levels.get(sku, 0) + quantity
        return self.levels[sku]

    def remove(self, sku, quantity):
        """Take quantity units of sku off the shelf; returns what is left (an SKU at 0 is forgotten)."""
        have = self.levels.get(sku, 0)
        if quantity > have:
            raise ValueError(f"only {have} of {sku} on hand")
        left = have - quantity
        if left:
            self.levels[sku] = left
        else:
            del self.levels[sku]
        return left

    def count(self, sku):
        """Units of sku on hand (0 for an unknown SKU)."""
        return self.levels.get(sku, 0)

    def low(self, threshold):
        """The SKUs with fewer than threshold units, sorted."""
        return sorted(s for s, n in self.levels.items() if n < threshold)


class PriceBook:
    """Unit prices per SKU, with a bulk discount: from bulk_from units on, each unit costs
    bulk_percent percent less. An unknown SKU raises KeyError."""

    def __init__(self, bulk_from=10, bulk_percent=5):
        self.prices = {}
        self.bulk_from = bulk_from
        self.bulk_percent = bulk_percent

    def set_price(self, sku, price):
        """Set the unit price of sku (a negative price raises ValueError)."""
        if price < 0:
            raise ValueError("negative price")
        self.prices[sku] = price

    def quote(self, sku, quantity):
        """The price of quantity units of sku, rounded to cents, the bulk discount applied."""
        total = self.prices[sku] * quantity
        if quantity >= self.bulk_from:
            total *= 1 - self.bulk_percent / 100
        return round(total, 2)
