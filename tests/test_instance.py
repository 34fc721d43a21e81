"""The PAU instance schema: round trips through jsonl/parquet/datasets, and validation on load."""

from __future__ import annotations

import json
import sys
import types

import pytest

from aac.env.instance import (
    PAU_COLUMNS,
    BadRowWarning,
    DatasetError,
    Instance,
    load_instances,
)
from aac.env.rows import to_row, write_instances

CODE = '''def validate_input_args(arg0, arg1):
    if not isinstance(arg0, int) or not isinstance(arg1, str):
        raise TypeError("expected (int, str)")


def test_func(arg0, arg1):
    validate_input_args(arg0, arg1)
    n, s = arg0, arg1
    return (s * n, n)
'''


def make_instance(uid: str = "t/0", **changes) -> Instance:
    fields = dict(
        uid=uid, source="unit", code=CODE, description="Repeats the string n times; returns it with n.",
        header="def test_func(arg0, arg1):",
        train_examples=[("(3, 'ab')", ["ababab", 3]), ("(0, 'x')", ["", 0])],
        test_examples=[("(1, 'q')", ["q", 1]), ("(2, '')", ["", 2]), ("(2, 'xy')", ["xyxy", 2]),
                       ("(4, 'z')", ["zzzz", 4])],
        all_examples=[("(3, 'ab')", ["ababab", 3], None), ("(0, 'x')", ["", 0], None)],
        direct_prompt="describe it", interactive_starting_prompt="explore it")
    fields.update(changes)
    return Instance(**fields)


def published_row(**changes) -> dict:
    """A row as the published set stores it: JSON text columns, no task_id/source, error "None"."""
    row = {k: v for k, v in to_row(make_instance()).items() if k in PAU_COLUMNS}
    row.update(changes)
    return row


def write_jsonl(path, rows: list) -> None:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))


@pytest.mark.parametrize("suffix", ["jsonl", "parquet"])
def test_round_trip_through_files(tmp_path, suffix):
    instances = [make_instance("t/0"), make_instance("t/1", source="other", description="second")]
    path = write_instances(tmp_path / f"set.{suffix}", instances)
    assert load_instances(path) == instances


def test_to_row_is_the_published_schema_with_json_text_columns():
    row = to_row(make_instance())
    assert set(row) == {*PAU_COLUMNS, "task_id", "source", "domain"} and row["domain"] == "pau"
    assert all(isinstance(v, str) for v in row.values())
    assert json.loads(row["all_examples"])[0] == ["(3, 'ab')", ["ababab", 3], "None"]


def test_a_row_of_another_domain_is_refused_with_the_setting_to_use():
    row = {**to_row(make_instance()), "domain": "stateful"}
    with pytest.raises(DatasetError, match=r"row 4: the row is of domain 'stateful', not 'pau' \(set env.domain=stateful\)"):
        Instance.from_row(row, 4)
    assert Instance.from_row({**row, "domain": ""}, 0).domain == "pau"  # rows written before domains


def test_empty_prompt_columns_are_filled_with_our_prompts():
    row = to_row(make_instance(direct_prompt="", interactive_starting_prompt=""))
    assert "def test_func(arg0, arg1):" in row["direct_prompt"] and "Description:" in row["direct_prompt"]
    assert "(3, 'ab') -> ['ababab', 3]" in row["interactive_starting_prompt"]


def test_published_quirks(tmp_path):
    row = published_row(all_examples=json.dumps([["(3, 'ab')", ["ababab", 3], "None"],
                                                 ["(0, 'x')", "('', 0)", "None"]]))
    write_jsonl(tmp_path / "pub.jsonl", [row])
    [inst] = load_instances(tmp_path / "pub.jsonl")
    assert inst.source == "unknown"
    assert inst.uid.startswith("h") and inst.uid == load_instances(tmp_path / "pub.jsonl")[0].uid
    assert inst.all_examples[0][2] is None
    assert inst.all_examples[1][1] == "('', 0)"  # a repr-string output is kept as stored
    assert inst.train_examples[0] == ("(3, 'ab')", ["ababab", 3])  # the tuple came back as a list


def test_datasets_paths(tmp_path):
    import datasets

    instances = [make_instance(f"t/{i}") for i in range(3)]
    rows = [to_row(i) for i in instances]
    datasets.Dataset.from_list(rows).to_parquet(str(tmp_path / "by_datasets.parquet"))
    assert load_instances(tmp_path / "by_datasets.parquet") == instances
    write_instances(tmp_path / "x.jsonl", instances)
    for builder, file in (("json", "x.jsonl"), ("parquet", "by_datasets.parquet")):
        ds = datasets.load_dataset(builder, data_files=str(tmp_path / file), split="train",
                                   cache_dir=str(tmp_path / "cache"))
        assert load_instances(ds, limit=2) == instances[:2]
    dd = datasets.DatasetDict({"train": datasets.Dataset.from_list(rows[:1]),
                               "test": datasets.Dataset.from_list(rows[1:])})
    dd.save_to_disk(str(tmp_path / "saved"))
    assert load_instances(tmp_path / "saved", split="test") == instances[1:]
    with pytest.raises(DatasetError, match="no split 'dev'"):
        load_instances(tmp_path / "saved", split="dev")


