"""What a function's arguments are, read from its body and defaults (nothing here runs the code).

In-house code rarely has doctests or annotations, but its body says what it takes: `x, y = point`
(a 2-tuple), `box[3]` (at least 4 items), `len(rows)` and `for a, b in pairs` (a sequence, of
pairs), `text.split(",")` then `key, value = part.split("=")` (a string shaped like what it parses),
`name.startswith("#")` and `unit == "km"` (the literals it tests), `n * 2` and `n > 0` (a number),
`d.get("id")` and `"id" in d` (a mapping with that key), `isinstance(x, str)`. `read_shapes` reads
one `ValueShape` per argument of `test_func`, following the arguments into the module's own functions,
classes and their methods (`w = Wrapper(width=w, **options); w.wrap(text)`: `options` takes the
constructor's keywords); `guess_inputs` turns the Shapes into argument tuples: inputs of the shape
the code accepts and, beside them, near misses it should reject (a piece missing, an empty string,
a wrong count of items, a missing key), so the builder's coverage search starts on both sides of
each test. Where the body says nothing about an argument, its original name decides (`year`,
`text`, `items`), else common types are tried and the builder keeps those that run.

An argument the code calls (`key(x)`) or reads like a file (`fp.read()`) has no literal value:
`ValueShape.needs` says so, and the builder drops a function that cannot do without one (a parameter
with a default is kept at it: aac/data/anonymize.py).
"""

from __future__ import annotations

import ast
import random
import re
from dataclasses import dataclass, field

from aac.data.anonymize import ENTRY, parse_quietly
from aac.data.inputs import parts_of

_SAME_STR = frozenset({"strip", "lstrip", "rstrip", "lower", "upper", "casefold", "title", "capitalize",
                       "swapcase", "replace", "removeprefix", "removesuffix", "expandtabs", "zfill", "center",
                       "ljust", "rjust"})
_SPLITS = frozenset({"split", "rsplit", "partition", "rpartition", "splitlines"})
_STR_ONLY = frozenset(n for n in dir(str) if not n.startswith("_")) - frozenset(dir(list)) - frozenset(dir(dict))
_SEQ_METHODS = frozenset({"append", "extend", "insert", "remove", "sort", "reverse"})
_MUTATORS = _SEQ_METHODS | frozenset({"pop", "clear", "update", "setdefault", "popitem", "add", "discard"})
_MAP_METHODS = frozenset({"get", "items", "keys", "values", "setdefault", "update"})
_FILE_METHODS = frozenset({"read", "readline", "readlines", "write", "writelines", "seek", "tell", "flush",
                           "fileno", "close"})
_NUM_FUNCS = frozenset({"abs", "round", "divmod", "pow", "chr", "range", "hex", "oct", "bin"})
_SAME_FUNCS = frozenset({"list", "tuple", "sorted", "set", "frozenset", "reversed", "dict"})  # same items
_SEQ_FUNCS = frozenset({"sum", "min", "max", "enumerate", "any", "all", "zip", "map", "filter"})
_TYPES = {"int": "int", "float": "float", "complex": "float", "str": "str", "bool": "bool", "list": "seq",
          "tuple": "seq", "set": "seq", "frozenset": "seq", "dict": "map", "bytes": "str"}
# what an argument's original name says when its body says nothing (in-house names are telling)
_NAMED = [(re.compile(r"^(n|i|j|k|num|count|size|width|height|depth|length|year|month|day|hour|minute|second|"
                      r"index|idx|limit|start|stop|step|offset|level|number|total|amount|qty|quantity|"
                      r"\w*_(id|count|num|size|index))$"), "int"),
          (re.compile(r"^(x|y|z|value|price|rate|percent|ratio|weight|factor|scale|score|celsius|fahrenheit|"
                      r"\w*_(price|rate|weight))$"), "float"),
          (re.compile(r"^(s|text|string|line|word|name|label|title|prefix|suffix|sep|char|ch|code|key|word|"
                      r"message|msg|pattern|\w*_(name|text|str|code))$"), "str"),
          (re.compile(r"^(flag|strict|verbose|reverse|\w*_?(is|has|allow|enable)\w*)$"), "bool"),
          (re.compile(r"^(items|values|xs|seq|data|numbers|nums|lst|list\w*|\w+s)$"), "seq")]
_WORDS = ["alpha", "b", "Key", "x1"]
_LITERAL_KINDS = frozenset({"int", "float", "num", "str", "bool", "seq", "map", "sized", "indexed", "sliced",
                            "subscript", "mutated"})
_MAX_DEPTH = 6  # how deep arguments are followed into the module's own functions and methods
_MAX_ITEMS = 8
_NO_DEFAULT = object()


