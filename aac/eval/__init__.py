"""The PAU evaluation harness (docs/method.md §9): in-context and interactive runs of the actor, the LM-judge
description score, code match in the sandbox, statistics, reports, plots and run comparison.

    python -m aac.eval model=... [checkpoint=PATH] mode=interactive|in_context data=PATH|HF_ID [limit=N]
    python -m aac.eval.compare runs=RUN_DIR,RUN_DIR[,...] [out=DIR]
    python -m aac.eval.side_by_side run=TRAIN_RUN_DIR     # a run's tuned adapter beside its base (make demo's end)

In Python: `aac.eval.harness.evaluate(cfg)`, `aac.eval.compare.compare(run_dirs)`,
`aac.eval.report.write_report(run_dir)`; the scoring pieces are `judge.Judge`,
`codematch.CodeMatcher` (the web domain's: `servicecall.ServiceCallMatcher`) and `stats.paired_bootstrap`.
"""
