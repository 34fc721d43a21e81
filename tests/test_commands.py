"""One command-line convention (docs/usage.md, "Commands"; aac/cli.py): every `python -m aac.X` command takes
`key=value` arguments only, through `aac.cli` (a Hydra app, a config composed as one, or `parse_keys`), has a
`main(argv=None)` entry and its console script in pyproject.toml's `[project.scripts]`. The venv is shared, so
the table is checked against the modules rather than reinstalled; one console script's entry runs here for real."""

from __future__ import annotations

import ast
import functools
import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "aac"
# `__main__` guards that are no user's command: processes aac starts by path
INTERNAL = {"aac.sandbox._worker": "the sandbox's zygote, loaded by path in the isolated child",
            "aac.data.coverage": "the coverage runner's child process, run by path"}
ENTRY_CALLS = {"run_hydra", "compose_argv", "parse_keys"}  # aac/cli.py: the only ways a command reads its line


@functools.cache
def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text())


def _module(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts)


def _has_main_guard(tree: ast.Module) -> bool:
    return any(isinstance(n, ast.If) and isinstance(n.test, ast.Compare) and isinstance(n.test.left, ast.Name)
               and n.test.left.id == "__name__" for n in tree.body)


def commands() -> dict[str, Path]:
    """Every `python -m aac.X` command: module name (`aac.eval.__main__`) -> its file."""
    found = {}
    for path in sorted(PKG.rglob("*.py")):
        if path.name == "__main__.py" or _has_main_guard(_tree(path)):
            found[_module(path)] = path
    return {m: p for m, p in found.items() if m not in INTERNAL}


def scripts() -> dict[str, str]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]


def _main(path: Path) -> ast.FunctionDef:
    mains = [n for n in _tree(path).body if isinstance(n, ast.FunctionDef) and n.name == "main"]
    assert mains, f"{path}: no top-level main()"
    return mains[0]


def test_every_command_has_its_console_script_and_nothing_else_does():
    cmds, table = commands(), scripts()
    assert len(cmds) >= 17, sorted(cmds)  # train, eval, describe, export, view, preflight, sft, prepare, ...
    assert sorted(table.values()) == sorted(f"{m}:main" for m in cmds)
    assert all(name.startswith("aac-") for name in table)
    must = {"aac-train", "aac-eval", "aac-build", "aac-describe", "aac-export", "aac-view", "aac-preflight", "aac-sft"}
    assert must <= set(table)
    for module in cmds:  # the modules named in INTERNAL still exist and still are no command
        assert module not in INTERNAL
    assert all((ROOT / Path(*m.split("."))).with_suffix(".py").is_file() for m in INTERNAL)


def test_every_command_reads_key_value_through_aac_cli():
    """A `main(argv=None)` entry that calls run_hydra, compose_argv or parse_keys; argparse nowhere in aac."""
    for module, path in commands().items():
        main = _main(path)
        args = main.args
        assert len(args.args) == 1 and len(args.defaults) == 1 and isinstance(args.defaults[0], ast.Constant) \
            and args.defaults[0].value is None, f"{module}: main(argv=None)"
        called = {n.func.id if isinstance(n.func, ast.Name) else getattr(n.func, "attr", "")
                  for n in ast.walk(main) if isinstance(n, ast.Call)}
        assert called & ENTRY_CALLS, f"{module}: main() reads its command line through none of {ENTRY_CALLS}"
    users = [p for p in PKG.rglob("*.py") if any(isinstance(n, (ast.Import, ast.ImportFrom)) and "argparse" in
                                                 ([a.name for a in n.names] if isinstance(n, ast.Import) else [n.module])
                                                 for n in ast.walk(_tree(p)))]
    assert users == [], users


def _plain_commands() -> list[str]:
    """The commands that take no config: their keys are `parse_keys`'s."""
    return [m for m, p in commands().items()
            if any(isinstance(n, ast.Call) and getattr(n.func, "id", "") == "parse_keys" for n in ast.walk(_main(p)))]


@pytest.mark.parametrize("module", _plain_commands())
def test_help_lists_the_keys_and_a_flag_is_one_line(module, capsys):
    main = importlib.import_module(module).main
    with pytest.raises(SystemExit) as e:
        main(["--help"])
    assert e.value.code == 0 and "keys:" in capsys.readouterr().out
    with pytest.raises(SystemExit) as e:
        main(["--out", "x"])
    line = str(e.value.code)
    assert line.startswith("aac: usage: '--out': every argument is KEY=VALUE (keys: ") and "\n" not in line
    with pytest.raises(SystemExit, match=r"^aac: usage: nope= is not a key of this command") if "overrides=True" not in \
            commands()[module].read_text() else pytest.raises(SystemExit, match=r"^aac: "):
        main(["nope=1"])


def test_the_console_script_aac_view_runs_in_process(tmp_path, monkeypatch, capsys):
    """As the installed `aac-view` script does it: its [project.scripts] target imported, sys.argv set, main()."""
    module, func = scripts()["aac-view"].split(":")
    evaluated = tmp_path / "eval"
    evaluated.mkdir()
    (evaluated / "episodes.jsonl").write_text(json.dumps(
        {"uid": "f", "concluded": True, "num_queries": 1, "description": "adds one", "steps": [
            {"index": 0, "phase": "input", "response": "(1,)", "parsed": "(1,)", "parse_ok": True,
             "call": {"output_repr": "2", "error": None}}]}) + "\n")
    monkeypatch.setattr(sys, "argv", ["aac-view", f"dirs={evaluated}", f"out={tmp_path / 'page.html'}"])
    assert getattr(importlib.import_module(module), func)() is None
    assert capsys.readouterr().out.strip() == str((tmp_path / "page.html").resolve())
    assert "adds one" in (tmp_path / "page.html").read_text()


def test_the_viewers_command_line_loads_no_torch_hydra_or_omegaconf():
    loaded = subprocess.run([sys.executable, "-c", "import sys, aac.view.__main__; print(sorted(m for m in "
                             "('torch', 'hydra', 'omegaconf', 'ray', 'numpy') if m in sys.modules))"],
                            capture_output=True, text=True, cwd=ROOT, check=True).stdout.strip()
    assert loaded == "[]"
