"""The PAU builder's command line (the builder: aac/data/pau.py; built-in sets: aac/data/builtin.py).

    python -m aac.data.build --source humaneval --out he.jsonl [--limit N] [--seed S]
    python -m aac.data.build --source mbpp:PATH/sanitized-mbpp.json --out mbpp.jsonl
    python -m aac.data.build --source cruxeval:PATH/cruxeval.jsonl --out crux.jsonl
    python -m aac.data.build --source jsonl:PATH --out mine.jsonl  # {code, entry_point, inputs?, description?}
    python -m aac.data.build --verify FILE.jsonl                    # re-run every stored example
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path

from aac.data.pau import BuildConfig, build, verify
from aac.data.sources import SourceError
from aac.data.summary import write_built
from aac.errors import entry_point


@entry_point
def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m aac.data.build", description=__doc__.split("\n\n")[0])
    p.add_argument("--source", help="humaneval[:PATH] | mbpp:PATH | cruxeval:PATH | jsonl:PATH")
    p.add_argument("--out", help="output .jsonl or .parquet (PAU schema + task_id, source)")
    p.add_argument("--limit", type=int, help="read only the first N source rows")
    p.add_argument("--sample", type=int, help="build a seeded random sample of N of the source's functions")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--summary-json", help="also write the summary here")
    p.add_argument("--describe-with", metavar="KIND:MODEL",
                   help="an engine that writes the descriptions a source lacks (CRUXEval), e.g. hf:smollm2_135m")
    p.add_argument("--verify", metavar="FILE", help="re-run every stored example of a built FILE and exit")
    a = p.parse_args(argv)
    try:
        if a.verify:
            result = verify(a.verify)
            bad = result["rows_not_reproduced"]
            print(f"{a.verify}: {result['rows']} rows, {result['examples']} examples re-run, "
                  f"{len(bad)} rows not reproduced {bad[:10]}")
            return 1 if bad else 0
        if not a.source or not a.out:
            p.error("--source and --out are required (or --verify FILE)")
        if a.limit is not None and a.limit < 1:
            p.error("--limit must be >= 1")
        if Path(a.out).suffix.lower() not in (".jsonl", ".parquet"):
            p.error(f"--out {a.out}: use a .jsonl or .parquet file")
        describe = None
        if a.describe_with:
            from aac.data.describe import make_describer

            describe = make_describer(a.describe_with)
        instances, summary = build(a.source, limit=a.limit, sample=a.sample, cfg=BuildConfig(seed=a.seed))
        if describe is not None:
            instances = describe(instances)
        write_built(a.out, instances, summary.text())
        if a.summary_json:
            record = {**summary.as_dict(), "limit": a.limit, "sample": a.sample, "config": asdict(BuildConfig(seed=a.seed))}
            Path(a.summary_json).write_text(json.dumps(record, indent=1))
    except (SourceError, ValueError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
