"""A bank account: new(balance) opens it with that balance (ValueError when negative); {deposit}(amount) adds a
positive amount and returns the balance (ValueError for an amount <= 0); {withdraw}(amount) takes a positive
amount out and returns the balance (ValueError for an amount <= 0 or more than the balance, which is then
unchanged); {balance}() returns the balance; {transactions}() returns the number of successful deposits and
withdrawals."""


class BankAccount:
    def __init__(self, balance):
        if balance < 0:
            raise ValueError("opening balance must not be negative")
        self.balance_ = balance
        self.count = 0

    def deposit(self, amount):
        if amount <= 0:
            raise ValueError("deposit must be positive")
        self.balance_ += amount
        self.count += 1
        return self.balance_

    def withdraw(self, amount):
        if amount <= 0:
            raise ValueError("withdrawal must be positive")
        if amount > self.balance_:
            raise ValueError("insufficient funds")
        self.balance_ -= amount
        self.count += 1
        return self.balance_

    def balance(self):
        return self.balance_

    def transactions(self):
        return self.count


SEEDS = [
    [("new", (100,)), ("deposit", (50,)), ("withdraw", (30,)), ("balance", ())],
    [("new", (10,)), ("withdraw", (20,)), ("deposit", (0,)), ("transactions", ())],
    [("new", (-5,)), ("new", (0,)), ("deposit", (2.5,)), ("withdraw", (2.5,)), ("transactions", ())],
]
