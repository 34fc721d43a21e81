"""The layout's promise, checked on the source: data flows one way, so no package of `aac` imports
back up the flow (no cycle between packages) and no file cycle inside one. Every `import aac.X` counts,
at module level or inside a function, TYPE_CHECKING ones included."""

from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "aac"


def _modules() -> dict[str, Path]:
    out = {}
    for path in PKG.rglob("*.py"):
        parts = path.relative_to(PKG.parent).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def _imports(mod: str, path: Path, known: set[str]) -> set[str]:
    """The aac modules `mod` imports (a `from pkg import name` counts pkg.name where that is a module)."""
    package = mod if path.name == "__init__.py" else mod.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(up + ([base] if base else []))
            found.add(base)
            found |= {f"{base}.{a.name}" for a in node.names}
    return {m for m in found if m in known and m != mod}


def _room(mod: str) -> str:
    parts = mod.split(".")
    return parts[1] if len(parts) > 1 else "aac"


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def _graphs() -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    modules = _modules()
    rooms: dict[str, set[str]] = {}
    files: dict[str, set[str]] = {}
    for mod, path in modules.items():
        for target in _imports(mod, path, set(modules)):
            a, b = _room(mod), _room(target)
            if a != b:
                rooms.setdefault(a, set()).add(b)
            else:
                files.setdefault(mod, set()).add(target)
    return rooms, files


def test_no_cycle_between_packages_of_aac():
    rooms, _ = _graphs()
    assert _cycles(rooms) == []
    # the directions the design names (ARCHITECTURE: engines and sandbox know nothing of RL)
    for low in ("engines", "sandbox"):
        assert not rooms.get(low, set()) & {"rollout", "critic", "rewards", "learner", "train", "eval", "env"}
    assert "learner" not in rooms.get("rollout", set()) and "env" not in rooms.get("learner", set())
    # training sits below the commands built on it: SFT's traces, the entries, the user-facing tools (the replay of
    # recorded calls that both the episode log and SFT use lives in env: aac/env/replay.py)
    assert not rooms.get("training", set()) & {"traces", "sft", "train", "describe", "export", "view", "preflight"}
    # the run folder's module and the command-line front door load no torch, Hydra or engine (aac.view opens fast)
    assert rooms.get("run_dir", set()) <= {"errors"}


def test_no_file_cycle_inside_a_package():
    _, files = _graphs()
    assert _cycles(files) == []


def test_the_checker_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["a", "b"]]
