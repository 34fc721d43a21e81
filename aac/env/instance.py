"""A PAU benchmark instance: the published 8-column schema, read from jsonl, parquet or `datasets`.

Rows are validated on load, so a bad row is reported with its number here rather than crashing an
episode deep in training. Rows are numbered from 0 in file order (jsonl: row N is line N + 1).

Quirks of the published rows this reader absorbs: the list columns are JSON text; outputs went
through JSON (tuples are lists, dict keys strings) and some are `repr` strings; the error of a
context example is the string "None". Outputs are kept as stored: comparisons go through
`aac.sandbox.values.normalize`, which treats both sides alike.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import warnings
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aac.config import OnBadRow
from aac.errors import UserError
from aac.sandbox.values import InputParseError, parse_input

if TYPE_CHECKING:
    from datasets import Dataset, DatasetDict

PAU_COLUMNS = ("test_func_validated", "description", "train_examples", "test_examples",
               "all_examples", "direct_prompt", "interactive_starting_prompt", "header")
EXTRA_COLUMNS = ("task_id", "source", "domain")
# written only where a row has it (older files and other domains' rows have not): the privileged side
OPTIONAL_COLUMNS = ("mutants",)
_LIST_COLUMNS = ("train_examples", "test_examples", "all_examples")
_MAX_WARNINGS = 10  # bad rows warned one by one; the rest are counted in one last warning


class DatasetError(UserError, ValueError):
    """A dataset that cannot be used, or (on_bad_row="raise") a bad row; one line, naming the place."""

    what = "bad data"


class BadRowWarning(UserWarning):
    """A row skipped on load (on_bad_row="warn")."""


@dataclass(frozen=True)
class Mutant:
    """A mutant of a row's source (aac/data/mutants.py): privileged, beside the gold description and
    source, never shown to the actor. `op`: the operator that made it; `change`: what it changed (the
    line, the text before and after); `code`: the whole mutated source; `witness`: a test input of the
    row whose result tells it from the original."""

    op: str
    change: str
    code: str
    witness: str


@dataclass(frozen=True)
class Instance:
    uid: str
    source: str
    code: str  # the `test_func_validated` column
    description: str
    header: str
    train_examples: list[tuple[str, Any]]  # the 2 context examples: (input literal, output)
    test_examples: list[tuple[str, Any]]  # held out for code match
    all_examples: list[tuple[str, Any, str | None]]  # (input, output, error)
    direct_prompt: str = ""
    interactive_starting_prompt: str = ""
    domain: str = "pau"  # the kind of black box (aac/env/domains), from `env.domain`
    # privileged: mutants of `code` that the row's test inputs tell apart and its context does not (the
    # `mutants` column); None: the row has none built (older files, other domains)
    mutants: tuple[Mutant, ...] | None = None

    @classmethod
    def from_row(cls, row: dict, index: int, check: Callable[[Instance], None] | None = None,
                 domain: str = "pau") -> Instance:
        """Validate one row of `domain`; raises DatasetError("row N: …") naming what is wrong.
        `check`: the domain's own check of the instance (a ValueError); default: the function
        domain's header check. A row's own `domain` column must agree with `domain`."""
        try:
            instance = _from_row(row, domain)
            if check is None:
                check_function_header(instance.code, instance.header)
            else:
                check(instance)
            return instance
        except ValueError as e:
            raise DatasetError(f"row {index}: {e}") from None


class _RowError(ValueError):
    pass


def code_uid(code: str) -> str:
    """A short stable id for a function without a task_id: a hash of its source."""
    return "h" + hashlib.sha256(code.encode()).hexdigest()[:12]


def row_uid(task_id: object, code: str) -> str:
    """An instance's uid: its row's task_id where it has one, else the hash of its code."""
    return str(task_id) if task_id not in (None, "") else code_uid(code)


def _text(row: dict, column: str) -> str:
    value = row.get(column)
    if value is None:
        raise _RowError(f"missing value in column {column!r}")
    if not isinstance(value, str):
        raise _RowError(f"column {column!r} must be a string, got {type(value).__name__}")
    return value


def _examples(row: dict, column: str, width: int) -> list[tuple]:
    raw = row.get(column)
    if raw is None:
        raise _RowError(f"missing value in column {column!r}")
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError as e:
            raise _RowError(f"{column}: not valid JSON ({e.msg} at char {e.pos})") from None
    if not isinstance(raw, list) or not raw:
        raise _RowError(f"{column}: expected a non-empty list of examples")
    out = []
    for k, item in enumerate(raw):
        if not isinstance(item, (list, tuple)) or len(item) not in (2, width):
            raise _RowError(f"{column}[{k}]: expected [input, output{', error' if width == 3 else ''}]")
        input_str = item[0]
        if not isinstance(input_str, str):
            raise _RowError(f"{column}[{k}]: the input must be a string literal, got {type(input_str).__name__}")
        try:
            parse_input(input_str)
        except InputParseError as e:
            raise _RowError(f"{column}[{k}]: unparsable input {input_str[:60]!r} ({e})") from None
        if width == 3:
            error = item[2] if len(item) == 3 else None
            out.append((input_str, item[1], None if error in (None, "None", "") else str(error)))
        else:
            out.append((input_str, item[1]))
    return out


def _mutants(row: dict) -> tuple[Mutant, ...] | None:
    raw = row.get("mutants")
    if raw is None or raw == "":
        return None
    try:
        items = json.loads(raw) if isinstance(raw, str) else raw
    except json.JSONDecodeError as e:
        raise _RowError(f"mutants: not valid JSON ({e.msg} at char {e.pos})") from None
    fields = Mutant.__dataclass_fields__
    if not isinstance(items, list) or not all(isinstance(m, dict) and set(m) == set(fields)
                                              and all(isinstance(v, str) for v in m.values()) for m in items):
        raise _RowError(f"mutants: expected a list of {{{', '.join(fields)}}} objects of strings")
    return tuple(Mutant(**m) for m in items)


def mutants_json(mutants: tuple[Mutant, ...]) -> str:
    """The `mutants` column's text."""
    return json.dumps([asdict(m) for m in mutants], ensure_ascii=False)


