"""A dependency graph that orders its nodes (graphlib.TopologicalSorter): new() makes it empty; {add}(node,
predecessors) adds node after every node of the list predecessors and returns the number of distinct nodes
known; {order}() returns a static topological order of all nodes (graphlib.CycleError when the graph has a
cycle); {first_ready}() returns, sorted, the nodes that have no predecessors."""
import graphlib


class Dependencies:
    def __init__(self):
        self.graph = {}

    def add(self, node, predecessors):
        self.graph.setdefault(node, set()).update(predecessors)
        for p in predecessors:
            self.graph.setdefault(p, set())
        return len(self.graph)

    def order(self):
        return list(graphlib.TopologicalSorter(self.graph).static_order())

    def first_ready(self):
        return sorted(n for n, preds in self.graph.items() if not preds)


SEEDS = [
    [("new", ()), ("add", ("b", ["a"])), ("add", ("c", ["b"])), ("order", ())],
    [("new", ()), ("add", ("x", ["y"])), ("add", ("y", ["x"])), ("order", ())],
    [("new", ()), ("add", (2, [1])), ("add", (3, [1])), ("first_ready", ()), ("add", (1, [])), ("order", ())],
]
