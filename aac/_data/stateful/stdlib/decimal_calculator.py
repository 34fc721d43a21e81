"""A decimal calculator with a fixed precision (decimal.Decimal in a local context of `precision` significant
digits, ROUND_HALF_EVEN): new(precision) starts at 0; {add}(number) adds, {divide}(number) divides by and
{multiply}(number) multiplies by the decimal written in the string number, each returning the rounded result
as a string (decimal.InvalidOperation for text that is no number, decimal.DivisionByZero for dividing a
non-zero value by zero); {value}() returns the value as a string; {quantize}(places) returns the value rounded
to that many decimal places, as a string."""
import decimal


class DecimalCalculator:
    def __init__(self, precision):
        self.ctx = decimal.Context(prec=precision, traps=[decimal.InvalidOperation, decimal.DivisionByZero])
        self.value_ = decimal.Decimal(0)

    def add(self, number):
        self.value_ = self.ctx.add(self.value_, decimal.Decimal(number))
        return str(self.value_)

    def divide(self, number):
        self.value_ = self.ctx.divide(self.value_, decimal.Decimal(number))
        return str(self.value_)

    def multiply(self, number):
        self.value_ = self.ctx.multiply(self.value_, decimal.Decimal(number))
        return str(self.value_)

    def value(self):
        return str(self.value_)

    def quantize(self, places):
        return str(self.value_.quantize(decimal.Decimal(1).scaleb(-places), context=self.ctx))


SEEDS = [
    [("new", (4,)), ("add", ("1",)), ("divide", ("3",)), ("value", ())],
    [("new", (10,)), ("add", ("2.5",)), ("multiply", ("4",)), ("quantize", (2,))],
    [("new", (3,)), ("add", ("7",)), ("divide", ("0",)), ("add", ("abc",))],
]
