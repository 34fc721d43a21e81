"""Anonymise a source function into the PAU shape, by AST only (nothing here runs the code).

`anonymize(code, entry_point)` drops code that imports unsafe modules, strips docstrings,
annotations and the entry's defaults, renames the entry to `test_func`, its parameters to
`arg0..argN`, and every other function to `helper0..`, so that no original name or docstring
survives; it keeps only the top-level code the entry reaches (`aac.data.callgraph`: unused helpers,
classes, imports and constants go). `with_validator` then puts the inferred input validator in front and calls it first.

Every kind of parameter becomes a positional argument of the black box, in the order a call binds
them: the positional ones, `*args` (one argument holding a tuple: the body first makes it one),
the keyword-only ones, `**kwargs` (one argument holding a dict). A parameter no literal can stand
for stays a keyword-only parameter of `test_func` at its default (`const0..`), not an argument: one
whose default is not a literal (`pat=re.compile(...).match`), or one the function calls and that
has a default (`key=None`, `cls=None`).
"""

from __future__ import annotations

import ast
import copy
import dataclasses
import inspect
import warnings
from dataclasses import dataclass, field

from aac.data.callgraph import keep_reachable

UNSAFE_MODULES = frozenset({"os", "sys", "subprocess", "shutil", "socket", "requests"})
# builtins that reach the file system, the interpreter or the terminal: a row using them is dropped
UNSAFE_NAMES = frozenset({"eval", "exec", "open", "compile", "__import__", "input", "breakpoint",
                          "exit", "quit", "globals", "locals", "vars", "__builtins__"})
ENTRY = "test_func"
VALIDATOR = "validate_input_args"


class RejectedCode(ValueError):
    """A source row the builder cannot use; `reason` is a short key for the summary."""

    def __init__(self, reason: str, detail: str = ""):
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason


@dataclass(frozen=True)
class Parameter:
    """One parameter of the entry as a call binds it."""

    name: str  # the original name
    kind: str  # "positional", "varargs" (*args), "keyword" (keyword-only) or "varkw" (**kwargs)
    default: ast.expr | None = None  # its default (`()` for *args, `{}` for **kwargs)
    fixed: bool = False  # kept at its default: no argument of the black box


@dataclass(frozen=True)
class Anonymized:
    source: str  # the anonymised module without validator; `test_func` is its last statement
    params: tuple[str, ...]  # original names of the black box's arguments (arg0..), for binding test calls
    defaults: dict[int, ast.expr] = field(default_factory=dict)  # argument position -> original default
    annotations: tuple[str | None, ...] = ()  # original annotations, a hint for seed inputs
    docstring: str | None = None  # the entry's original docstring (a description when the source has none)
    unreached: str = ""  # the top-level code dropped as unreached from the entry (original names: never stored)
    signature: tuple[Parameter, ...] = ()  # every parameter, fixed ones included, in binding order

    @property
    def kinds(self) -> tuple[str, ...]:
        """The kind of each argument (arg0..): "positional", "varargs", "keyword" or "varkw"."""
        return tuple(p.kind for p in self.signature if not p.fixed)

    @property
    def arity(self) -> int:
        return len(self.params)

    @property
    def header(self) -> str:
        return f"def {ENTRY}({', '.join(arg_names(self.arity))}):"


def arg_names(n: int) -> list[str]:
    return [f"arg{i}" for i in range(n)]


def literal_defaults(defaults: dict[int, ast.expr]) -> dict[int, object]:
    """The parameters' default expressions (by position) that are literals, as values."""
    out = {}
    for i, node in defaults.items():
        try:
            out[i] = ast.literal_eval(node)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            continue
    return out


