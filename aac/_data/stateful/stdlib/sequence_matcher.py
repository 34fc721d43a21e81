"""A comparer of two sequences (difflib.SequenceMatcher): new(a, b) compares a with b (strings or lists);
{set_first}(a) and {set_second}(b) replace one side; {ratio}() returns the similarity 2*M/T rounded to 4
places (M matched elements, T total elements; 1.0 for two empty sequences); {blocks}() returns the matching
blocks as [i, j, size] triples ending with [len(a), len(b), 0]; {opcodes}() returns the edit operations as
[tag, i1, i2, j1, j2] lists with tags 'equal', 'replace', 'delete', 'insert'."""
import difflib


class Matcher:
    def __init__(self, a, b):
        self.matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)

    def set_first(self, a):
        self.matcher.set_seq1(a)
        return len(a)

    def set_second(self, b):
        self.matcher.set_seq2(b)
        return len(b)

    def ratio(self):
        return round(self.matcher.ratio(), 4)

    def blocks(self):
        return [list(b) for b in self.matcher.get_matching_blocks()]

    def opcodes(self):
        return [list(op) for op in self.matcher.get_opcodes()]


SEEDS = [
    [("new", ("abcd", "bcde")), ("ratio", ()), ("blocks", ())],
    [("new", ("kitten", "sitting")), ("opcodes", ()), ("set_second", ("kitten",)), ("ratio", ())],
    [("new", ([1, 2, 3], [3, 2, 1])), ("set_first", ([],)), ("ratio", ()), ("opcodes", ())],
]
