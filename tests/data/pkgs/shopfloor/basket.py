"""The customer's basket at the till."""

from .pricing import price_with_vat

CODES = {"SPRING10": 10, "STAFF25": 25}


class Basket:
    """A customer's basket: lines of SKUs with a unit price and a quantity, at most one discount code,
    and totals with VAT."""

    def __init__(self, vat_rate=20):
        """A new empty basket whose totals add vat_rate percent VAT."""
        self.vat_rate = vat_rate
        self.lines = {}
        self.code = None

    def add(self, sku, unit_price, quantity=1):
        """Put quantity units of sku at unit_price in the basket (adding to a line already there, whose
        price is kept); returns the number of units of that sku now in the basket."""
        if quantity < 1:
            raise ValueError("quantity must be at least 1")
        price, held = self.lines.get(sku, (unit_price, 0))
        self.lines[sku] = (price, held + quantity)
        return held + quantity

    def remove(self, sku, quantity=1):
        """Take quantity units of sku out; the line goes when none is left. Returns the units left;
        a sku not in the basket raises KeyError."""
        price, held = self.lines[sku]
        left = held - quantity
        if left > 0:
            self.lines[sku] = (price, left)
        else:
            del self.lines[sku]
            left = 0
        return left

    def apply_code(self, code):
        """Use a discount code (SPRING10 takes 10% off, STAFF25 25%); returns whether it was accepted.
        A basket takes one code: a second one is refused."""
        if self.code is not None or code.upper() not in CODES:
            return False
        self.code = code.upper()
        return True

    def subtotal(self):
        """The sum of price times quantity over the lines, before discount and VAT."""
        return round(sum(price * held for price, held in self.lines.values()), 2)

    def total(self):
        """The amount to pay: the subtotal less the code's discount, plus VAT."""
        net = self.subtotal() * (100 - CODES.get(self.code, 0)) / 100
        return price_with_vat(net, self.vat_rate)

    def item_count(self):
        """The number of units in the basket, all lines together."""
        return sum(held for _, held in self.lines.values())