def parse_quietly(text: str) -> ast.Module:
    """`ast.parse` without the SyntaxWarnings sloppy source code triggers (`1if x`, bad escapes)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntaxWarning)
        return ast.parse(text)


def anonymize(code: str, entry_point: str) -> Anonymized:
    try:
        tree = parse_quietly(code)
    except (SyntaxError, ValueError) as e:
        raise RejectedCode("syntax error", str(e)) from None
    check_safe(tree)
    entry = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == entry_point), None)
    if entry is None:
        raise RejectedCode("no entry function", entry_point)
    a = entry.args
    signature = _signature(entry)
    exposed = [p for p in signature if not p.fixed]
    if not exposed:
        raise RejectedCode("no arguments")
    params = tuple(p.name for p in exposed)
    defaults = {i: p.default for i, p in enumerate(exposed) if p.default is not None}
    by_name = {x.arg: x for x in a.posonlyargs + a.args + a.kwonlyargs + [a.vararg, a.kwarg] if x is not None}
    annotations = tuple(ast.unparse(by_name[n].annotation) if by_name[n].annotation else None for n in params)
    docstring = _entry_docstring(entry)

    strip_docstrings(tree)
    _StripAnnotations().visit(tree)
    fill_empty_bodies(tree)
    fixed = [p for p in signature if p.fixed]
    const_map = dict(zip((p.name for p in fixed), _fresh_names("const", len(fixed), _identifiers(tree))))
    _fill_self_calls(entry, entry_point, signature, const_map)
    a.posonlyargs, a.args, a.defaults, a.vararg, a.kwarg = [], [by_name[n] for n in params], [], None, None
    a.kwonlyargs, a.kw_defaults = [by_name[p.name] for p in fixed], [p.default for p in fixed]
    # *args and **kwargs arrive as one argument each: the body sees the tuple or dict it expects
    entry.body[:0] = [ast.parse(f"{p.name} = {'tuple' if p.kind == 'varargs' else 'dict'}({p.name})").body[0]
                      for p in exposed if p.kind in ("varargs", "varkw")]
    # only the code the entry reaches stays (before renaming: helpers are numbered densely)
    defined = {n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.ClassDef)}
    # `del name` at the top only tidies a module's namespace, and would run before the entry (which goes last)
    body = [s for s in tree.body if s is not entry and not is_demo_code(s, defined)
            and not (isinstance(s, ast.Delete) and all(isinstance(t, ast.Name) for t in s.targets))]
    tree.body = keep_reachable(body + [entry], {entry_point}, methods=True)
    unreached = [s for s in body if s not in tree.body and not isinstance(s, ast.Import | ast.ImportFrom)]

    methods = {id(s) for c in ast.walk(tree) if isinstance(c, ast.ClassDef) for s in c.body}
    functions = [n.name for n in ast.walk(tree)
                 if isinstance(n, ast.FunctionDef) and n.name != entry_point and id(n) not in methods]
    used = _identifiers(tree)
    helper_names = _fresh_names("helper", len(set(functions)), used)
    fn_map = {entry_point: ENTRY, **dict(zip(dict.fromkeys(functions), helper_names))}
    arg_map = dict(zip(params, arg_names(len(params)))) | const_map
    clash = (used - set(fn_map) - set(arg_map)) & ({ENTRY, VALIDATOR} | set(arg_map.values()))
    if clash:
        raise RejectedCode("name clash", ", ".join(sorted(clash)))
    _Rename(fn_map).visit(tree)
    _Rename(arg_map).visit(entry)
    # a generator's output is what it yields: a generator function, or one returning another's generator
    if any(isinstance(n, ast.Yield | ast.YieldFrom) for n in own_nodes(entry)):
        _wrap_entry(tree, "return list({call})")
    elif any(isinstance(n, ast.Yield | ast.YieldFrom) for n in ast.walk(tree)):
        _wrap_entry(tree, "result = {call}\nreturn list(result) if type(result).__name__ == 'generator' else result")
    ast.fix_missing_locations(tree)
    return Anonymized(source=ast.unparse(tree), params=params, defaults=defaults, annotations=annotations,
                      docstring=docstring, unreached=ast.unparse(ast.Module(body=unreached, type_ignores=[])),
                      signature=signature)


def _signature(entry: ast.FunctionDef) -> tuple[Parameter, ...]:
    """The entry's parameters in binding order, each marked fixed where no literal can stand for it."""
    a = entry.args
    positional = a.posonlyargs + a.args
    # what it calls, or hands to be called: `key(x)`, `sorted(xs, key=key)`, `map(f, xs)`
    calls = [n for n in ast.walk(entry) if isinstance(n, ast.Call)]
    called = {n.func.id for n in calls if isinstance(n.func, ast.Name)}
    called |= {k.value.id for n in calls for k in n.keywords if k.arg == "key" and isinstance(k.value, ast.Name)}
    called |= {n.args[0].id for n in calls if isinstance(n.func, ast.Name) and n.func.id in ("map", "filter")
               and n.args and isinstance(n.args[0], ast.Name)}
    out = []

    def add(arg: ast.arg, kind: str, default: ast.expr | None) -> None:
        fixed = default is not None and kind in ("positional", "keyword") and (
            arg.arg in called or not _is_literal(default))
        out.append(Parameter(arg.arg, kind, default, fixed))

    first_default = len(positional) - len(a.defaults)
    for i, arg in enumerate(positional):
        add(arg, "positional", a.defaults[i - first_default] if i >= first_default else None)
    if a.vararg:
        add(a.vararg, "varargs", ast.Tuple(elts=[], ctx=ast.Load()))
    for arg, default in zip(a.kwonlyargs, a.kw_defaults):
        add(arg, "keyword", default)
    if a.kwarg:
        add(a.kwarg, "varkw", ast.Dict(keys=[], values=[]))
    return tuple(out)


def _is_literal(node: ast.expr) -> bool:
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


