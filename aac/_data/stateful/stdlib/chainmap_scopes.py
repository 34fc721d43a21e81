"""Nested variable scopes (collections.ChainMap): new() starts with one empty scope; {push}() opens a new
innermost scope and returns the depth; {pop}() drops the innermost scope and returns the depth (KeyError
when only the outermost is left); {assign}(name, value) sets name in the innermost scope; {lookup}(name)
returns the value from the innermost scope that has name (KeyError when none does); {delete}(name) removes
name from the innermost scope only (KeyError when it is not there) and returns what lookup now gives, or None."""
import collections


class Scopes:
    def __init__(self):
        self.chain = collections.ChainMap({})

    def push(self):
        self.chain = self.chain.new_child()
        return len(self.chain.maps)

    def pop(self):
        if len(self.chain.maps) == 1:
            raise KeyError("cannot pop the outermost scope")
        self.chain = self.chain.parents
        return len(self.chain.maps)

    def assign(self, name, value):
        self.chain[name] = value
        return value

    def lookup(self, name):
        return self.chain[name]

    def delete(self, name):
        del self.chain[name]
        return self.chain.get(name)


SEEDS = [
    [("new", ()), ("assign", ("x", 1)), ("push", ()), ("assign", ("x", 2)), ("lookup", ("x",)), ("pop", ()),
     ("lookup", ("x",))],
    [("new", ()), ("lookup", ("y",)), ("pop", ())],
    [("new", ()), ("assign", ("a", 5)), ("push", ()), ("assign", ("a", 6)), ("delete", ("a",)), ("delete", ("a",))],
]
