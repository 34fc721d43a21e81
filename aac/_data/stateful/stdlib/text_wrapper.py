"""A reusable paragraph wrapper (textwrap.TextWrapper): new(width) wraps at width columns; {wrap}(text)
returns the list of lines of text wrapped to the width (whitespace collapsed, words longer than the width
broken); {fill}(text) returns those lines joined by newlines; {set_width}(width) changes the width (ValueError
from wrap when it is not positive) and returns the old one; {set_indent}(prefix) makes every line start with
prefix (counted in the width) and returns the number of lines the text 'a b c d e f' now wraps to."""
import textwrap


class Wrapper:
    def __init__(self, width):
        self.wrapper = textwrap.TextWrapper(width=width)

    def wrap(self, text):
        return self.wrapper.wrap(text)

    def fill(self, text):
        return self.wrapper.fill(text)

    def set_width(self, width):
        old = self.wrapper.width
        self.wrapper.width = width
        return old

    def set_indent(self, prefix):
        self.wrapper.initial_indent = prefix
        self.wrapper.subsequent_indent = prefix
        return len(self.wrapper.wrap("a b c d e f"))


SEEDS = [
    [("new", (10,)), ("wrap", ("the quick brown fox jumps",))],
    [("new", (5,)), ("set_indent", ("> ",)), ("fill", ("one two three",))],
    [("new", (8,)), ("set_width", (3,)), ("wrap", ("abcdefgh ij",)), ("set_width", (0,)), ("wrap", ("x y",))],
]