def bind_call(signature: tuple[Parameter, ...], args: list, kwargs: dict, *, default, pack_tuple, pack_dict) -> tuple[list, dict] | None:
    """How a call with `args` and `kwargs` binds to the parameters: (the black box's arguments in
    order, the values given to fixed parameters by name), or None when it does not bind. `default(param)`
    gives a missing parameter's value (None: none), `pack_tuple`/`pack_dict` build what *args and
    **kwargs receive; values are whatever the caller works with (literals, AST nodes)."""
    positional = [p for p in signature if p.kind == "positional"]
    varargs = next((p for p in signature if p.kind == "varargs"), None)
    varkw = next((p for p in signature if p.kind == "varkw"), None)
    if len(args) > len(positional) and varargs is None:
        return None
    given = dict(zip((p.name for p in positional), args))
    named = {p.name for p in signature if p.kind in ("positional", "keyword")}
    extra = {k: v for k, v in kwargs.items() if k not in named}
    if (extra and varkw is None) or set(kwargs) & set(given):
        return None
    given |= {k: v for k, v in kwargs.items() if k in named}
    out, fixed = [], {}
    for p in signature:
        if p.fixed:  # it keeps its default unless the call gives it
            if p.name in given:
                fixed[p.name] = given[p.name]
        elif p.kind == "varargs":
            out.append(pack_tuple(list(args[len(positional):])))
        elif p.kind == "varkw":
            out.append(pack_dict(extra))
        elif p.name in given:
            out.append(given[p.name])
        elif p.default is None or (value := default(p)) is None:
            return None
        else:
            out.append(value)
    return out, fixed


def own_nodes(func: ast.FunctionDef):
    """The nodes of a function's body that are its own (not those of functions, lambdas or classes inside)."""
    todo = list(func.body)
    while todo:
        node = todo.pop()
        yield node
        todo += [c for c in ast.iter_child_nodes(node)
                 if not isinstance(c, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef)]


def returns_value(source: str) -> bool:
    """Whether `test_func` of an anonymised source can return something other than None."""
    entry = parse_quietly(source).body[-1]
    return any(isinstance(n, ast.Return) and n.value is not None
               and not (isinstance(n.value, ast.Constant) and n.value.value is None) for n in own_nodes(entry))


def returning_arguments(anon: Anonymized, positions: list[int]) -> Anonymized:
    """A function that returns nothing but changes arguments in place: the black box returns them
    after the call (the one, or a tuple of them), so what it does can be seen."""
    tree = parse_quietly(anon.source)
    names = arg_names(anon.arity)
    result = names[positions[0]] if len(positions) == 1 else "(" + ", ".join(names[i] for i in positions) + ")"
    _wrap_entry(tree, "{call}\nreturn " + result)
    ast.fix_missing_locations(tree)
    return dataclasses.replace(anon, source=ast.unparse(tree))


def _wrap_entry(tree: ast.Module, template: str) -> None:
    """The entry (last) becomes a helper, self-calls included, that a new `test_func` with the same
    arguments calls: `template` is that one's body, `{call}` the helper's call."""
    entry = tree.body[-1]
    helper = _fresh_names("helper", 1, _identifiers(tree))[0]
    _Rename({ENTRY: helper}).visit(entry)
    args = ", ".join(a.arg for a in entry.args.args)
    body = template.format(call=f"{helper}({args})").replace("\n", "\n    ")
    tree.body.append(ast.parse(f"def {ENTRY}({args}):\n    {body}\n").body[0])


def fingerprint(code: str, entry_point: str) -> str | None:
    """The normalised source of a function (anonymised: names, docstrings, annotations and
    formatting gone), so that copies of one function under other names compare equal; None when
    the code is rejected anyway."""
    try:
        return anonymize(code, entry_point).source
    except RejectedCode:
        return None


def with_validator(anon: Anonymized, validator_source: str) -> str:
    """The PAU `test_func_validated`: validator, helper code, then `test_func` calling it first."""
    tree = ast.parse(anon.source)
    entry = tree.body[-1]
    assert isinstance(entry, ast.FunctionDef) and entry.name == ENTRY
    call = ast.parse(f"{VALIDATOR}({', '.join(arg_names(anon.arity))})").body[0]
    entry.body.insert(0, call)
    tree.body = ast.parse(validator_source).body + tree.body
    ast.fix_missing_locations(tree)
    return ast.unparse(tree)


def check_safe(tree: ast.AST) -> None:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            mods = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            mods = [node.module or ""]
        else:
            mods = []
        bad = [m for m in mods if m.split(".")[0] in UNSAFE_MODULES]
        if bad:
            raise RejectedCode("unsafe import", bad[0])
        if isinstance(node, ast.Name) and node.id in UNSAFE_NAMES:
            raise RejectedCode("unsafe builtin", node.id)
        if isinstance(node, ast.AsyncFunctionDef | ast.Await):
            raise RejectedCode("async code")