@dataclass(eq=False)
class ValueShape:
    """What the code does with one value: the kinds of value it takes ("int", "float", "num", "str",
    "bool", "seq", "map", "none", "call", "file"; "truth", "sized", "indexed", "sliced", "subscript":
    uses several kinds allow; "mutated": changed in place), the items it reads by position (unpacking, constant indexes), what any
    item or mapping value is, the literal keys it looks up (and what each key's value is, where it
    is passed on as keywords), what the value is split on and what its pieces are, and the literals
    it is compared with. An instance of the module's own class (`cls`) keeps what its attributes hold."""

    kinds: set[str] = field(default_factory=set)
    size: int = 0  # items read by position: at least this many (exactly, when `exact`)
    exact: bool = False  # unpacked into `size` names, or its length compared with `size`
    items: dict[int, ValueShape] = field(default_factory=dict)
    item: ValueShape | None = None  # an item of a sequence, a value of a mapping
    key: ValueShape | None = None  # a key of a mapping
    keys: list = field(default_factory=list)  # literal keys looked up
    fields: dict = field(default_factory=dict)  # key -> (ValueShape, default) of keywords passed on as **mapping
    seps: list[str] = field(default_factory=list)  # split on, outermost first
    pieces: ValueShape | None = None  # what a split of it gives: its pieces by position, any piece
    literals: list = field(default_factory=list)  # compared with (==, in (...), startswith, ...)
    numeric_text: str = ""  # turned into a number: "int" (int(x)) or "float" (float(x))
    member_of: ValueShape | None = None  # `x in other`, `other[x]`: x is a key or an item of the other value
    cls: str | None = None  # an instance of this class of the module
    attrs: dict[str, ValueShape] = field(default_factory=dict)
    text: ValueShape | None = None  # what `str(x)` of it is used as (a number or an object may be parsed as text)

    def add(self, *kinds: str) -> ValueShape:
        self.kinds.update(kinds)
        return self

    def at(self, i: int) -> ValueShape:
        self.add("seq")
        self.size = max(self.size, i + 1)
        return self.items.setdefault(i, ValueShape())

    def any_item(self) -> ValueShape:
        if self.item is None:
            self.item = ValueShape()
        return self.item

    def literal(self, value) -> None:
        if value not in self.literals and len(self.literals) < 12:
            self.literals.append(value)

    @property
    def needs(self) -> str | None:
        """What no literal can be: "a function" (it is called), "a file or stream" (read or written)."""
        if "file" in self.kinds:
            return "a file or stream"
        if "call" in self.kinds:
            return "a function"
        if "obj" in self.kinds and not self.kinds & _LITERAL_KINDS and self.text is None:
            return "an object (it reads attributes of it)"
        if self.item is not None and self.kinds <= {"seq", "obj", "truth", "sized"} and self.item.needs:
            return self.item.needs
        return None


def read_shapes(source: str, kinds: tuple[str, ...] = ()) -> list[ValueShape]:
    """One ValueShape per argument (arg0..) of `test_func` in the anonymised `source`; `kinds`: each
    argument's kind (aac.data.anonymize: "varargs" holds a tuple, "varkw" a dict)."""
    tree = parse_quietly(source)
    functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    consts = {}
    for stmt in tree.body:  # module constants compared with (`MONDAY <= day <= SUNDAY`)
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            value = _constant(stmt.value)
            if value is not None:
                consts[stmt.targets[0].id] = value
    entry = functions.get(ENTRY)
    names = [a.arg for a in entry.args.args] if entry is not None else []
    shapes = [ValueShape({"seq"} if k == "varargs" else {"map"} if k == "varkw" else set()) for k in kinds] \
        or [ValueShape() for _ in names]
    if entry is not None:
        # twice: a use read early (`name in d`) is understood once a later one has said what d is (`d.get`)
        for _ in range(2):
            _Reader(functions, classes, consts, ()).function(entry, dict(zip(names, shapes)))
    return shapes


