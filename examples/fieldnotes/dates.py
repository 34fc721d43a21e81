"""Calendar arithmetic on the proleptic Gregorian calendar, without the datetime module."""

_MONTH_DAYS = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
_WEEKDAYS = ("Saturday", "Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday")


def is_leap_year(year):
    """Whether a year is a leap year: divisible by 4, except centuries not divisible by 400.

    >>> is_leap_year(1900)
    False
    """
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


def days_in_month(year, month):
    """The number of days in a month (1-12) of a year, February having 29 in leap years; a month
    outside 1-12 raises ValueError.

    >>> days_in_month(2024, 2)
    29
    """
    if not 1 <= month <= 12:
        raise ValueError("month must be 1-12")
    return 29 if month == 2 and is_leap_year(year) else _MONTH_DAYS[month - 1]


def day_of_year(year, month, day):
    """The ordinal day of the year of a date, 1 for January 1st.

    >>> day_of_year(2023, 3, 1)
    60
    """
    if not 1 <= day <= days_in_month(year, month):
        raise ValueError("no such day")
    return sum(days_in_month(year, m) for m in range(1, month)) + day


def weekday_name(year, month, day):
    """The English name of the weekday of a date (Zeller's congruence).

    >>> weekday_name(2000, 1, 1)
    'Saturday'
    """
    if month < 3:
        month, year = month + 12, year - 1
    k, j = year % 100, year // 100
    h = (day + (13 * (month + 1)) // 5 + k + k // 4 + j // 4 + 5 * j) % 7
    return _WEEKDAYS[h]


def add_days(date, days):
    """Add a whole number of days (negative goes back) to an ISO date "YYYY-MM-DD" and return the new
    date in the same form.

    >>> add_days("2024-02-27", 3)
    '2024-03-01'
    """
    year, month, day = (int(part) for part in date.split("-"))
    day += days
    while day > days_in_month(year, month):
        day -= days_in_month(year, month)
        month, year = (1, year + 1) if month == 12 else (month + 1, year)
    while day < 1:
        month, year = (12, year - 1) if month == 1 else (month - 1, year)
        day += days_in_month(year, month)
    return f"{year:04d}-{month:02d}-{day:02d}"
