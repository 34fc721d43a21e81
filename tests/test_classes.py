"""A package's classes as rows of the stateful domain (aac/data/classes.py), and its own tests as the
builder's first inputs (aac/data/test_seeds.py): on tests/data/pkgs/shopfloor (a shop library written
as in-house code is: docstrings, no doctests, no annotations; tests in the package and beside it) and
on small packages written here for the cases around it."""

from __future__ import annotations

import json
import re
import textwrap

import pytest
from conftest import ROOT

from aac.data.build import rows_from_source, write_rows
from aac.data.stateful import verify
from aac.data.test_seeds import package_tests
from aac.datasets import load_instances
from aac.env.domains import get_domain
from aac.env.domains.stateful import interface, sequence_calls
from aac.env.protocol import sandbox_caller
from aac.sandbox.pool import SandboxPool

PKGS = ROOT / "tests" / "data" / "pkgs"
STATEFUL = get_domain("stateful")
SHOP_CLASSES = {"shopfloor.basket.Basket", "shopfloor.loyalty.LoyaltyAccount", "shopfloor.stockroom.Stockroom"}
SHOP_FUNCTIONS = {f"shopfloor.pricing.{f}" for f in ("price_with_vat", "bulk_price", "format_price", "parse_sku")}


@pytest.fixture(scope="module")
def shop():
    with pytest.MonkeyPatch.context() as mp:
        mp.syspath_prepend(str(PKGS))
        yield rows_from_source("module:shopfloor")


def _rows(instances, uid):
    return next(i for i in instances if i.uid == uid)


def test_a_package_builds_its_classes_as_stateful_rows(shop):
    instances, summary = shop
    assert {i.uid for i in instances if i.domain == "stateful"} == SHOP_CLASSES
    assert {i.uid for i in instances if i.domain == "pau"} == SHOP_FUNCTIONS
    # 4 functions, 3 classes with state and an exception class, which has nothing to call
    assert summary.rows_in == 8 and dict(summary.dropped) == {"class: no public methods": 1}
    for inst in instances:
        if inst.domain == "stateful":
            STATEFUL.check_instance(inst)
            assert inst.source == "module" and len(inst.train_examples) == 2 and len(inst.test_examples) >= 4
    assert verify([i for i in instances if i.domain == "stateful"])["rows_not_reproduced"] == []
    coverage = dict(zip((i.uid for i in instances), summary.coverages))
    assert all(coverage[uid] >= 0.6 for uid in SHOP_CLASSES), coverage  # 0.75-1.0 on a quiet machine


def test_a_class_row_is_the_class_as_written_behind_the_anonymised_interface(shop):
    row = _rows(shop[0], "shopfloor.loyalty.LoyaltyAccount")
    arities = interface(row.header)
    assert arities["new"] == 2 and sorted(arities.values()) == [0, 1, 1, 2]  # earn, redeem, the status property
    assert "class LoyaltyAccount:" in row.code and "class Obj(LoyaltyAccount):" in row.code
    assert '"""' not in row.code and "till shows" not in row.code  # docstrings are the gold side only
    # the gold description: the class docstring, then each member by its interface name
    assert row.description.startswith("A member's loyalty account: points earned per whole euro")
    for name in ("m0(", "m1(", "m2(): The member's name, tier and points"):
        assert name in row.description
    # no seeds for this class: the constructor's tier came from its default; the refusals are results,
    # and every test sequence ends otherwise than the others
    results = [r for _, rs in row.train_examples + row.test_examples for r in rs]
    assert any(isinstance(r, dict) and "multiple of 100" in r["raised"] for r in results)
    assert any(isinstance(r, dict) and "not enough points" in r["raised"] for r in results)
    assert len({json.dumps(rs) for _, rs in row.test_examples}) == len(row.test_examples)


