"""A vending machine: new(prices) takes a dict from item name to price in cents; {insert}(cents) adds credit and
returns the credit (ValueError unless cents is one of 5, 10, 25, 100); {select}(item) sells item when the credit
covers its price, returning the change and resetting the credit to 0 (KeyError for an unknown item, ValueError
when the credit is short); {refund}() returns the credit and sets it to 0; {sold}() returns the number of items
sold."""


class VendingMachine:
    COINS = (5, 10, 25, 100)

    def __init__(self, prices):
        self.prices = dict(prices)
        self.credit = 0
        self.count = 0

    def insert(self, cents):
        if cents not in self.COINS:
            raise ValueError(f"coin {cents} not accepted")
        self.credit += cents
        return self.credit

    def select(self, item):
        price = self.prices[item]
        if self.credit < price:
            raise ValueError(f"insert {price - self.credit} more")
        change, self.credit = self.credit - price, 0
        self.count += 1
        return change

    def refund(self):
        out, self.credit = self.credit, 0
        return out

    def sold(self):
        return self.count


SEEDS = [
    [("new", ({"cola": 125, "gum": 35},)), ("insert", (100,)), ("insert", (25,)), ("select", ("cola",))],
    [("new", ({"tea": 50},)), ("insert", (3,)), ("insert", (25,)), ("select", ("tea",)), ("refund", ()),
     ("sold", ())],
    [("new", ({"a": 5},)), ("select", ("b",)), ("insert", (10,)), ("select", ("a",)), ("sold", ())],
]
