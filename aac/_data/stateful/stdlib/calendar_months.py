"""A month calendar with a chosen first weekday (calendar.Calendar): new(firstweekday) sets which day starts a
week, 0 for Monday to 6 for Sunday; {weeks}(year, month) returns the month as a list of weeks, each a list of 7
day numbers with 0 for days outside the month; {set_first}(day) changes the first weekday and returns it;
{weekday_names}() returns the two-letter names of the days in week order; {days_in}(year, month) returns the
number of days of the month (calendar.IllegalMonthError for a month outside 1-12)."""
import calendar


class MonthCalendar:
    def __init__(self, firstweekday):
        self.cal = calendar.Calendar(firstweekday)

    def weeks(self, year, month):
        return self.cal.monthdayscalendar(year, month)

    def set_first(self, day):
        self.cal.setfirstweekday(day)
        return self.cal.getfirstweekday()

    def weekday_names(self):
        return [calendar.day_abbr[d][:2] for d in self.cal.iterweekdays()]

    def days_in(self, year, month):
        return calendar.monthrange(year, month)[1]


SEEDS = [
    [("new", (0,)), ("weekday_names", ()), ("days_in", (2024, 2))],
    [("new", (6,)), ("weeks", (2024, 3)), ("set_first", (2,)), ("weekday_names", ())],
    [("new", (0,)), ("days_in", (2023, 13)), ("set_first", (9,))],
]