class _Reader:
    """Walks one function body with the Shapes of the names it tracks (its arguments and what is
    taken from them), adding what each use says."""

    def __init__(self, functions: dict, classes: dict, consts: dict, stack: tuple[str, ...]):
        self.functions, self.classes, self.consts, self.stack = functions, classes, consts, stack
        self.names: dict[str, ValueShape] = {}
        self.members: dict[str, list] = {}  # local names bound to a literal tuple, list or set

    def function(self, node: ast.FunctionDef, names: dict[str, ValueShape]) -> None:
        self.names = dict(names)
        for stmt in node.body:
            self.stmt(stmt)

    # ------------------------------------------------------------ statements
    def stmt(self, node: ast.stmt) -> None:
        if isinstance(node, ast.Assign):
            value = self.expr(node.value)
            for target in node.targets:
                self.bind(target, value, node.value)
        elif isinstance(node, ast.AugAssign):
            self.arith(self.expr(node.target), self.expr(node.value), node.op, node.value)
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            self.bind(node.target, self.expr(node.value))
        elif isinstance(node, ast.For):
            self.bind(node.target, self.iterate(node.iter))
            self.block(node.body + node.orelse)
        elif isinstance(node, ast.If | ast.While):
            self.test(node.test)
            self.block(node.body + node.orelse)
        elif isinstance(node, ast.With):
            for item in node.items:
                self.expr(item.context_expr)
            self.block(node.body)
        elif isinstance(node, ast.Try):
            self.block(node.body + node.orelse + node.finalbody + [s for h in node.handlers for s in h.body])
        elif isinstance(node, ast.Return | ast.Expr) and node.value is not None:
            self.expr(node.value)
        elif isinstance(node, ast.Assert):
            self.test(node.test)
        elif isinstance(node, ast.Delete):
            for t in node.targets:
                if isinstance(t, ast.Subscript) and (owner := self.expr(t.value)) is not None:
                    owner.add("mutated")
                self.expr(t)

    def block(self, stmts: list[ast.stmt]) -> None:
        for s in stmts:
            self.stmt(s)

    def bind(self, target: ast.expr, value: ValueShape | None, source: ast.expr | None = None) -> None:
        """An assignment `target = value`: names take the value's ValueShape; unpacking reads its items."""
        if isinstance(target, ast.Name):
            if value is not None:
                self.names[target.id] = value
            else:
                self.names.pop(target.id, None)
                if isinstance(source, ast.Tuple | ast.List | ast.Set) and (members := _constants(source)):
                    self.members[target.id] = members  # `prefixes = ("  ", tag)`, then `x in prefixes`
        elif isinstance(target, ast.Tuple | ast.List):
            value = value if value is not None else ValueShape()
            value.add("seq")
            value.exact = value.exact or not any(isinstance(e, ast.Starred) for e in target.elts)
            for i, elt in enumerate(target.elts):
                if isinstance(elt, ast.Starred):
                    self.bind(elt.value, None)
                    break
                self.bind(elt, value.at(i))
        elif isinstance(target, ast.Attribute):
            owner = self.expr(target.value)
            if owner is not None and owner.cls is not None and value is not None:
                owner.attrs[target.attr] = value
        elif isinstance(target, ast.Subscript):
            if (owner := self.expr(target.value)) is not None:
                owner.add("mutated")
            self.expr(target)

    def iterate(self, node: ast.expr) -> ValueShape | None:
        """The ValueShape of one item of what `for` walks."""
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("enumerate", "zip"):
            items = [s.add("seq").any_item() if (s := self.expr(a)) is not None else None for a in node.args]
            if node.func.id == "enumerate":
                pair = ValueShape({"seq"}, size=2, exact=True, items={0: ValueShape({"int"})})
                if items and items[0] is not None:
                    pair.items[1] = items[0]
                return pair
            return ValueShape({"seq"}, size=len(items), exact=True, items={i: s for i, s in enumerate(items) if s is not None})
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("items", "keys", "values"):
            owner = self.expr(node.func.value)
            if owner is None:
                return None
            owner.add("map")
            key = owner.key = owner.key or ValueShape()
            value = owner.any_item()
            if node.func.attr == "items":
                return ValueShape({"seq"}, size=2, exact=True, items={0: key, 1: value})
            return key if node.func.attr == "keys" else value
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "range":
            self.expr(node)
            return ValueShape({"int"})
        shape = self.expr(node)
        if shape is None:
            return None
        if "map" in shape.kinds:
            shape.key = shape.key or ValueShape()
            return shape.key
        if "str" in shape.kinds:  # characters
            return ValueShape({"str"}, literals=[])
        shape.add("seq")
        return shape.any_item()

    # ------------------------------------------------------------ expressions
    def test(self, node: ast.expr) -> None:
        """A condition: a bare tracked name in it is tested for truth (a flag, unless used otherwise)."""
        if isinstance(node, ast.BoolOp):
            for v in node.values:
                self.test(v)
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            self.test(node.operand)
        elif isinstance(node, ast.Name) and node.id in self.names:
            self.names[node.id].add("truth")
        else:
            self.expr(node)

    def expr(self, node: ast.expr | None) -> ValueShape | None:
        """The ValueShape of the value `node` evaluates to when it is a tracked one (else None), noting what
        every use of a tracked value inside it says."""
        if node is None:
            return None
        if isinstance(node, ast.Name):
            return self.names.get(node.id)
        if isinstance(node, ast.Attribute):
            owner = self.expr(node.value)
            if owner is not None and owner.cls is not None:
                return owner.attrs.get(node.attr)
            if owner is not None and node.attr not in dir(str) + dir(list) + dir(dict):
                owner.add("obj")
            return None
        if isinstance(node, ast.Call):
            return self.call(node)
        if isinstance(node, ast.Subscript):
            return self.subscript(node)
        if isinstance(node, ast.BinOp):
            left, right = self.expr(node.left), self.expr(node.right)
            self.arith(left, right, node.op, node.right)
            self.arith(right, left, node.op, node.left)
            return left if left is not None and left.kinds & {"str", "seq"} else None
        if isinstance(node, ast.UnaryOp):
            operand = self.expr(node.operand)
            if operand is not None and isinstance(node.op, ast.USub | ast.UAdd | ast.Invert):
                operand.add("num")
            return None
        if isinstance(node, ast.Compare):
            self.compare(node)
            return None
        if isinstance(node, ast.BoolOp):
            for v in node.values:
                self.test(v)
            return None
        if isinstance(node, ast.IfExp):
            self.test(node.test)
            a, b = self.expr(node.body), self.expr(node.orelse)
            return a or b
        if isinstance(node, ast.JoinedStr):
            self.formatted(node)
            return None
        if isinstance(node, ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp):
            return self.comprehension(node)
        if isinstance(node, ast.Lambda):
            return None
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                self.expr(child)
        return None

    def formatted(self, node: ast.JoinedStr) -> None:
        """An f-string: a tracked value under a numeric format spec (`{x:.2f}`, `{n:d}`) is a number."""
        for v in node.values:
            if isinstance(v, ast.FormattedValue) and (shape := self.expr(v.value)) is not None and v.format_spec:
                spec = ast.unparse(v.format_spec)
                shape.add("float" if any(c in spec for c in "fe%") else "int" if "d" in spec else "num")

    def comprehension(self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp) -> ValueShape | None:
        """A comprehension: its targets bound to the items it walks; a map over the items has their source's shape."""
        source = None
        for gen in node.generators:
            iterated = self.expr(gen.iter) if source is None else None
            item = self.iterate(gen.iter)
            source = source or iterated
            self.bind(gen.target, item)
            for cond in gen.ifs:
                self.test(cond)
        parts = [self.expr(p) for p in ((node.key, node.value) if isinstance(node, ast.DictComp) else (node.elt,))]
        # a map over the items (`[p.strip() for p in parts]`) has the shape of what it walks
        if source is not None and parts[0] is not None and parts[0] in (source.item, source.key) and \
                not isinstance(node, ast.DictComp):
            return source
        return None

    def arith(self, shape: ValueShape | None, other: ValueShape | None, op: ast.operator, other_node: ast.expr | None = None) -> None:
        if shape is None:
            return
        literal = self.constant(other_node)
        if isinstance(op, ast.Add) and (type(literal) is str or (other is not None and "str" in other.kinds)):
            shape.add("str")
        elif isinstance(op, ast.Add) and isinstance(other_node, ast.List | ast.Tuple):
            shape.add("seq")
        elif isinstance(op, ast.Mod) and isinstance(other_node, ast.Tuple):
            shape.add("str")  # "fmt" % (a, b)
        elif isinstance(op, ast.Mult) and shape.kinds & {"str", "seq"}:
            pass
        else:
            shape.add("float" if isinstance(op, ast.Div) or type(literal) is float else "num")
            if type(literal) in (int, float):
                shape.literal(literal)

    def constant(self, node: ast.expr | None):
        """The literal value of a node: a constant, a negated number, a tuple of them, or a module constant."""
        if isinstance(node, ast.Name) and node.id not in self.names:
            return self.consts.get(node.id)
        return _constant(node)

    def compare(self, node: ast.Compare) -> None:
        sides = [node.left, *node.comparators]
        shapes = [self.expr(s) for s in sides]
        for k, op in enumerate(node.ops):
            for sx, y, sy, flipped in ((shapes[k], sides[k + 1], shapes[k + 1], False),
                                       (shapes[k + 1], sides[k], shapes[k], True)):
                if sx is not None:
                    self.compared(sx, op, y, sy, flipped)
            if isinstance(op, ast.Eq | ast.NotEq | ast.Lt | ast.LtE | ast.Gt | ast.GtE):
                for a, b in ((sides[k], sides[k + 1]), (sides[k + 1], sides[k])):
                    length = _len_of(a, self)
                    n = self.constant(b)
                    if length is not None and type(n) is int and 0 <= n <= _MAX_ITEMS:
                        length.size = max(length.size, n + (not isinstance(op, ast.Eq | ast.NotEq | ast.LtE | ast.GtE)))
                        length.exact = length.exact or isinstance(op, ast.Eq | ast.NotEq)

    def compared(self, sx: ValueShape, op: ast.cmpop, y: ast.expr, sy: ValueShape | None, flipped: bool) -> None:
        value = self.constant(y)
        if isinstance(op, ast.In | ast.NotIn):
            if not flipped:  # x in y
                for v in (self.members.get(y.id, []) if isinstance(y, ast.Name) else _constants(y)):
                    sx.literal(v)
                    sx.add(_kind_of(v))
                if sy is not None and sx is not sy:
                    sx.member_of = sx.member_of or sy
            elif value is not None and type(value) is not tuple:  # y in x: x holds y
                if value not in sx.keys:
                    sx.keys.append(value)
                if type(value) is str:
                    sx.literal(value)
        elif isinstance(op, ast.Is | ast.IsNot):
            if isinstance(y, ast.Constant) and y.value is None:
                sx.add("none")
        elif value is not None and type(value) is not tuple:
            sx.literal(value)
            if isinstance(op, ast.Eq | ast.NotEq):
                sx.add(_kind_of(value))
            else:
                sx.add("str" if type(value) is str else "num")
        elif not isinstance(op, ast.Eq | ast.NotEq) and not (sy is not None and "str" in sy.kinds):
            sx.add("num")  # ordered against something that is not text

    def subscript(self, node: ast.Subscript) -> ValueShape | None:
        owner = self.expr(node.value)
        index = node.slice
        if isinstance(index, ast.Slice):
            for part in (index.lower, index.upper, index.step):
                if (s := self.expr(part)) is not None:
                    s.add("int")
            if owner is not None:
                owner.add("sliced")
            return owner
        key = self.expr(index)
        value = self.constant(index)
        if owner is None:
            return None
        if key is not None and key is not owner:  # an index or a key of owner: which, owner's kinds say
            key.add("subscript")
            key.member_of = key.member_of or owner
        if type(value) is int:
            if value >= 0:
                return owner.at(value)
            owner.add("seq")
            owner.size = max(owner.size, -value)
            return owner.any_item()
        if value is not None and type(value) is not tuple:
            owner.add("map")
            if value not in owner.keys:
                owner.keys.append(value)
            return owner.any_item()
        owner.add("indexed")
        return owner.any_item()

    def call(self, node: ast.Call) -> ValueShape | None:
        func = node.func
        args = [self.expr(a.value if isinstance(a, ast.Starred) else a) for a in node.args]
        keywords = {kw.arg: self.expr(kw.value) for kw in node.keywords}
        if keywords.get("key") is not None:  # sorted(xs, key=f), max(xs, key=f): f is called
            keywords["key"].add("call")
        if isinstance(func, ast.Attribute):
            return self.attribute_call(func, node, args, keywords)
        if not isinstance(func, ast.Name):
            return None
        name = func.id
        if name in self.names:
            self.names[name].add("call")
            return None
        if name in self.functions:
            return self.follow(None, name, node, args, keywords)
        if name in self.classes:
            instance = ValueShape({"obj"}, cls=name)
            self.follow(name, "__init__", node, args, keywords, instance)
            return instance
        return self.builtin_call(name, node, args)

    def attribute_call(self, func: ast.Attribute, node: ast.Call, args: list[ValueShape | None],
                       keywords: dict[str | None, ValueShape | None]) -> ValueShape | None:
        """`x.f(...)`: math's functions take numbers, `"sep".join` strings, an instance of the module's class runs
        its method, a tracked value's method says what the value is."""
        owner = self.expr(func.value)
        if isinstance(func.value, ast.Name) and func.value.id in ("math", "cmath"):
            for a in args:
                if a is not None:
                    a.add("num")
            return None
        if isinstance(func.value, ast.Constant) and type(func.value.value) is str:
            if func.attr == "join" and args and args[0] is not None:
                args[0].add("seq").any_item().add("str")
            return None
        if owner is None:
            return None
        if owner.cls is not None:
            return self.follow(owner.cls, func.attr, node, args, keywords, owner)
        return self.method(owner, func.attr, node, args)

    def builtin_call(self, name: str, node: ast.Call, args: list[ValueShape | None]) -> ValueShape | None:
        """A builtin applied to tracked values: what each builtin says of its arguments."""
        if name in _NUM_FUNCS:
            for a in args:
                if a is not None:
                    a.add("int" if name in ("chr", "range", "hex", "oct", "bin") else "num")
            return None
        first = args[0] if args else None
        if first is None and name != "map":
            return None
        if name == "isinstance" and len(node.args) == 2:
            for t in _type_names(node.args[1]):
                first.add(_TYPES.get(t, "obj"))
        elif name == "len":
            first.add("sized")
        elif name in ("int", "float"):
            first.numeric_text = first.numeric_text or name
            first.add(name if "str" not in first.kinds else "str")
        elif name in _SAME_FUNCS:
            if "map" not in first.kinds and "str" not in first.kinds:
                first.add("seq")
            if name == "dict" and "map" not in first.kinds:
                first.any_item().add("seq").size = 2
            return first
        elif name == "map" and len(node.args) > 1:
            func = node.args[0]
            kind = _TYPES.get(func.id, "seq") if isinstance(func, ast.Name) and func.id not in self.functions else None
            items = [a.add("seq").any_item() if a is not None else None for a in args[1:]]
            if kind is not None:
                for item in items:
                    if item is not None:
                        item.add(kind)
            elif any(items):  # map(helper, xs), map(self.parse, xs): the helper takes the items
                owner = self.expr(func.value) if isinstance(func, ast.Attribute) else None
                if isinstance(func, ast.Name):
                    self.follow(None, func.id, node, items, {})
                elif owner is not None and owner.cls is not None:
                    self.follow(owner.cls, func.attr, node, items, {}, owner)
        elif name in _SEQ_FUNCS:
            first.add("seq")
            if name == "sum":
                first.any_item().add("num")
            for a in args[1:] if name == "zip" else ():
                if a is not None:
                    a.add("seq")
        elif name == "ord":
            first.add("str")
        elif name == "str" and len(node.args) == 1:  # its text, parsed further on
            first.text = first.text or ValueShape({"str"})
            return first.text
        return None

    def method(self, owner: ValueShape, method: str, node: ast.Call, args: list[ValueShape | None]) -> ValueShape | None:
        consts = [self.constant(a) for a in node.args]
        if method in _FILE_METHODS and not owner.kinds & {"str", "seq", "map"}:
            owner.add("file")
            return None
        if method in _SPLITS:
            owner.add("str")
            sep = consts[0] if consts and type(consts[0]) is str else ("\n" if method == "splitlines" else " ")
            if sep not in owner.seps:
                owner.seps.append(sep)
            pieces = owner.pieces = owner.pieces or ValueShape({"seq"})
            if method in ("partition", "rpartition"):  # (head, sep, tail): the pieces of one split
                return ValueShape({"seq"}, size=3, exact=True, items={0: pieces.at(0), 1: ValueShape({"str"}), 2: pieces.at(1)})
            return pieces
        if method in _SAME_STR:
            owner.add("str")
            return owner
        if method in ("startswith", "endswith", "find", "index", "count", "rfind", "rindex") and consts \
                and type(consts[0]) in (str, tuple):
            owner.add("str")
            for c in (consts[0] if type(consts[0]) is tuple else (consts[0],)):
                if type(c) is str:
                    owner.literal(c)
            return None
        if method in _STR_ONLY:
            owner.add("str")
            return None
        if method in _MAP_METHODS:
            owner.add("map")
            if method in ("get", "setdefault") and consts and consts[0] is not None and consts[0] not in owner.keys:
                owner.keys.append(consts[0])
            if method in ("get", "setdefault") and args and args[0] is not None:
                args[0].member_of = args[0].member_of or owner
            return owner.any_item() if method in ("get", "setdefault") else None
        if method in _MUTATORS:
            owner.add("mutated")
        if method in _SEQ_METHODS:
            owner.add("seq")
            if method in ("append", "remove") and args and args[0] is not None:
                owner.item = owner.item or args[0]
            return None
        if method == "pop":
            return owner.any_item()
        return None

    def follow(self, cls: str | None, name: str, node: ast.Call, args: list[ValueShape | None], keywords: dict,
               instance: ValueShape | None = None) -> ValueShape | None:
        """A call of the module's own function, or of a method of its own class on `instance`: its
        parameters are what the caller passes, `**mapping` the keywords no other argument gave."""
        target = self.functions.get(name) if cls is None else self.method_of(cls, name, set())
        where = f"{cls}.{name}"
        if target is None or where in self.stack or len(self.stack) >= _MAX_DEPTH:
            return None
        a = target.args
        params = [p.arg for p in a.posonlyargs + a.args]
        bound: dict[str, ValueShape] = {}
        if cls is not None and instance is not None and params:
            bound[params[0]] = instance
            params = params[1:]
        bound |= {p: s for p, s in zip(params, args) if s is not None}
        named = params + [p.arg for p in a.kwonlyargs]
        bound |= {k: s for k, s in keywords.items() if k in named and s is not None}
        spread = keywords.get(None)
        if spread is not None:  # **mapping: the parameters left open are its possible keys
            spread.add("map")
            given = set(params[:len(args)]) | set(keywords)
            defaults = dict(zip(reversed(params), reversed(a.defaults))) | {
                k.arg: d for k, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None}
            for p in named:
                if p not in given and p not in spread.fields:
                    spread.fields[p] = (ValueShape(), _constant(defaults.get(p)))
                if p in spread.fields:
                    bound[p] = spread.fields[p][0]
        if bound:
            reader = _Reader(self.functions, self.classes, self.consts, self.stack + (where,))
            reader.function(target, bound)
        return None


    def method_of(self, cls: str, name: str, seen: set[str]) -> ast.FunctionDef | None:
        """The method `name` of the module's class `cls`, or of its bases in the module (in order)."""
        node = self.classes.get(cls)
        if node is None or cls in seen:
            return None
        seen.add(cls)
        found = next((s for s in node.body if isinstance(s, ast.FunctionDef) and s.name == name), None)
        for base in node.bases:
            if found is None and isinstance(base, ast.Name):
                found = self.method_of(base.id, name, seen)
        return found


