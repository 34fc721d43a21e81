"""Quantities written by hand in field notes: sizes, durations, temperatures, lengths."""

_SIZE_FACTORS = {"": 1, "k": 1024, "m": 1024 ** 2, "g": 1024 ** 3}
_METERS = {"mm": 0.001, "cm": 0.01, "m": 1.0, "km": 1000.0, "in": 0.0254, "ft": 0.3048, "mi": 1609.344}


def parse_size(text):
    """Parse a size such as "512", "1.5k" or "2M" into a whole number of bytes, with binary multiples
    (k = 1024, M = 1024**2, G = 1024**3), case-insensitive, surrounding spaces ignored, rounded down.

    >>> parse_size("1.5k")
    1536
    """
    cleaned = text.strip().lower().removesuffix("b")
    suffix = cleaned[-1:] if cleaned[-1:] in _SIZE_FACTORS else ""
    number = float(cleaned[: len(cleaned) - len(suffix)])
    if number < 0:
        raise ValueError("a size cannot be negative")
    return int(number * _SIZE_FACTORS[suffix])


def format_duration(seconds):
    """Format a whole number of seconds as hours, minutes and seconds, e.g. 3725 -> "1h 02m 05s"; under an
    hour the hours are left out ("2m 05s"), under a minute only seconds are shown ("7s").

    >>> format_duration(3725)
    '1h 02m 05s'
    """
    if seconds < 0:
        raise ValueError("negative duration")
    hours, rest = divmod(int(seconds), 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h {minutes:02d}m {secs:02d}s"
    if minutes:
        return f"{minutes}m {secs:02d}s"
    return f"{secs}s"


def to_fahrenheit(celsius):
    """Convert a temperature from degrees Celsius to degrees Fahrenheit, rounded to one decimal.

    >>> to_fahrenheit(21.5)
    70.7
    """
    return round(celsius * 9 / 5 + 32, 1)


def convert_length(value, from_unit, to_unit):
    """Convert a length between mm, cm, m, km, in, ft and mi, rounded to 4 decimals; an unknown unit
    raises KeyError.

    >>> convert_length(3, "ft", "cm")
    91.44
    """
    return round(value * _METERS[from_unit] / _METERS[to_unit], 4)


def clamp_percent(value):
    """Clamp a number into the range 0..100 (a percentage) and round it to the nearest whole number.

    >>> clamp_percent(104.2)
    100
    """
    return int(round(min(100, max(0, value))))