def _signature(code: str, what: str) -> str:
    """`test_func(arg0, arg1)` as written in `code` (top level), normalised by the AST."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError) as e:
        raise _RowError(f"{what} does not parse ({type(e).__name__}: {getattr(e, 'msg', e)})") from None
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "test_func":
            return f"test_func({ast.unparse(node.args)})"
    raise _RowError(f"{what} defines no top-level test_func")


def check_function_header(code: str, header: str) -> None:
    """The function domain's check: `code` defines the `test_func` that `header` shows."""
    header_sig = _signature(header.strip() + "\n    pass\n", "header")
    if _signature(code, "test_func_validated") != header_sig:
        raise _RowError(f"header {header.strip()!r} does not match the def test_func in the code")


def _from_row(row: dict, domain: str) -> Instance:
    stored = row.get("domain")
    if stored not in (None, "", domain):
        raise _RowError(f"the row is of domain {stored!r}, not {domain!r} (set env.domain={stored})")
    code = _text(row, "test_func_validated")
    header = _text(row, "header")
    source = row.get("source")
    return Instance(
        uid=row_uid(row.get("task_id"), code),
        source=str(source) if source not in (None, "") else "unknown",
        code=code,
        description=_text(row, "description"),
        header=header,
        train_examples=_examples(row, "train_examples", 2),
        test_examples=_examples(row, "test_examples", 2),
        all_examples=_examples(row, "all_examples", 3),
        direct_prompt=_text(row, "direct_prompt"),
        interactive_starting_prompt=_text(row, "interactive_starting_prompt"),
        domain=domain,
        mutants=_mutants(row),
    )


# ---------------------------------------------------------------- reading


@dataclass
class _Rows:
    name: str  # shown in messages
    columns: set[str] | None  # the dataset's columns (jsonl: the union over rows); None: no row decoded
    rows: Iterable[tuple[int, dict | str]]  # (row number, row) — a str says why a row did not decode


def _jsonl_rows(path: Path) -> _Rows:
    rows: list[tuple[int, dict | str]] = []
    columns: set[str] = set()
    with path.open("rb") as f:  # decoded line by line: undecodable bytes are a bad row, named
        for n, raw in enumerate(f):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                rows.append((n, f"not UTF-8 text (byte 0x{raw[e.start]:02x} at offset {e.start} of the line)"))
                continue
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                rows.append((n, f"not valid JSON ({e.msg} at char {e.pos})"))
                continue
            if isinstance(row, dict):
                columns |= row.keys()
                rows.append((n, row))
            else:
                rows.append((n, f"expected a JSON object, got {type(row).__name__}"))
    return _Rows(str(path), columns or None, rows)


def _file_rows(path: Path) -> _Rows:
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".json"):
        return _jsonl_rows(path)
    if suffix == ".parquet":
        import pyarrow.parquet as pq

        try:
            table = pq.read_table(path)
        except Exception as e:  # pyarrow raises several types for a bad file
            raise DatasetError(f"{path}: cannot read parquet ({type(e).__name__}: {e})") from None
        return _Rows(str(path), set(table.column_names), enumerate(table.to_pylist()))
    raise DatasetError(f"{path}: unsupported file type {suffix!r} (use .jsonl or .parquet)")


def _dataset_rows(dataset: Dataset | DatasetDict, name: str, split: str) -> _Rows:
    import datasets

    if isinstance(dataset, datasets.DatasetDict):
        if split not in dataset:
            raise DatasetError(f"{name}: no split {split!r} (has: {', '.join(dataset)})")
        dataset = dataset[split]
    return _Rows(name, set(dataset.column_names), enumerate(dataset))