def _constant(node: ast.expr | None):
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant) \
            and type(node.operand.value) in (int, float):
        return -node.operand.value
    if isinstance(node, ast.Tuple):
        try:
            return ast.literal_eval(node)
        except ValueError:
            return None
    return None


def _constants(node: ast.expr) -> list:
    """The literal members of `x in (...)`, `x in "abc"`."""
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return [v for e in node.elts if (v := _constant(e)) is not None and type(v) is not tuple]
    if isinstance(node, ast.Constant) and type(node.value) is str:
        return list(dict.fromkeys(node.value[:6]))
    return []


def _kind_of(value) -> str:
    return {bool: "bool", int: "num", float: "float", str: "str"}.get(type(value), "obj")


def _type_names(node: ast.expr) -> list[str]:
    nodes = node.elts if isinstance(node, ast.Tuple) else [node]
    return [n.id for n in nodes if isinstance(n, ast.Name)]


def _len_of(node: ast.expr, reader: _Reader) -> ValueShape | None:
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "len" and node.args:
        return reader.names.get(node.args[0].id) if isinstance(node.args[0], ast.Name) else None
    return None


# ---------------------------------------------------------------- values

def values(shape: ValueShape, default=_NO_DEFAULT, depth: int = 0, name: str = "", strings: tuple = ()) -> tuple[list, list]:
    """(values of the shape the code accepts, near misses it should reject), a few of each: the
    default first; `name`: the argument's original name, read when the body says nothing;
    `strings`: the code's string literals, tried where a string's shape is unknown."""
    kinds = shape.kinds - {"obj"}
    valid: list = [] if default is _NO_DEFAULT else [default]
    wrong: list = []
    if shape.needs:
        return valid, []
    if default is None and kinds <= {"none", "truth"}:  # an option left at None unless given
        return valid, []
    if not kinds - {"truth", "none"} and name:
        kinds = kinds | {kind for pattern, kind in _NAMED if pattern.match(name.lower())}
    if kinds <= {"subscript", "none"} and shape.member_of is not None:
        owner = shape.member_of
        valid += [k for k in owner.keys if type(k) in (str, int)] if "map" in owner.kinds else [0, 1, -1, 2]
        wrong += ["zz"] if "map" in owner.kinds else [5, -6]
    elif shape.size and not kinds & {"str", "map"} and (shape.exact or not kinds & {"indexed", "sized", "sliced", "mutated"}):
        v, w = _tuples(shape, depth)
        valid, wrong = valid + v, wrong + w
    elif "map" in kinds:
        v, w = _mappings(shape, depth)
        valid, wrong = valid + v, wrong + w
    elif not shape.seps and shape.text is not None and shape.text.seps:
        v, w = _strings(shape.text, depth, strings)  # `str(x).split(".")`: text shaped like what is parsed
        valid, wrong = valid + v, wrong + w
    elif "str" in kinds or shape.seps:
        v, w = _strings(shape, depth, strings)
        valid, wrong = valid + v, wrong + w
    elif kinds & {"seq", "sized", "indexed", "sliced", "mutated"}:
        v, w = _sequences(shape, depth)
        valid, wrong = valid + v, wrong + w
    elif kinds & {"num", "int", "float"}:
        valid += _numbers(shape, kinds)
    elif kinds & {"bool", "truth"}:
        valid += [True, False]
    else:  # nothing said: common types, the builder keeps those that run
        valid += [3, "ab", [1, 2], 1, "x y", 12, [3], 0]
    if "none" in kinds and None not in valid:
        wrong.append(None)
    return _unique(valid), _unique([w for w in wrong if not any(_same(w, v) for v in valid)])


