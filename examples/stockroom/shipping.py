"""Parcels and what they cost to send."""


def parse_dimensions(text):
    """Read dimensions written as "20x30x10" (centimetres, spaces allowed) into a tuple of three
    numbers; anything else gives None."""
    parts = [p.strip() for p in text.lower().split("x")]
    if len(parts) != 3:
        return None
    try:
        return tuple(float(p) for p in parts)
    except ValueError:
        return None


def box_volume(box):
    """The volume in litres of a box given as (width, height, depth) in centimetres."""
    width, height, depth = box
    return width * height * depth / 1000


def fits(inner, outer):
    """Whether a box (w, h, d) fits into another, turned any way."""
    return all(a <= b for a, b in zip(sorted(inner), sorted(outer)))


class RateTable:
    """Shipping prices by weight: each band is (up to kg, price); heavier than the last band costs
    the last price plus per_kg for each started kilogram above it."""

    def __init__(self, per_kg=1.5):
        self.bands = []
        self.per_kg = per_kg

    def add_band(self, up_to, price):
        """Add a band; bands are kept sorted by weight. Returns the number of bands."""
        self.bands.append((up_to, price))
        self.bands.sort()
        return len(self.bands)

    def price(self, weight):
        """The price of sending weight kg (KeyError without bands)."""
        if not self.bands:
            raise KeyError("no bands")
        for up_to, price in self.bands:
            if weight <= up_to:
                return price
        last, price = self.bands[-1]
        extra = int(weight - last) + (weight - last > int(weight - last))
        return round(price + extra * self.per_kg, 2)


class Parcel:
    """A parcel being packed: items of a weight are added up to a maximum weight."""

    def __init__(self, max_weight=20.0):
        self.max_weight = max_weight
        self.items = []

    def pack(self, name, weight):
        """Pack an item; returns the parcel's weight. An item that would go over the maximum raises
        ValueError and is not packed."""
        if self.weight() + weight > self.max_weight:
            raise ValueError("too heavy")
        self.items.append((name, weight))
        return self.weight()

    def weight(self):
        """The total weight packed."""
        return round(sum(w for _, w in self.items), 3)

    def unpack(self, name):
        """Take out the first item of that name; returns whether there was one."""
        for i, (n, _) in enumerate(self.items):
            if n == name:
                del self.items[i]
                return True
        return False
