import pytest
from shopfloor.basket import Basket
from shopfloor.pricing import format_price, parse_sku


def test_totals_with_code():
    basket = Basket()
    basket.add("TS-0042-XL", 12.5, 2)
    basket.add("MUG-0007", 8.0)
    assert basket.apply_code("spring10")
    assert not basket.apply_code("STAFF25")
    assert basket.total() == 35.64


def test_remove_unknown_sku():
    basket = Basket(vat_rate=7)
    with pytest.raises(KeyError):
        basket.remove("CAP-0001")


def test_sku_and_price_formats():
    assert parse_sku("ts-0042-xl") == {"department": "TS", "number": 42, "size": "XL"}
    assert format_price(1205, "EUR") == "€12.05"
    assert format_price(-99, "CHF") == "-0.99 CHF"