def test_the_packages_tests_seed_classes_and_functions(shop):
    instances, _ = shop
    # the test file in the package (tests/test_basket.py) and the one beside it (../tests/test_stock.py)
    basket = _rows(instances, "shopfloor.basket.Basket")
    stock = _rows(instances, "shopfloor.stockroom.Stockroom")
    shown = [sequence_calls(lit) for lit, _ in basket.train_examples + basket.test_examples]
    assert any(("new", (7,)) in calls for calls in shown)  # Basket(vat_rate=7), bound by keyword
    assert sequence_calls(stock.train_examples[0][0])[:2] == [("new", (50,)), ("m3", ("TS-0042-XL", 10))]
    # parse_sku has no doctest and a string the probes do not guess: the test's call is its first input
    sku = _rows(instances, "shopfloor.pricing.parse_sku")
    assert "('ts-0042-xl',)" in [inp for inp, _ in sku.train_examples + sku.test_examples]


def test_a_class_row_plays_in_the_stateful_domain(shop):
    row = _rows(shop[0], "shopfloor.stockroom.Stockroom")
    with SandboxPool(workers=1) as pool:
        box = STATEFUL.black_box(row, sandbox_caller(pool))
        m_receive, m_reserve, m_free = _method(row, "receive"), _method(row, "reserve"), _method(row, "free")
        assert box.call("new(20)", 5).output is None
        assert box.call(f"{m_receive}('cap', 8)", 5).output == 8
        assert box.call(f"{m_reserve}('cap', 3)", 5).output == 1  # the reservation's number
        assert box.call(f"{m_free}('cap')", 5).output == 5
        assert "OutOfStock" in box.call(f"{m_reserve}('cap', 6)", 5).error


def _method(row, original: str) -> str:
    """The interface name of a method: the wrapper line that calls it."""
    lines = row.code.splitlines()
    k = next(i for i, line in enumerate(lines) if f"return self.{original}(" in line)
    return lines[k - 1].split("def ")[1].split("(")[0]


def test_a_build_of_functions_and_classes_writes_each_domain_apart(shop, tmp_path, capsys):
    instances, summary = shop
    write_rows(str(tmp_path / "shop"), instances, summary)
    out = capsys.readouterr().out
    assert "wrote 3 train and 1 test rows to" in out and "(env.domain=stateful)" in out
    assert len(load_instances(str(tmp_path / "shop"), split="train")) == 3  # the functions, as before
    classes = load_instances(str(tmp_path / "shop" / "stateful"), split="train", domain="stateful") + \
        load_instances(str(tmp_path / "shop" / "stateful"), split="test", domain="stateful")
    assert {i.uid for i in classes} == SHOP_CLASSES
    write_rows(str(tmp_path / "shop.jsonl"), instances, summary)
    assert len(load_instances(str(tmp_path / "shop.stateful.jsonl"), split="all", domain="stateful")) == 3


# ---------------------------------------------------------------- the cases around it

QUIRKS = {
    "__init__.py": '''
        """Odd corners of in-house classes."""
        ''',
    "books.py": '''
        import os
        from dataclasses import dataclass


        class Shelf:
            """Books on a shelf, in the order they were put there."""

            def __init__(self, size=3):
                self.size = size
                self.books = []

            def put(self, title):
                """Put a book at the end; a full shelf refuses it with ValueError."""
                if len(self.books) >= self.size:
                    raise ValueError("shelf full")
                self.books.append(title)
                return len(self.books)

            def take(self):
                """Take the last book put there."""
                return self.books.pop()

            def save(self, path):
                with open(os.path.join(path, "shelf.txt"), "w") as f:
                    f.write("\\n".join(self.books))

            def backup(self):
                self.save("/tmp")


        class LabelledShelf(Shelf):
            """A shelf with a label, which counts its books too.

            >>> s = LabelledShelf("poetry", 2)
            >>> s.put("Odes")
            1
            >>> s.label_text()
            """

            def __init__(self, label, size=3):
                super().__init__(size)
                self.label = label

            def label_text(self):
                return f"{self.label}: {len(self.books)}"


        @dataclass
        class Coupon:
            """A coupon worth some percent, usable a number of times."""

            percent: int
            uses: int = 1

            def redeem(self, price):
                """The price after the coupon, which is then used once more; none left: ValueError."""
                if self.uses <= 0:
                    raise ValueError("used up")
                self.uses -= 1
                return round(price * (100 - self.percent) / 100, 2)
        ''',
    "odd.py": '''
        import random


        class Ticket:
            """A ticket with a random code."""

            def __init__(self):
                self.code = random.random()

            def read(self):
                return self.code


        class Session:
            """A session on a database connection."""

            def __init__(self, connection):
                self.cursor = connection.cursor()

            def run(self, sql):
                return self.cursor.execute(sql)


        class Failure(Exception):
            """Something failed."""


        class OverLimit(Exception):
            """A total over its limit."""

            def __init__(self, total, limit):
                super().__init__(total, limit)
                self.total, self.limit = total, limit

            def __str__(self):
                return f"{self.total} is {self.total - self.limit} over the limit"
        ''',
}


