"""Orders: lines of (sku, quantity, unit price) and the life of an order."""


def line_total(line):
    """The amount of one order line (sku, quantity, unit_price), rounded to cents."""
    sku, quantity, unit_price = line
    return round(quantity * unit_price, 2)


def merge_lines(pairs):
    """Merge (sku, quantity) pairs into one quantity per SKU; a pair with a quantity of 0 or less
    is skipped. Returns the SKUs and totals as a dict in the order first seen."""
    totals = {}
    for sku, quantity in pairs:
        if quantity <= 0:
            continue
        totals[sku] = totals.get(sku, 0) + quantity
    return totals


class Order:
    """An order moving from "open" to "placed" to "shipped", or "cancelled" before it ships.
    Lines can be added only while it is open; an illegal move raises RuntimeError."""

    def __init__(self, customer):
        self.customer = customer
        self.lines = []
        self.status = "open"

    def add_line(self, sku, quantity, unit_price):
        """Add a line; returns the number of lines."""
        if self.status != "open":
            raise RuntimeError(f"order is {self.status}")
        self.lines.append((sku, quantity, unit_price))
        return len(self.lines)

    def total(self):
        """The order's amount, rounded to cents."""
        return round(sum(q * p for _, q, p in self.lines), 2)

    def place(self):
        """Place an open order with at least one line; returns the new status."""
        if self.status != "open" or not self.lines:
            raise RuntimeError("only an open order with lines can be placed")
        self.status = "placed"
        return self.status

    def ship(self):
        """Ship a placed order; returns the new status."""
        if self.status != "placed":
            raise RuntimeError(f"cannot ship an order that is {self.status}")
        self.status = "shipped"
        return self.status

    def cancel(self):
        """Cancel an order that has not shipped; returns the new status."""
        if self.status == "shipped":
            raise RuntimeError("a shipped order cannot be cancelled")
        self.status = "cancelled"
        return self.status


class Coupon:
    """A coupon taking percent off an amount of at least minimum, usable uses times."""

    def __init__(self, percent, minimum=0, uses=1):
        self.percent = percent
        self.minimum = minimum
        self.left = uses

    def apply(self, amount):
        """The amount after the coupon (unchanged below the minimum or once used up)."""
        if amount < self.minimum or self.left <= 0:
            return amount
        self.left -= 1
        return round(amount * (100 - self.percent) / 100, 2)
