"""Shopfloor: the till, stockroom and loyalty code of a small shop."""
