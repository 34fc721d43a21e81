"""`python -m aac.eval [+recipe=NAME] model=... [checkpoint=PATH] mode=interactive|in_context data=... [limit=N]`

Plays the actor (base, or base + a peft LoRA adapter) over a PAU split, scores every episode
(LM-judge description score, code match) and writes report.json / report.md / score_distribution.png
into out_dir. Rerun with the same out_dir to resume. Keys: conf/eval_config.yaml; short forms: aac/cli.py.
"""

from __future__ import annotations

import logging
from typing import Optional

from aac.cli import ALIASES, run_hydra


def task(cfg) -> None:
    from aac.eval.harness import evaluate

    for noisy in ("httpx", "httpx2"):  # one INFO line per HTTP request (openai engine)
        logging.getLogger(noisy).setLevel(logging.WARNING)
    evaluate(cfg)  # an expected error is one line (run_hydra); finished episodes and scores are kept: rerun resumes


def main(argv: Optional[list[str]] = None) -> None:
    run_hydra(task, "eval_config", None, argv, aliases=ALIASES["aac.eval"])


if __name__ == "__main__":
    main()