def _folder_rows(folder: Path, split: str) -> _Rows:
    import datasets

    if (folder / "dataset_dict.json").exists() or (folder / "state.json").exists():
        return _dataset_rows(datasets.load_from_disk(str(folder)), str(folder), split)
    for candidate in (folder / f"{split}.jsonl", folder / f"{split}.parquet"):
        if candidate.exists():
            return _file_rows(candidate)
    shards = sorted(folder.glob(f"data/{split}-*.parquet"))  # the layout of a hub dataset repository
    if shards:
        return _dataset_rows(datasets.load_dataset("parquet", data_files=[str(s) for s in shards],
                                                   split="train"), str(folder), split)
    raise DatasetError(f"{folder}: no {split}.jsonl, {split}.parquet or data/{split}-*.parquet")


def _hub_rows(dataset_id: str, split: str) -> _Rows:
    import datasets

    try:
        dataset = datasets.load_dataset(dataset_id, split=split)
    except Exception as e:  # offline, unknown id, bad split: all end here as one line
        first = str(e).strip().splitlines()[0] if str(e).strip() else ""
        raise DatasetError(f"cannot load dataset {dataset_id!r} split {split!r}: {type(e).__name__}: {first}") from None
    return _dataset_rows(dataset, dataset_id, split)


def _open(spec: str | os.PathLike[str] | Dataset | DatasetDict, split: str) -> _Rows:
    import datasets

    if isinstance(spec, (datasets.Dataset, datasets.DatasetDict)):
        return _dataset_rows(spec, "dataset", split)
    text = os.fspath(spec)
    if text.startswith("builtin:"):  # built on demand by the data builder, which this module does not know
        raise DatasetError(f"{text}: load builtin datasets with aac.datasets.load_instances (it builds them)")
    path = Path(text).expanduser()
    if path.is_dir():
        return _folder_rows(path, split)
    if path.is_file():
        return _file_rows(path)
    if path.suffix.lower() in (".jsonl", ".json", ".parquet") or text.startswith((".", "/", "~")):
        raise DatasetError(f"{text}: no such file")
    return _hub_rows(text, split)


def load_instances(spec: str | os.PathLike[str] | Dataset | DatasetDict, *, split: str = "train", limit: int | None = None,
                   on_bad_row: str = "warn", check: Callable[[Instance], None] | None = None,
                   domain: str = "pau") -> list[Instance]:
    """Instances from a .jsonl/.parquet file, a folder (`{split}.jsonl|parquet`, a `save_to_disk`
    folder, or a hub-style `data/{split}-*.parquet` layout), a `datasets` Dataset/DatasetDict, a hub
    dataset id (e.g. DJ-Research/PAU-Benchmark) or `builtin:NAME`.

    A bad row is skipped with a BadRowWarning (on_bad_row="warn") or raises DatasetError ("raise").
    A column missing from the whole dataset is always a DatasetError naming it. `limit`: stop after
    that many good instances. `domain` and `check`: the instances' domain and its check of each
    (`Domain.check_instance`; aac.datasets passes both from `env.domain`).
    """
    if on_bad_row not in list(OnBadRow):
        raise ValueError(f"on_bad_row={on_bad_row!r} is not one of: {', '.join(OnBadRow)}")
    source = _open(spec, split)
    if source.columns is not None:
        missing = [c for c in PAU_COLUMNS if c not in source.columns]
        if missing:
            raise DatasetError(f"{source.name}: missing column {missing[0]!r}"
                               + (f" (also: {', '.join(missing[1:])})" if missing[1:] else "")
                               + f"; the PAU schema needs: {', '.join(PAU_COLUMNS)}")
    instances: list[Instance] = []
    bad: list[str] = []
    for n, row in source.rows:
        if limit is not None and len(instances) >= limit:
            break
        try:
            if isinstance(row, str):
                raise DatasetError(f"row {n}: {row}")
            instances.append(Instance.from_row(row, n, check, domain))
        except DatasetError as e:
            if on_bad_row == "raise":
                raise DatasetError(f"{source.name}: {e}") from None
            bad.append(str(e))
            if len(bad) <= _MAX_WARNINGS:
                warnings.warn(f"{source.name}: skipping {e}", BadRowWarning, stacklevel=2)
    if len(bad) > _MAX_WARNINGS:
        warnings.warn(f"{source.name}: skipped {len(bad)} bad rows in all ({len(bad) - _MAX_WARNINGS} "
                      "not shown)", BadRowWarning, stacklevel=2)
    if not instances:
        raise DatasetError(f"{source.name}: no valid rows ({len(bad)} bad; first: {bad[0]})" if bad else
                           f"{source.name}: no rows (an empty file?): give a dataset with PAU rows")
    return instances