def _numbers(shape: ValueShape, kinds: set[str]) -> list:
    lits = [v for v in shape.literals if type(v) in (int, float)]
    out = [v + d for v in lits[:4] for d in (0, 1, -1)] + [3, 0, 1, -2, 10, 7, 2]
    if "float" in kinds and "int" not in kinds:
        out = [float(v) for v in out[:6]] + [2.5, -0.5, 0.1]
    elif "int" in kinds:
        out = [int(v) for v in out]
    return _unique(out)[:10]


def _strings(shape: ValueShape, depth: int, strings: tuple) -> tuple[list, list]:
    lits = [v for v in shape.literals if type(v) is str]
    if shape.seps and shape.pieces is not None and depth < 3:
        return _joined(shape.seps[0], shape.pieces, depth, lits)
    if shape.numeric_text:
        near = [str(v + d) for v in shape.literals if type(v) is int for d in (0, 1)]
        numbers = ["42", "7", "0", "-7", "255"] if shape.numeric_text == "int" else ["42", "3.5", "-7", "0"]
        return numbers + near + lits, ["", "abc", "4x"]
    if lits:
        near = [v.upper() if v != v.upper() else v.lower() for v in lits[:3]]
        near += [f"{lits[0]}{_WORDS[0]}", f"{_WORDS[0]}{lits[0]}", _WORDS[3]]
        return lits + [f"{lits[0]} {_WORDS[1]}", "42", *strings[:10]], near + [""]
    # nothing tested on it here: words, digits, and the code's own words (what a parser further in looks for)
    return ["hello world", "Key", "a1b2", "42", *strings[:10]], ["", " "]


