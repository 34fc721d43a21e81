"""`python -m aac.prepare`: build what the embedded default needs, once, into $AAC_HOME.

Run by `make demo` and `make test`; a second run finds everything in place and does nothing.
"""

from __future__ import annotations

import logging

from aac.models import aac_home, resolve_model

log = logging.getLogger("aac.prepare")
EMBEDDED_MODELS = ("smollm2_135m", "tiny_qwen3")


def main() -> None:
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    for name in EMBEDDED_MODELS:
        log.info("model %-13s %s", name, resolve_model(name))
    log.info("AAC_HOME=%s ready", aac_home())


if __name__ == "__main__":
    main()
