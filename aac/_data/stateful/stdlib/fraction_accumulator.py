"""An exact rational accumulator (fractions.Fraction): new(numerator, denominator) starts at that fraction
(ZeroDivisionError for a zero denominator); {add}(n, d) adds n/d, {multiply}(n, d) multiplies by n/d and
{subtract}(n, d) subtracts n/d, each returning the value in lowest terms as the string 'p/q' (or 'p' when it
is whole); {value}() returns that string; {limit}(max_denominator) returns the closest fraction with a
denominator at most max_denominator, as a string, without changing the value; {to_float}() returns the value
as a float rounded to 6 places."""
import fractions


class FractionAccumulator:
    def __init__(self, numerator, denominator):
        self.value_ = fractions.Fraction(numerator, denominator)

    def add(self, n, d):
        self.value_ += fractions.Fraction(n, d)
        return str(self.value_)

    def multiply(self, n, d):
        self.value_ *= fractions.Fraction(n, d)
        return str(self.value_)

    def subtract(self, n, d):
        self.value_ -= fractions.Fraction(n, d)
        return str(self.value_)

    def value(self):
        return str(self.value_)

    def limit(self, max_denominator):
        return str(self.value_.limit_denominator(max_denominator))

    def to_float(self):
        return round(float(self.value_), 6)


SEEDS = [
    [("new", (1, 2)), ("add", (1, 3)), ("multiply", (3, 1)), ("value", ())],
    [("new", (3, 4)), ("subtract", (1, 4)), ("to_float", ())],
    [("new", (22, 7)), ("limit", (3,)), ("add", (1, 0)), ("value", ())],
]
