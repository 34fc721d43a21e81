"""`python -m aac.eval.side_by_side run=RUN_DIR [KEY=VALUE ...]`: a training run's tuned adapter beside its base
model, what `make demo` ends with.

Both play the same held-out functions (`eval.split`, default test: the run trained on train) under the
run's protocol (aac/eval/run_protocol.py: model, prompts, per-turn budgets and stop strings), greedy;
two `aac.eval` runs go to RUN_DIR/eval/base and RUN_DIR/eval/tuned (rerunning resumes them), then
`aac.eval.compare` pairs them instance by instance. Prints a short table: format errors per turn,
queries, informative calls (aac/eval/informative.py) and concluded episodes, and the judge's score,
marked as weak: with the embedded model the judge is the same 135M model (log-prob scoring, so every
reply is rated), whose report card is at chance. KEY=VALUE: `aac.eval` overrides for both runs, after
`DEFAULTS` (a few functions and the training's call budget, so the demo stays within its minutes).
"""

from __future__ import annotations

from pathlib import Path

from aac.cli import Key, parse_keys
from aac.errors import entry_point
from aac.eval.report import fmt

# code match is left out: the table does not show it, and the coder's decode was a third of this step's time
DEFAULTS = ("limit=4", "eval.max_calls=4", "eval.judge_scoring=logprob", "eval.code_match=false")
ARMS = ("base", "tuned")
# what the table can and cannot say about the demo's 10 steps (benchmarks/RESULTS.md, demo learning)
READING = ("a few functions, greedy: a difference here is one function's behaviour, not a trend. The demo's few steps "
           "(3 to 10, by its time budget) show the loop working; what 48 steps of this recipe change on the 33 held-out "
           "functions (3 seeds, paired with the base) is in benchmarks/RESULTS.md (\"What the embedded default learns\")")


def arm_overrides(run_dir: Path, arm: str, extra: list[str]) -> list[str]:
    """The `aac.eval` overrides of one arm: the base model under the run's protocol, or its checkpoint."""
    which = [f"checkpoint={run_dir}"] if arm == "tuned" else [f"protocol_from={run_dir}"]
    return [*DEFAULTS, *extra, *which, f"out_dir={run_dir / 'eval' / arm}", f"name={arm}"]


def table(result: dict, run_dir: Path) -> str:
    """The closing table of `compare(...)` over the two arms."""
    runs = {r["name"]: r for r in result["runs"]}
    p = next((x["score_p"] for x in result["pvalues"] if x["a"] == "tuned"), None)
    lines = [f"{run_dir}: the tuned adapter beside its base model on {result['n_common']} held-out functions, "
             "the run's protocol, greedy", "",
             "| model | format errors / turn | queries / episode | informative calls / episode | concluded | "
             "judge score, 1-5 (weak*) |", "|---|---|---|---|---|---|"]
    for arm in ARMS:
        r = runs[arm]
        ds = r["description_score"]
        lines.append(f"| {arm} | {fmt(100 * r['format_error_rate'], 0)} % | {fmt(r['queries_mean'])} | "
                     f"{fmt(r.get('informative_calls_mean'))} | {fmt(r['concluded_pct'], 0)} % | "
                     f"{fmt(ds['mean'])} ± {fmt(ds['std'])} |")
    lines += ["", f"* judge: the run's own base model, by rating log-probs (every reply rated); a 135M judge is at "
              f"chance, so its score checks the pipeline, not quality. Paired bootstrap, p that tuned is not "
              f"better: {fmt(p, 3)}.", f"Reading: {READING}."]
    return "\n".join(lines) + "\n"


def side_by_side(run_dir: str | Path, extra: list[str]) -> str:
    """Evaluate both arms (resumable), compare them paired, write RUN_DIR/eval/side_by_side.md; the table."""
    from aac.assembly import build_run
    from aac.cli import rewrite_aliases
    from aac.config import compose
    from aac.eval.compare import compare
    from aac.eval.harness import evaluate, resolve

    run_dir = Path(run_dir)
    overrides = [rewrite_aliases(arm_overrides(run_dir, arm, extra)) for arm in ARMS]
    cfgs = [compose(*o, config_name="eval_config") for o in overrides]
    # one set of pieces for both arms: the base model's engine plays the base arm and judges both, the sandbox
    # pool starts once (each arm building its own started a third engine, the tuned arm's judge)
    pieces = build_run(resolve(cfgs[0], overrides[0], announce=False)[0], train=False)
    try:
        for cfg, arm_over in zip(cfgs, overrides):
            evaluate(cfg, overrides=arm_over, run=pieces)
    finally:
        pieces.close()
    # tuned first: compare's p-value is then that tuned is not better than base
    result = compare([run_dir / "eval" / arm for arm in reversed(ARMS)], resamples=cfgs[0].eval.bootstrap_resamples)
    text = table(result, run_dir)
    (run_dir / "eval" / "side_by_side.md").write_text(text, encoding="utf-8")
    return text


@entry_point
def main(argv: list[str] | None = None) -> None:
    import logging

    keys = (Key("run", "an aac.train out_dir (its newest intact checkpoint is the tuned arm)", required=True),)
    args = parse_keys(argv, keys, "usage: python -m aac.eval.side_by_side run=RUN_DIR [KEY=VALUE ...] (KEY=VALUE: "
                      "aac.eval's, for both arms)", doc=__doc__.split("\n\n")[0], overrides=True)
    logging.basicConfig(level=logging.INFO, format="[%(asctime)s][%(name)s][%(levelname)s] - %(message)s")
    print(side_by_side(args.run, args.overrides), end="")


if __name__ == "__main__":
    main()
