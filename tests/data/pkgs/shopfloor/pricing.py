"""Price arithmetic shared by the till and the web shop."""

CURRENCY_SIGNS = {"EUR": "€", "USD": "$", "GBP": "£"}
BULK_TIERS = ((100, 15), (20, 10), (10, 5))


def price_with_vat(net, rate):
    """The gross price of a net price at a VAT rate in percent, rounded to cents; a negative rate is refused."""
    if rate < 0:
        raise ValueError("VAT rate cannot be negative")
    return round(net * (1 + rate / 100), 2)


def bulk_price(quantity, unit_price):
    """What quantity units cost at a unit price after the bulk discount: 5% from 10 units, 10% from 20,
    15% from 100, rounded to cents."""
    if quantity <= 0:
        return 0.0
    percent = 0
    for threshold, off in BULK_TIERS:
        if quantity >= threshold:
            percent = off
            break
    return round(quantity * unit_price * (100 - percent) / 100, 2)


def format_price(cents, currency):
    """A price in cents as the till prints it: the currency sign first for EUR, USD and GBP (€12.05),
    the code after the amount for any other currency (12.05 CHF); negative amounts get a leading minus."""
    sign = "-" if cents < 0 else ""
    whole, rest = divmod(abs(cents), 100)
    amount = f"{whole}.{rest:02d}"
    if currency in CURRENCY_SIGNS:
        return f"{sign}{CURRENCY_SIGNS[currency]}{amount}"
    return f"{sign}{amount} {currency}"


def parse_sku(sku):
    """Split a stock-keeping unit such as "TS-0042-XL" into its department, item number and size;
    the size part is optional ("MUG-0007"). A malformed SKU raises ValueError."""
    parts = sku.strip().upper().split("-")
    if len(parts) not in (2, 3) or not parts[0].isalpha() or not parts[1].isdigit():
        raise ValueError(f"not a SKU: {sku!r}")
    return {"department": parts[0], "number": int(parts[1]), "size": parts[2] if len(parts) == 3 else None}
