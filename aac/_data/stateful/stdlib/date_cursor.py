"""A calendar date that moves (datetime.date): new(year, month, day) sets it (ValueError for an impossible
date); {add_days}(n) moves n days forward (backward for negative n) and returns the ISO date 'YYYY-MM-DD';
{weekday}() returns the day of the week, 0 for Monday to 6 for Sunday; {next_month}() moves to the same day of
the next month, clamped to that month's last day, and returns the ISO date; {days_until}(year, month, day)
returns the number of days from the current date to that date (negative when it is earlier); {iso}() returns
the ISO date."""
import calendar
import datetime


class DateCursor:
    def __init__(self, year, month, day):
        self.date = datetime.date(year, month, day)

    def add_days(self, n):
        self.date += datetime.timedelta(days=n)
        return self.date.isoformat()

    def weekday(self):
        return self.date.weekday()

    def next_month(self):
        year, month = divmod(self.date.year * 12 + self.date.month, 12)
        if month == 0:
            year, month = year - 1, 12
        day = min(self.date.day, calendar.monthrange(year, month)[1])
        self.date = datetime.date(year, month, day)
        return self.date.isoformat()

    def days_until(self, year, month, day):
        return (datetime.date(year, month, day) - self.date).days

    def iso(self):
        return self.date.isoformat()


SEEDS = [
    [("new", (2024, 1, 31)), ("next_month", ()), ("weekday", ())],
    [("new", (2023, 12, 25)), ("add_days", (10,)), ("days_until", (2024, 3, 1))],
    [("new", (2023, 2, 30)), ("new", (2020, 2, 29)), ("add_days", (-366,)), ("iso", ())],
]