def _joined(sep: str, pieces: ValueShape, depth: int, lits: list) -> tuple[list, list]:
    """Strings made of pieces joined by `sep` (pieces read by position take their own shapes), and
    near misses: empty, one piece, the separator alone, one too many or too few pieces, a piece that
    is not what the code wants."""
    n = max(pieces.size, 2) if pieces.items or pieces.exact else 3
    columns, bad = [], []
    for i in range(n):
        shape = pieces.items.get(i) or pieces.item or ValueShape()
        good, wrong = values(shape if shape.kinds or shape.seps else shape.add("str"), depth=depth + 1)
        columns.append([p if type(p) is str else str(p) for p in good][:4] or _WORDS[:3])
        bad.append([w for w in wrong if type(w) is str][:2])
    rows = [[col[(k + i) % len(col)] for i, col in enumerate(columns)] for k in range(4)]
    if not pieces.exact:  # any number of pieces: also one and two
        rows += [rows[0][:1], rows[1][:2]]
    valid = [sep.join(r) for r in rows]
    first = rows[0]
    wrong = ["", first[0], sep, sep.join(first) + sep, sep.join(first[:-1]) if len(first) > 1 else first[0] + sep]
    wrong += [sep.join(first[:i] + [b] + first[i + 1:]) for i, col in enumerate(bad) for b in col[:2]]
    return valid + lits, wrong


