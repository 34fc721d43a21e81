"""The data builder's command line (the builders: aac/data/pau.py; the sources reference: docs/sources.md).

    python -m aac.data.build source=humaneval out=he.jsonl [limit=N] [seed=S]
    python -m aac.data.build source=mbpp:PATH/sanitized-mbpp.json out=mbpp.jsonl
    python -m aac.data.build source=cruxeval:PATH/cruxeval.jsonl out=crux.jsonl
    python -m aac.data.build source=jsonl:PATH out=mine.jsonl  # {code, entry_point, inputs?, description?}
    python -m aac.data.build source=module:PKG[.SUB] out=DIR   # DIR/{train,test}.jsonl; classes: DIR/stateful/
    python -m aac.data.build source=openapi:SPEC out=svc.jsonl [scaffold=DIR]  # a web-domain service
    python -m aac.data.build source=web:DIR out=DIR2           # from service files (aac/data/web.py)
    python -m aac.data.build verify=FILE.jsonl                  # re-run every stored example

`out=DIR` (a path without a .jsonl/.parquet suffix) splits the rows by task id (seeded by seed=;
test_fraction= of them, at least one, go to test.jsonl); `out=FILE` writes them all, for
`env.split=all`. A build that keeps no row writes nothing and fails.
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict
from pathlib import Path

from aac.cli import Key, UsageError, count, parse_keys
from aac.data.pau import BuildConfig, build, verify
from aac.data.sources import SourceError
from aac.data.splits import TEST_FRACTION, split_instances
from aac.data.summary import BuildSummary
from aac.env.instance import Instance
from aac.env.rows import write_instances
from aac.errors import UserError, entry_point

FILE_SUFFIXES = (".jsonl", ".parquet")


def rows_from_source(spec: str, *, limit: int | None = None, sample: int | None = None, seed: int = 0,
                     scaffold: str | None = None) -> tuple[list[Instance], BuildSummary]:
    """The rows one `source=` spec builds (as Instances: `aac.env.rows.to_row` gives the written
    dicts) and the build's summary (what was dropped, by reason). `module:PKG.func` builds one
    function, `openapi:SPEC` one web-domain service (`scaffold`: a folder for its service file),
    `web:DIR` one per service file; docs/sources.md lists every spec. SourceError or ValueError
    (one line) for a spec that names nothing."""
    kind = spec.partition(":")[0]
    if scaffold is not None and kind != "openapi":
        raise SourceError(f"scaffold= writes the service of an openapi: source, not of {kind}:")
    if kind in ("openapi", "web"):
        if sample is not None:
            raise SourceError(f"sample= applies to function sources, not to {kind}:")
        if kind == "web":
            from aac.data.web import build_folder

            return build_folder(spec.removeprefix("web:"), limit=limit)
        from aac.data import openapi

        return openapi.build(spec.removeprefix("openapi:"), scaffold=scaffold, limit=limit)
    return build(spec, limit=limit, sample=sample, cfg=BuildConfig(seed=seed))


def write_rows(out: str, instances: list[Instance], summary: BuildSummary, *, seed: int = 0,
               test_fraction: float = TEST_FRACTION) -> None:
    """Write a build's rows to `out`: one file (.jsonl/.parquet), or a folder with train.jsonl and
    test.jsonl split by task id. SourceError, writing nothing, when no row was kept or too few to split.
    A build of several domains (a package's functions and classes) writes the function rows there and
    each other domain's beside them: `out/<domain>/` (one file `out/<domain>.jsonl` when too few to
    split), or `FILE.<domain>.jsonl` for a file."""
    if not instances:
        reasons = ", ".join(f"{n} {reason}" for reason, n in summary.dropped.most_common(3))
        print(summary.text())
        raise SourceError(f"{summary.source}: kept no row of {summary.rows_in} read"
                          + (f" (dropped: {reasons}; see docs/sources.md)" if reasons else "") + "; nothing written")
    groups: dict[str, list[Instance]] = {}
    for inst in instances:
        groups.setdefault(inst.domain, []).append(inst)
    first = "pau" if "pau" in groups else next(iter(groups))
    out_path = Path(out)
    if out_path.suffix.lower() in FILE_SUFFIXES:
        written = {d: out_path.with_name(f"{out_path.stem}.{d}{out_path.suffix}") for d in groups} | {first: out_path}
        for domain, rows in groups.items():
            write_instances(written[domain], rows)
        print(summary.text())
        print("\n".join(f"wrote {len(groups[d])} rows to {written[d]}" + ("" if d == "pau" else f" (env.domain={d})")
                        for d in groups))
        return
    done = []
    for domain in [first] + [d for d in groups if d != first]:
        rows, folder = groups[domain], out_path if domain == first else out_path / domain
        splits = split_instances(rows, seed, test_fraction)
        if splits["train"]:
            for split, part in splits.items():
                write_instances(folder / f"{split}.jsonl", part)
            done.append(f"wrote {len(splits['train'])} train and {len(splits['test'])} test rows to {folder}/"
                        + ("" if domain == "pau" else f" (env.domain={domain})"))
        elif domain != first:
            write_instances(out_path / f"{domain}.jsonl", rows)
            done.append(f"wrote {len(rows)} {domain} row(s), too few to split, to {out_path / f'{domain}.jsonl'} "
                        f"(env.domain={domain} env.split=all)")
        else:
            raise SourceError(f"{out}: {len(rows)} row(s) kept, too few to split into train and test; write out="
                              "FILE.jsonl and train with env.split=all, or build more rows (functions, specs or service files)")
    print(summary.text())
    print("\n".join(done))


def _fraction(text: str) -> float:
    if not 0 < float(text) < 1:
        raise ValueError("a fraction between 0 and 1 (exclusive)")
    return float(text)


USAGE = "usage: python -m aac.data.build source=SPEC out=DIR|FILE.jsonl [KEY=VALUE ...] | verify=FILE"
KEYS = (Key("source", "humaneval[:PATH] | mbpp:PATH | cruxeval:PATH | jsonl:PATH | module:PKG[.SUB][.func] | "
                      "openapi:SPEC_OR_FOLDER | web:FOLDER"),
        Key("out", "a folder (train.jsonl + test.jsonl) or one .jsonl/.parquet file (PAU schema + task_id, source, "
                   "domain)"),
        Key("test_fraction", "share of the rows out=DIR puts in test.jsonl", _fraction, TEST_FRACTION),
        Key("scaffold", "openapi: also write the generated service file(s) to this folder, to edit and build again "
                        "with source=web:DIR"),
        Key("limit", "read only the first N source rows (web, openapi: service files)", count),
        Key("sample", "build a seeded random sample of N of the source's functions", count),
        Key("seed", "seeds the split, the sample and the input search", int, 0),
        Key("summary_json", "also write the build's summary to this file"),
        Key("describe_with", "KIND:MODEL: an engine that writes the descriptions a source lacks (CRUXEval), e.g. "
                             "hf:smollm2_135m"),
        Key("verify", "re-run every stored example of a built FILE and exit"))


@entry_point
def main(argv: list[str] | None = None) -> int:
    a = parse_keys(argv, KEYS, USAGE, doc=__doc__.split("\n\n")[0])
    if a.verify:
        result = verify(a.verify)
        bad = result["rows_not_reproduced"]
        print(f"{a.verify}: {result['rows']} rows, {result['examples']} examples re-run, "
              f"{len(bad)} rows not reproduced {bad[:10]}")
        return 1 if bad else 0
    if not a.source or not a.out:
        raise UsageError(f"source= and out= are required (or verify=FILE); {USAGE}")
    if Path(a.out).suffix and Path(a.out).suffix.lower() not in FILE_SUFFIXES:
        raise UsageError(f"out={a.out}: use a folder, or a .jsonl or .parquet file")
    try:
        write_descriptions = None
        if a.describe_with:
            from aac.data.llm_descriptions import description_writer

            write_descriptions = description_writer(a.describe_with)
        instances, summary = rows_from_source(a.source, limit=a.limit, sample=a.sample, seed=a.seed,
                                              scaffold=a.scaffold)
        if write_descriptions is not None and instances:
            instances = write_descriptions(instances)
        write_rows(a.out, instances, summary, seed=a.seed, test_fraction=a.test_fraction)
        if a.summary_json:
            record = {**summary.as_dict(), "limit": a.limit, "sample": a.sample, "config": asdict(BuildConfig(seed=a.seed))}
            Path(a.summary_json).write_text(json.dumps(record, indent=1))
    except (ValueError, OSError) as e:  # what the build cannot read: one line (entry_point), exit 1
        raise e if isinstance(e, UserError) else SourceError(str(e)) from None
    return 0


if __name__ == "__main__":
    sys.exit(main())