@pytest.fixture(scope="module")
def quirks(tmp_path_factory):
    root = tmp_path_factory.mktemp("quirks")
    for name, text in QUIRKS.items():
        (root / "quirks").mkdir(exist_ok=True)
        (root / "quirks" / name).write_text(textwrap.dedent(text).lstrip())
    with pytest.MonkeyPatch.context() as mp:
        mp.syspath_prepend(str(root))
        yield rows_from_source("module:quirks")


def test_classes_that_cannot_be_played_are_dropped_with_their_reason(quirks):
    instances, summary = quirks
    assert {i.uid for i in instances} == {"quirks.books.Shelf", "quirks.books.LabelledShelf", "quirks.books.Coupon",
                                          "quirks.odd.OverLimit"}
    dropped = dict(summary.dropped)
    assert dropped.pop("class: no constructor call runs") == 1  # Session needs a connection object
    assert dropped.pop("class: no public methods") == 1  # Failure: nothing to call, no constructor arguments
    (reason,) = dropped  # Ticket draws a random code: its sequences do not replay
    assert reason.startswith("class: nondeterministic") and "not reproduced on a second run" in reason


def test_a_class_with_no_methods_but_constructor_arguments_is_explored_by_its_text(quirks):
    over = _rows(quirks[0], "quirks.odd.OverLimit")
    assert interface(over.header) == {"new": 2, "m0": 0} and "m0(): The object as text." in over.description
    texts = {r for _, rs in over.train_examples + over.test_examples for r in rs if isinstance(r, str)}
    assert any(re.fullmatch(r"-?\d+ is -?\d+ over the limit", t) for t in texts), texts


def test_a_method_that_reaches_files_leaves_the_interface_and_the_class_stays(quirks):
    shelf = _rows(quirks[0], "quirks.books.Shelf")
    assert sorted(interface(shelf.header).items()) == [("m0", 1), ("m1", 0), ("new", 1)] or \
        sorted(interface(shelf.header).items()) == [("m0", 0), ("m1", 1), ("new", 1)]  # put, take: not save, nor backup
    assert "open(" not in shelf.code and "import os" not in shelf.code


def test_inherited_methods_dataclass_fields_and_doctest_sequences(quirks):
    labelled = _rows(quirks[0], "quirks.books.LabelledShelf")
    assert sorted(interface(labelled.header).values()) == [0, 0, 1, 2]  # label_text, and put, take inherited
    first = sequence_calls(labelled.train_examples[0][0])  # the doctest, in the interface's names
    assert first[0] == ("new", ("poetry", 2)) and [n for n, _ in first[1:]] == [_method(labelled, "put"),
                                                                            _method(labelled, "label_text")]
    assert labelled.train_examples[0][1][1:] == [1, "poetry: 1"]
    coupon = _rows(quirks[0], "quirks.books.Coupon")
    assert interface(coupon.header) == {"new": 2, "m0": 1}  # the dataclass's fields: percent, uses
    assert any(isinstance(r, dict) and r["raised"] == "ValueError: used up"
               for _, rs in coupon.test_examples + coupon.train_examples for r in rs)