def _is_bare_string(stmt: ast.stmt) -> bool:
    return (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)
            and isinstance(stmt.value.value, str))


def _entry_docstring(entry: ast.FunctionDef) -> str | None:
    """The first bare string of the body: some sources put an import before the docstring."""
    doc = next((s.value.value for s in entry.body if _is_bare_string(s)), None)
    return inspect.cleandoc(doc) if doc else None


def strip_docstrings(tree: ast.AST) -> None:
    """Every bare string statement is a docstring or a no-op comment; none of them may survive."""
    for node in ast.walk(tree):
        for name in ("body", "orelse", "finalbody"):
            stmts = getattr(node, name, None)
            if isinstance(stmts, list) and any(isinstance(s, ast.stmt) and _is_bare_string(s) for s in stmts):
                setattr(node, name, [s for s in stmts if not _is_bare_string(s)])


class _StripAnnotations(ast.NodeTransformer):
    def visit_arg(self, node: ast.arg) -> ast.arg:
        node.annotation = None
        return node

    def visit_FunctionDef(self, node):
        node.returns = None
        self.generic_visit(node)
        return node

    def visit_AnnAssign(self, node: ast.AnnAssign):
        if node.value is None:
            return None  # a bare declaration does nothing at run time
        return ast.copy_location(ast.Assign(targets=[node.target], value=node.value), node)


def fill_empty_bodies(tree: ast.AST) -> None:
    """Stripping can empty a block (a body that was only a docstring or a declaration)."""
    for node in ast.walk(tree):
        if not isinstance(node, ast.Module) and getattr(node, "body", None) == []:
            node.body = [ast.Pass()]


def _fill_self_calls(entry: ast.FunctionDef, name: str, signature: tuple[Parameter, ...], const_map: dict[str, str]) -> None:
    """Recursive calls may lean on the defaults we strip: make them pass every argument by position
    (a fixed parameter they give stays a keyword, under its new name)."""
    for node in ast.walk(entry):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name):
            continue
        if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
            raise RejectedCode("unsupported self call")
        bound = bind_call(signature, node.args, {k.arg: k.value for k in node.keywords},
                          default=lambda p: copy.deepcopy(p.default),
                          pack_tuple=lambda xs: ast.Tuple(elts=xs, ctx=ast.Load()),
                          pack_dict=lambda d: ast.Dict(keys=[ast.Constant(k) for k in d], values=list(d.values())))
        if bound is None:
            raise RejectedCode("unsupported self call")
        node.args, node.keywords = bound[0], [ast.keyword(arg=const_map[k], value=v) for k, v in bound[1].items()]


def _identifiers(tree: ast.AST) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.FunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.alias):
            names.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, ast.Global | ast.Nonlocal):
            names.update(node.names)
    return names


def _fresh_names(prefix: str, n: int, used: set[str]) -> list[str]:
    out, i = [], 0
    while len(out) < n:
        if f"{prefix}{i}" not in used:
            out.append(f"{prefix}{i}")
        i += 1
    return out


class _Rename(ast.NodeTransformer):
    def __init__(self, mapping: dict[str, str]):
        self.mapping = mapping

    def visit_Name(self, node: ast.Name) -> ast.Name:
        node.id = self.mapping.get(node.id, node.id)
        return node

    def visit_arg(self, node: ast.arg) -> ast.arg:
        node.arg = self.mapping.get(node.arg, node.arg)
        return node

    def visit_FunctionDef(self, node):
        node.name = self.mapping.get(node.name, node.name)
        self.generic_visit(node)
        return node

    def visit_ClassDef(self, node: ast.ClassDef) -> ast.ClassDef:
        """Method names are attributes, not names in scope: they keep their names."""
        methods = [(s, s.name) for s in node.body if isinstance(s, ast.FunctionDef)]
        self.generic_visit(node)
        for s, name in methods:
            s.name = name
        return node

    def visit_Global(self, node):
        node.names = [self.mapping.get(n, n) for n in node.names]
        return node

    visit_Nonlocal = visit_Global


def is_demo_code(stmt: ast.stmt, defined: set[str]) -> bool:
    """Top-level expressions (prints, stray calls), `if __name__ == ...` blocks and statements
    that call the module's own functions (`result = f(x)`, `if f(s): print(...)`) are demo code:
    kept, they would run before `test_func` (which goes last) is defined."""
    if isinstance(stmt, ast.Expr):
        return True
    if isinstance(stmt, ast.If) and "__name__" in ast.unparse(stmt.test):
        return True
    if isinstance(stmt, ast.FunctionDef | ast.ClassDef | ast.Import | ast.ImportFrom):
        return False
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in defined
               for n in ast.walk(stmt))