def _sequences(shape: ValueShape, depth: int) -> tuple[list, list]:
    item = shape.item or ValueShape()
    if not item.kinds and not item.size:
        item.add("num")  # a list of something: numbers are the commonest
    inner = values(item, depth=depth + 1)[0] if depth < 3 else [1, 2, 3]
    inner = inner[:_MAX_ITEMS] or [1, 2, 3]
    n = max(shape.size, 3)
    valid = [inner[:n], list(reversed(inner[:5])), inner[:1], [inner[0]] * 2 + inner[1:3], inner[1:n + 1]]
    return valid, [[]] if shape.size == 0 else [[], inner[:shape.size - 1]]


def _tuples(shape: ValueShape, depth: int) -> tuple[list, list]:
    n = shape.size
    columns = []
    for i in range(n):
        part = shape.items.get(i) or shape.item or ValueShape()
        if not part.kinds and not part.size:
            part.add("num")  # unpacked and untouched, or only passed on: coordinates, counts
        column = values(part, depth=depth + 1)[0] if depth < 3 else [0]
        columns.append(column or [0])
    rows = [tuple(col[(k + i) % len(col)] for i, col in enumerate(columns)) for k in range(4)]
    rows.append(tuple(col[0] for col in columns))
    short = rows[0][:-1]
    return rows, [short, rows[0] + rows[0][-1:]] if shape.exact else [short]


