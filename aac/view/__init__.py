"""The episode viewer: `python -m aac.view dirs=DIR[,DIR2] [out=FILE.html]` (docs/viewer.md)."""

from aac.view.page import render, write_page

__all__ = ["render", "write_page"]
