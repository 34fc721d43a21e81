"""The builder's own-code sources (docs/sources.md): `module:` (a package's public functions, with what
they reach inlined), the folder output split by task id, and the builder's one-line errors."""

from __future__ import annotations

import json
import os
import sys
import textwrap

import pytest

from aac.data.build import rows_from_source
from aac.data.sources import SourceError, read_tasks
from aac.env.rows import to_row
from aac.sandbox.pool import SandboxPool
from aac.sandbox.values import outputs_match

# a small package written for this test: helpers in a private module, imported relatively under
# another name; a function of each kind the sandbox cannot run alone
PACKAGE = {
    "__init__.py": '''
        """Acme's tools."""
        from acme_tools.prices import net_price

        __all__ = ["net_price", "greet"]

        try:
            from ._version import VERSION
        except ImportError:
            VERSION = "0"


        def greet(name: str) -> str:
            """Greet a customer by name, title-cased."""
            return "Hello, " + name.title() + "!"
        ''',
    "_util.py": '''
        ROUND = 2


        def clamp(x, lo, hi):
            return max(lo, min(hi, x))
        ''',
    "prices.py": '''
        """Prices."""
        from __future__ import annotations

        import os
        from typing import TYPE_CHECKING

        from ._util import ROUND
        from ._util import clamp as _clamp

        if TYPE_CHECKING:
            from .orders import Order

        VAT = {"de": 0.19, "fr": 0.2}


        def net_price(gross: float, country: str) -> float:
            """Net price of a gross price for a country's VAT rate (other countries pay none).

            >>> net_price(119.0, "de")
            100.0
            """
            return round(gross / (1 + VAT.get(country, 0.0)), ROUND)


        def discount(price: float, percent: int) -> float:
            """Apply a percentage discount to a price, the percentage clamped to [0, 100]."""
            if percent > 50:
                percent = 50 + (percent - 50) // 2
            return round(price * (1 - _clamp(percent, 0, 100) / 100), ROUND)


        def env_rate(name):
            """A rate read from the environment."""
            return float(os.environ.get(name, "0"))


        async def fetch(x):
            """Fetch x."""
            return x


        class Cart:
            """A cart."""


        def _private(x):
            return x


        def total(*prices):
            """The sum of the prices."""
            return sum(prices)
        ''',
    "net.py": '''
        import urllib.request

        import acme_not_installed


        def fetch_page(url):
            """Fetch a page."""
            return urllib.request.urlopen(url).read()


        def use_missing(x):
            """Call a module that is not installed."""
            return acme_not_installed.f(x)


        def lazy(x):
            """Look a rate up through the package."""
            from . import prices
            return prices.VAT[x]
        ''',
    "tests/test_prices.py": '''
        def test_nothing(x):
            """Not a function of the package."""
            return x
        ''',
}
KEPT = {"acme_tools.greet", "acme_tools.prices.net_price", "acme_tools.prices.discount"}
DROPPED = {"a class (only functions are built)": 1, "an async function": 1, "unsafe import": 1, "varargs": 1,
           "network import (urllib)": 1, "imports a module that is not installed (acme_not_installed)": 1,
           "imports from its own package inside a function": 1}


@pytest.fixture(scope="module")
def package(tmp_path_factory):
    root = tmp_path_factory.mktemp("pkgroot")
    for name, text in PACKAGE.items():
        path = root / "acme_tools" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())
    with pytest.MonkeyPatch.context() as mp:
        mp.syspath_prepend(str(root))
        yield root


@pytest.fixture(scope="module")
def built(package):
    return rows_from_source("module:acme_tools")


def test_module_source_keeps_public_functions_and_counts_the_rest_by_reason(built):
    instances, summary = built
    assert {i.uid for i in instances} == KEPT
    assert summary.rows_in == len(KEPT) + sum(DROPPED.values()) and dict(summary.dropped) == DROPPED
    text = summary.text()
    assert all(f"dropped    1: {reason}" in text for reason in DROPPED)


def test_module_rows_carry_what_the_function_reaches_anonymised(built, package, monkeypatch):
    by_id = {i.uid: i for i in built[0]}
    row = by_id["acme_tools.prices.discount"]
    assert row.source == "module" and row.header == "def test_func(arg0, arg1):"
    # its docstring is the gold description (the function's name stays a word of it)
    assert row.description == "Apply a percentage discount to a price, the percentage clamped to [0, 100]."
    # the helper and the constant of the private module are inlined, renamed; nothing else came along
    assert "ROUND = 2" in row.code and "helper0" in row.code and "VAT" not in row.code
    assert not any(word in row.code for word in ("discount", "def clamp", "import os", "from .", "Apply"))
    net = by_id["acme_tools.prices.net_price"]
    assert ("(119.0, 'de')", 100.0) in net.train_examples + net.test_examples  # its doctest call is a seed
    # every stored example reproduces in the sandbox from the row's code alone (no package there)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p != str(package)])
    with SandboxPool(workers=1) as pool:
        jobs = [(inst.code, i, o) for inst in built[0] for i, o in inst.train_examples + inst.test_examples]
        results = pool.call_many([(code, i) for code, i, _ in jobs], timeout_s=5)
    assert all(r.ok and outputs_match(o, r.normalized) for (_, _, o), r in zip(jobs, results))


def test_one_function_is_built_as_in_its_package(built, package):
    (row,), summary = rows_from_source("module:acme_tools.prices.discount")
    assert summary.rows_in == 1
    assert to_row(row) == to_row(next(i for i in built[0] if i.uid == row.uid))  # seeded: the same row
    assert [t.task_id for t in read_tasks("module:acme_tools.prices._private")] == ["acme_tools.prices._private"]


@pytest.mark.parametrize("target, message", [
    ("acme_nowhere", "module:acme_nowhere: no importable module or function"),
    ("acme_tools.prices.nothing", "module:acme_tools.prices.nothing: acme_tools.prices defines no top-level function 'nothing'"),
    ("math", "module:math: math has no Python source"),
    ("", "source 'module' needs a name"),
])
def test_module_targets_that_name_nothing_are_one_line_errors(package, target, message):
    with pytest.raises(SourceError, match="^" + message.replace("(", r"\(")):
        list(read_tasks(f"module:{target}"))


def test_cli_splits_a_folder_by_task_id_and_fails_on_an_empty_build(package, run_module, tmp_path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(package), os.environ.get("PYTHONPATH", "")])}
    out = tmp_path / "rows"
    proc = run_module("aac.data.build", "--source", "module:acme_tools", "--out", str(out), "--test-fraction", "0.3",
                      env=env)
    assert proc.returncode == 0, proc.stderr
    assert "dropped    1: network import (urllib)" in proc.stdout and f"wrote 2 train and 1 test rows to {out}/" in proc.stdout
    ids = {split: [json.loads(line)["task_id"] for line in (out / f"{split}.jsonl").open()] for split in ("train", "test")}
    assert set(ids["train"]) | set(ids["test"]) == KEPT and not set(ids["train"]) & set(ids["test"])
    # nothing kept: a failure naming why, and no file
    proc = run_module("aac.data.build", "--source", "module:acme_tools.net", "--out", str(tmp_path / "none.jsonl"), env=env)
    assert proc.returncode == 2 and not (tmp_path / "none.jsonl").exists()
    assert proc.stderr.strip().splitlines() == [
        "error: module:acme_tools.net: kept no row of 3 read (dropped: 1 network import (urllib), 1 imports a module that "
        "is not installed (acme_not_installed), 1 imports from its own package inside a function; see docs/sources.md); "
        "nothing written"]
