"""Fuzz: random JSON values and bytes into the data loader and the builder, random numbers into numeric
settings. Whatever comes in, the answer is a result or an expected one-line error (`UserError`), never
a traceback, and a failed build leaves no output behind. Bounded (examples, deadline) to run in CI."""

from __future__ import annotations

import dataclasses
import json
import tempfile
import typing
import warnings
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_eval_runner import PAU_ROWS

from aac.env.instance import PAU_COLUMNS, BadRowWarning, load_instances
from aac.errors import UserError

FUZZ = settings(max_examples=100, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner,
                                                                                        max_size=3),
                           max_leaves=8)
# a published row with some columns replaced by random values: it reaches the row checks, not only the schema's
rows = st.builds(lambda base, new: {**base, **new}, st.sampled_from(PAU_ROWS),
                 st.dictionaries(st.sampled_from([*PAU_COLUMNS, "task_id", "domain"]),
                                 json_values | st.text(max_size=40), max_size=3))
lines = st.one_of(rows.map(lambda r: json.dumps(r).encode()), json_values.map(lambda v: json.dumps(v).encode()),
                  st.binary(max_size=40))


def _file(folder: Path, data: bytes) -> Path:
    path = Path(tempfile.mkdtemp(dir=folder)) / "data.jsonl"  # one folder per example
    path.write_bytes(data)
    return path


@FUZZ
@given(st.lists(lines, max_size=4), st.sampled_from(["warn", "raise"]))
def test_the_loader_returns_instances_or_one_expected_error(tmp_path, content, on_bad_row):
    path = _file(tmp_path, b"\n".join(content))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BadRowWarning)
        try:
            instances = load_instances(path, split="all", on_bad_row=on_bad_row)
        except UserError as e:
            assert str(e).startswith(str(path)) and "\n" not in str(e), e
            return
    assert instances and all(i.code and i.header for i in instances)


builder_rows = st.fixed_dictionaries({}, optional={"code": st.text(max_size=60) | json_values,
                                                   "entry_point": st.sampled_from(["f", "g", ""]) | json_values,
                                                   "inputs": st.lists(st.text(max_size=10), max_size=2) | json_values,
                                                   "description": st.text(max_size=20) | json_values})
good_function = {"code": "def f(x):\n    return x + 1\n", "entry_point": "f", "inputs": ["(1,)", "(2,)", "(5,)"],
                 "description": "adds one"}


@settings(FUZZ, max_examples=15)
@given(st.lists(st.one_of(builder_rows.map(json.dumps), st.just(json.dumps(good_function)),
                          st.binary(max_size=30).map(lambda b: b.decode("latin-1"))), max_size=3))
def test_the_builder_writes_a_valid_file_or_nothing(tmp_path, source_lines):
    from aac.data.build import main

    src = _file(tmp_path, "\n".join(source_lines).encode("utf-8", "surrogateescape"))
    out = src.with_name("built.jsonl")
    try:
        code = main([f"source=jsonl:{src}", f"out={out}"])
    except SystemExit as e:
        code = e.code
    if code == 0:
        assert load_instances(out, split="all"), "a build that succeeded wrote no usable row"
    else:
        assert not out.exists(), "a failed build left an output behind"


def _numeric_keys(cls: type, prefix: str = "") -> list[str]:
    """Every int/float field (optional ones too) of the config schema, as dotted keys."""
    keys = []
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        kind = hints[f.name]
        args = [a for a in typing.get_args(kind) if a is not type(None)]
        if dataclasses.is_dataclass(kind):
            keys += _numeric_keys(kind, f"{prefix}{f.name}.")
        elif kind in (int, float) or (args and args[0] in (int, float) and len(args) == 1):
            keys.append(prefix + f.name)
    return keys


def test_the_schema_has_numeric_keys_to_fuzz():
    from aac.config import TrainConfig

    keys = _numeric_keys(TrainConfig)
    assert {"max_steps", "env.call_timeout_s", "learner.lr", "rollout.group_size"} <= set(keys)


@pytest.fixture(scope="module")
def numeric_keys() -> list[str]:
    from aac.config import TrainConfig

    return _numeric_keys(TrainConfig)


numbers = st.one_of(st.integers(-10**12, 10**12), st.floats(allow_nan=True, allow_infinity=True),
                    st.sampled_from([0, -1, 1, "1.5", "-0.0", "1e309", "nan", "inf", "-inf", "null", "'3'"]))


@settings(FUZZ, max_examples=15)
@given(data=st.data())
def test_numeric_settings_compose_or_fail_in_one_line(numeric_keys, data):
    from aac.cli import compose_argv

    key = data.draw(st.sampled_from(numeric_keys))
    value = data.draw(numbers)
    try:
        compose_argv([f"{key}={value}"], "config", "tiny")
    except SystemExit as e:
        assert isinstance(e.code, str) and e.code.startswith("aac: config error: ") and "\n" not in e.code, e.code
