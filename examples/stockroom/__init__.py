"""Stockroom: the stock, prices, orders and parcels of a small shop (an in-house library: classes with
state, docstrings, no doctests, no annotations). Written for aac's yardstick (benchmarks/byo_yardstick.py)."""
