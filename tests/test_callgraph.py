"""The call graph that keeps only the top-level code an entry point reaches (aac/data/callgraph.py)."""

from __future__ import annotations

import ast

from aac.data.callgraph import keep_reachable


def kept(source: str, *roots: str) -> str:
    return ast.unparse(ast.Module(body=keep_reachable(ast.parse(source).body, set(roots)), type_ignores=[]))


def test_reached_through_calls_classes_methods_decorators_and_defaults():
    source = '''
import functools
import heapq, math as m
from collections import Counter, deque
LIMIT = 7
UNUSED = 1
class Node:
    pass
class Walker:
    def step(self, x):
        return inner(x)
def inner(x):
    return deepest(x) + m.pi
def deepest(x):
    return x
def unused(x):
    return heapq.heappop(x)
@functools.cache
def entry(x, cap=LIMIT):
    return Walker().step(x) + len(Counter(x))
'''
    out = kept(source, "entry")
    for name in ("functools", "math as m", "Counter", "LIMIT", "class Walker", "def inner", "def deepest"):
        assert name in out
    for name in ("heapq", "deque", "UNUSED", "Node", "def unused"):
        assert name not in out
    assert out.index("def inner") < out.index("def deepest") < out.index("def entry")  # order kept


def test_scoping_decides_what_a_name_reaches():
    source = '''
helper = 3
count = 0
def tally(values):
    global count
    count += 1
    return [helper for helper in values]
def entry(helper):
    return tally(helper) + [count]
'''
    out = kept(source, "entry")
    assert "helper = 3" not in out  # only parameters and comprehension variables are named `helper`
    assert "count = 0" in out  # the global a function declares


def test_statements_that_bind_nothing_stay_with_what_they_use():
    source = '''
from string import *
TABLE = [0] * 4
SQUARES = {}
for i in range(4):
    SQUARES[i] = i * i
TABLE[0] = 1
LOG = []
LOG.append(1)
class Unused:
    pass
Unused.limit = TABLE
def entry(x):
    return x
'''
    out = kept(source, "entry")
    assert "from string import *" in out  # what it binds is not in the source
    assert "for i in range(4)" in out and "SQUARES = {}" in out  # a loop at the top may matter
    assert "LOG.append(1)" in out and "LOG = []" in out  # a call may do anything: it stays, with what it uses
    # a mutation that calls nothing goes with the name it mutates: Unused is not reached, so neither is TABLE
    assert "Unused" not in out and "TABLE" not in out
    assert "TABLE[0] = 1" in kept(source.replace("return x", "return TABLE[x]"), "entry")


def test_a_module_that_does_not_compile_alone_keeps_every_name_it_reads():
    source = "def helper():\n    return 1\nif True:\n    return helper()\ndef entry(x):\n    return x\n"
    assert "def helper" in kept(source, "entry")  # `return` at the top: symtable refuses it
