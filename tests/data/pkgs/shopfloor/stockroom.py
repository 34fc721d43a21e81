"""Stock on hand and reservations for orders being packed."""


class OutOfStock(Exception):
    """Raised when a reservation asks for more units than are free."""


class Stockroom:
    """Units on hand per SKU, part of them held by numbered reservations until they are shipped or
    released."""

    def __init__(self, capacity=500):
        self.capacity = capacity
        self.on_hand = {}
        self.held = {}
        self.next_id = 1

    def receive(self, sku, units):
        """Book units of sku into the stockroom; refused with ValueError when the room would hold more
        than its capacity. Returns the units of sku on hand."""
        if units <= 0:
            raise ValueError("units must be positive")
        if sum(self.on_hand.values()) + units > self.capacity:
            raise ValueError("over capacity")
        self.on_hand[sku] = self.on_hand.get(sku, 0) + units
        return self.on_hand[sku]

    def free(self, sku):
        """Units of sku on hand and not held by a reservation."""
        held = sum(n for s, n in self.held.values() if s == sku)
        return self.on_hand.get(sku, 0) - held

    def reserve(self, sku, units):
        """Hold units of sku for an order and return the reservation's number (1, 2, ...); OutOfStock
        when fewer are free."""
        if units > self.free(sku):
            raise OutOfStock(sku)
        number = self.next_id
        self.next_id += 1
        self.held[number] = (sku, units)
        return number

    def release(self, number):
        """Cancel a reservation, freeing its units; returns the units freed (KeyError for an unknown number)."""
        sku, units = self.held.pop(number)
        return units

    def ship(self, number):
        """Ship a reservation: its units leave the stockroom. Returns the units of its sku still on hand."""
        sku, units = self.held.pop(number)
        self.on_hand[sku] -= units
        return self.on_hand[sku]
