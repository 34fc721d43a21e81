"""A word-frequency table of fed text (collections.Counter over lower-cased words, a word being a run of
letters, digits, underscores or apostrophes): new() starts empty; {feed}(text) counts the words of text and
returns how many words it had; {frequency}(word) returns the count of word, case-insensitively; {top}(n) returns
the n most frequent [word, count] pairs, ties in first-seen order; {vocabulary}() returns the number of distinct
words."""
import collections
import re


class WordFrequency:
    def __init__(self):
        self.counts = collections.Counter()

    def feed(self, text):
        words = re.findall(r"[\w']+", text.lower())
        self.counts.update(words)
        return len(words)

    def frequency(self, word):
        return self.counts[word.lower()]

    def top(self, n):
        return self.counts.most_common(n)

    def vocabulary(self):
        return len(self.counts)


SEEDS = [
    [("new", ()), ("feed", ("The cat and the hat",)), ("top", (1,)), ("frequency", ("THE",))],
    [("new", ()), ("feed", ("it's a-b, c!",)), ("vocabulary", ()), ("feed", ("",)), ("top", (3,))],
]