# ---------------------------------------------------------------- reading tests


def test_test_files_are_read_through_imports_fixtures_and_setup(tmp_path):
    pkg = tmp_path / "kit"
    (pkg / "tests").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "core.py").write_text("class Box:\n    pass\n\ndef f(x):\n    return x\n")
    (pkg / "tests" / "conftest.py").write_text(textwrap.dedent('''
        import pytest
        from ..core import Box

        @pytest.fixture
        def box():
            b = Box(3)
            b.fill("a")
            return b
        '''))
    (pkg / "tests" / "test_core.py").write_text(textwrap.dedent('''
        import unittest
        from kit.core import *
        import kit.core as core

        N = 4

        def test_fixture(box):
            box.fill("b")
            assert box.size == 2
            box.fill(unknown)

        def test_calls():
            assert f(N) == 4 and core.f([1, 2]) == [1, 2]
            core.Box(1).fill("x")

        class TestBox(unittest.TestCase):
            def setUp(self):
                self.box = Box(size=5)

            def test_one(self):
                k = "c"
                self.box.fill(k)
        '''))
    (tmp_path / "test_beside.py").write_text("from kit import core\ncore.f('beside')\n")
    (tmp_path / "test_other.py").write_text("import json\njson.dumps(1)\n")  # not about kit: not read
    seeds = package_tests("kit", pkg, None)
    assert seeds.files == 3
    assert [c[0] for c in seeds.calls_of("kit.core.f")] == [(4,), ([1, 2],), ("beside",)]
    sequences = seeds.sequences_of("kit.core.Box")
    assert [("new", ((3,), {})), ("fill", (("a",), {})), ("fill", (("b",), {})), ("<read>size", ((), {}))] in sequences
    assert [("new", ((1,), {})), ("fill", (("x",), {}))] in sequences  # chained
    assert [("new", ((), {"size": 5})), ("fill", (("c",), {}))] in sequences  # setUp, then the test


def test_a_method_whose_argument_no_call_showed_is_probed_without_it():
    """`JSONDecoder.raw_decode(s, idx)`: no seed, and no value seen of the types its body asks for; the prober
    skips that guess (it raised IndexError choosing from nothing) and the class builds."""
    instances, summary = rows_from_source("module:json.decoder.JSONDecoder")
    assert [i.domain for i in instances] == ["stateful"], dict(summary.dropped)


def test_a_seed_too_long_for_one_sandbox_input_is_not_tried_as_a_state():
    """A test that calls a method 800 times seeds a sequence longer than one sandbox input: the prober tries the
    methods after the short seed only, so every call it makes is one the sandbox runs (none refused unshipped)."""
    from aac.data.classes import Prober, anonymize_module_class, calls_literal, search_config
    from aac.data.sources import RawClass, SeedCall

    code = ("class Counter:\n    def __init__(self, start=0):\n        self.n = start\n\n"
            "    def add(self, k):\n        self.n += k\n        return self.n\n")
    short = [("new", SeedCall((1,))), ("add", SeedCall((2,)))]
    raw = RawClass("pkg.Counter", "module", code, "Counter", [[("new", SeedCall((0,)))] + [("add", SeedCall((1,)))] * 800,
                                                              short])
    anon, init, members = anonymize_module_class(raw, 0)
    with SandboxPool(workers=1) as pool:
        assert len(calls_literal(anon.seeds[0])) > pool.max_input_chars  # the long seed is there, as written
        prober = Prober(anon, init, members, pool, search_config())
        pools = prober.pools()
        shipped = pool.stats["calls"]
    assert set(pools) == {"new", *[n for n, a in anon.arities.items() if a and n != "new"]}
    assert prober.calls == shipped  # none refused for its length