def _mappings(shape: ValueShape, depth: int) -> tuple[list, list]:
    if shape.fields:  # keywords passed on: none, and each one alone
        valid: list = [{}]
        for key, (field_shape, default) in list(shape.fields.items())[:_MAX_ITEMS]:
            options = values(field_shape, default, depth=depth + 1)[0] if depth < 3 else []
            valid += [{key: v} for v in options[1:3] if v is not None]
        return valid, [{"zz": 1}]
    keys = [k for k in shape.keys if type(k) in (str, int)][:6]
    if not keys:
        key_values = values(shape.key, depth=depth + 1)[0] if shape.key is not None and depth < 3 else []
        keys = [k for k in key_values if type(k) in (str, int)][:3] or ["a", "b"]
    item = shape.item or ValueShape()
    if not item.kinds and not item.size:
        item.add("num")
    inner = (values(item, depth=depth + 1)[0] if depth < 3 else []) or [1]
    full = {k: inner[i % len(inner)] for i, k in enumerate(keys)}
    other = {k: inner[(i + 1) % len(inner)] for i, k in enumerate(keys)}
    wrong = [{}] + [{k: v for k, v in full.items() if k != drop} for drop in keys[:3]]
    return [full, other], wrong


def _same(a, b) -> bool:
    return type(a) is type(b) and repr(a) == repr(b)


def _unique(xs: list) -> list:
    out: list = []
    for x in xs:
        if not any(_same(x, y) for y in out):
            out.append(x)
    return out


def guess_inputs(shapes: list[ValueShape], defaults: dict[int, object], rng: random.Random, *, names: tuple[str, ...] = (),
                 strings: tuple = (), n: int = 24) -> list[tuple]:
    """Up to n argument tuples from the Shapes (`defaults`: literal defaults by position; `names`:
    the arguments' original names; `strings`: the code's string literals): each argument's accepted
    values in turn, then each one's near misses with the others accepted, then random mixes.
    [] when an argument needs what no literal is (a function, a file)."""
    columns = []
    for i, shape in enumerate(shapes):
        if shape.needs and i not in defaults:
            return []
        valid, wrong = values(shape, defaults.get(i, _NO_DEFAULT), name=names[i] if i < len(names) else "",
                              strings=strings)
        columns.append((valid or [None], wrong))
    rows = min(12, max(6, *(len(valid) for valid, _ in columns)))
    out = [tuple(valid[k % len(valid)] for valid, _ in columns) for k in range(rows)]
    base = out[0]
    for i, (_, wrong) in enumerate(columns):
        out += [base[:i] + (w,) + base[i + 1:] for w in wrong]
    out += [tuple(rng.choice(valid) for valid, _ in columns) for _ in range(6)]
    # `x in other`, `other[x]`: x taken from the other argument (a key, an item) as well as not
    for i, shape in enumerate(shapes):
        j = next((j for j, other in enumerate(shapes) if other is shape.member_of and j != i), None)
        if j is not None:
            out[1:1] = [args[:i] + (part,) + args[i + 1:] for args in out[:4] for part in parts_of(args[j])[:2]]
    return _unique(out)[:n]


def needs(shapes: list[ValueShape], defaults: dict[int, object]) -> str | None:
    """What an argument without a default needs that no literal is ("a function", "a file or stream"), or None."""
    return next((s.needs for i, s in enumerate(shapes) if s.needs and i not in defaults), None)


def changed_arguments(shapes: list[ValueShape]) -> list[int]:
    """The arguments the function changes in place (items set or deleted, appended to, sorted, ...)."""
    return [i for i, s in enumerate(shapes) if "mutated" in s.kinds and not s.kinds & {"str"}]
