"""An in-memory text file (io.StringIO): new(initial) holds the text initial with the position at 0;
{write}(text) writes text at the position, overwriting what is there and extending the text as needed, and
returns the number of characters written; {read}(n) returns up to n characters from the position and moves
past them (all the rest for a negative n); {seek}(pos) moves the position to pos (ValueError when negative)
and returns it; {tell}() returns the position; {getvalue}() returns the whole text."""
import io


class TextBuffer:
    def __init__(self, initial):
        self.buf = io.StringIO(initial)

    def write(self, text):
        return self.buf.write(text)

    def read(self, n):
        return self.buf.read(n)

    def seek(self, pos):
        return self.buf.seek(pos)

    def tell(self):
        return self.buf.tell()

    def getvalue(self):
        return self.buf.getvalue()


SEEDS = [
    [("new", ("hello",)), ("read", (2,)), ("write", ("XY",)), ("getvalue", ())],
    [("new", ("",)), ("write", ("abc",)), ("tell", ()), ("seek", (1,)), ("read", (-1,))],
    [("new", ("xyz",)), ("seek", (-1,)), ("seek", (5,)), ("write", ("!",)), ("getvalue", ())],
]