def test_folder_with_split_files(tmp_path):
    write_instances(tmp_path / "d" / "test.parquet", [make_instance("a")])
    write_instances(tmp_path / "d" / "train.jsonl", [make_instance("b")])
    assert [i.uid for i in load_instances(tmp_path / "d", split="test")] == ["a"]
    assert [i.uid for i in load_instances(tmp_path / "d")] == ["b"]


BAD_ROWS = {
    1: (published_row(description=None), "missing value in column 'description'"),
    2: (published_row(header="def test_func(arg0):"), "does not match the def test_func"),
    3: (published_row(train_examples=json.dumps([["(1, 'a'", "a"]])), "train_examples[0]: unparsable input"),
    4: (published_row(test_examples="[[1, 2"), "test_examples: not valid JSON"),
    5: ("{not json", "not valid JSON"),
    6: (published_row(test_func_validated="def test_func(arg0, arg1):\n  return (\n"), "does not parse"),
}


@pytest.fixture
def jsonl_with_bad_rows(tmp_path):
    path = tmp_path / "mixed.jsonl"
    write_jsonl(path, [published_row(), *(row for row, _ in BAD_ROWS.values()), published_row()])
    return path


def test_bad_rows_are_skipped_with_a_warning_naming_the_row(jsonl_with_bad_rows):
    with pytest.warns(BadRowWarning) as caught:
        instances = load_instances(jsonl_with_bad_rows)
    assert len(instances) == 2
    messages = [str(w.message) for w in caught]
    for n, (_, reason) in BAD_ROWS.items():
        assert any(f"row {n}: " in m and reason in m for m in messages), (n, messages)


def test_bad_row_raises_when_asked(jsonl_with_bad_rows):
    with pytest.raises(DatasetError, match=r"mixed\.jsonl: row 1: missing value in column 'description'"):
        load_instances(jsonl_with_bad_rows, on_bad_row="raise")


def test_bad_parquet_row_is_numbered(tmp_path):
    rows = [to_row(make_instance(f"t/{i}")) for i in range(3)]
    rows[2]["header"] = "def test_func(x, y):"
    import datasets

    datasets.Dataset.from_list(rows).to_parquet(str(tmp_path / "p.parquet"))
    with pytest.raises(DatasetError, match="row 2: header"):
        load_instances(tmp_path / "p.parquet", on_bad_row="raise")


@pytest.mark.parametrize("suffix", ["jsonl", "parquet"])
def test_missing_or_renamed_column_is_one_line_naming_it(tmp_path, suffix):
    rows = [to_row(make_instance())]
    rows[0]["code"] = rows[0].pop("test_func_validated")
    path = tmp_path / f"renamed.{suffix}"
    if suffix == "jsonl":
        write_jsonl(path, rows)
    else:
        import datasets

        datasets.Dataset.from_list(rows).to_parquet(str(path))
    with pytest.raises(DatasetError, match="missing column 'test_func_validated'") as e:
        load_instances(path, on_bad_row="warn")
    assert "\n" not in str(e.value)


def test_other_load_errors(tmp_path):
    with pytest.raises(DatasetError, match="no such file"):
        load_instances(tmp_path / "absent.jsonl")
    with pytest.raises(ValueError, match="on_bad_row"):
        load_instances(tmp_path / "absent.jsonl", on_bad_row="ignore")
    write_jsonl(tmp_path / "bad.jsonl", ["[1]"])
    with pytest.warns(BadRowWarning), pytest.raises(DatasetError, match="no valid rows"):
        load_instances(tmp_path / "bad.jsonl")


def test_many_bad_rows_end_with_one_count(tmp_path):
    write_jsonl(tmp_path / "many.jsonl", [published_row(header="def f():")] * 15 + [published_row()])
    with pytest.warns(BadRowWarning) as caught:
        assert len(load_instances(tmp_path / "many.jsonl")) == 1
    assert len(caught) == 11 and "skipped 15 bad rows" in str(caught[-1].message)


def test_builtin_spec_asks_the_builder(tmp_path, monkeypatch):
    write_instances(tmp_path / "demo" / "test.jsonl", [make_instance("b/0")])
    asked = []
    fake = types.ModuleType("aac.data.builtin")  # the builder is another module's job: a stand-in here

    def builtin_path(name, split):
        asked.append((name, split))
        return tmp_path / name / f"{split}.jsonl"

    fake.builtin_path = builtin_path
    monkeypatch.setitem(sys.modules, "aac.data.builtin", fake)
    from aac.datasets import load_instances as load_any

    assert [i.uid for i in load_any("builtin:demo", split="test")] == ["b/0"]
    assert asked == [("demo", "test")]
    with pytest.raises(DatasetError, match="aac.datasets.load_instances"):  # the schema reader builds nothing
        load_instances("builtin:demo", split="test")
