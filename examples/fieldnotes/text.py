"""Small text helpers for titles, names and addresses."""

_SMALL_WORDS = {"a", "an", "and", "at", "by", "for", "in", "of", "on", "or", "the", "to"}


def _words(text):
    return [w for w in text.replace("-", " ").replace("_", " ").split() if w]


def slugify(title):
    """Make a URL slug: lowercase words of letters and digits joined by single hyphens; every other
    character separates words and is dropped.

    >>> slugify("Field Notes: Day 3!")
    'field-notes-day-3'
    """
    cleaned = "".join(ch if ch.isalnum() else " " for ch in title.lower())
    return "-".join(_words(cleaned))


def initials(name):
    """The uppercase initials of a person's name, one letter per word, hyphenated parts counted as
    words, with no dots.

    >>> initials("ada king-lovelace")
    'AKL'
    """
    return "".join(w[0].upper() for w in _words(name))


def wrap_words(text, width):
    """Split text into lines of at most `width` characters, breaking only between words; a word longer
    than `width` gets a line of its own.

    >>> wrap_words("the quick brown fox", 10)
    ['the quick', 'brown fox']
    """
    lines, current = [], ""
    for word in text.split():
        candidate = f"{current} {word}" if current else word
        if len(candidate) <= width or not current:
            current = candidate
        else:
            lines.append(current)
            current = word
    if current:
        lines.append(current)
    return lines


def mask_email(address):
    """Hide the local part of an e-mail address except its first character, keeping the domain:
    "jane@example.org" -> "j***@example.org". A string without "@" raises ValueError.

    >>> mask_email("jane@example.org")
    'j***@example.org'
    """
    local, at, domain = address.partition("@")
    if not at or not local:
        raise ValueError("not an e-mail address")
    return f"{local[0]}***@{domain}"


def title_case(text):
    """Title-case a heading: every word capitalised except short joining words (a, an, and, of, the,
    ...), which stay lowercase unless they come first.

    >>> title_case("the lord of the rings")
    'The Lord of the Rings'
    """
    words = text.lower().split()
    return " ".join(w if k and w in _SMALL_WORDS else w.capitalize() for k, w in enumerate(words))
