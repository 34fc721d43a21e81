"""fieldnotes: a small private utility library (text, units, dates), written for aac's worked example
(docs/byo.md). Pure Python, no I/O: every public function can be called alone in aac's sandbox."""

from fieldnotes.dates import add_days, day_of_year, days_in_month, is_leap_year, weekday_name
from fieldnotes.text import initials, mask_email, slugify, title_case, wrap_words
from fieldnotes.units import clamp_percent, convert_length, format_duration, parse_size, to_fahrenheit

__all__ = ["add_days", "clamp_percent", "convert_length", "day_of_year", "days_in_month", "format_duration",
           "initials", "is_leap_year", "mask_email", "parse_size", "slugify", "title_case", "to_fahrenheit",
           "weekday_name", "wrap_words"]
