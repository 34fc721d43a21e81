"""`evaluate(cfg)`: play the actor over a split, score every episode, write the report.

Stages, each resumable from the run directory: episodes (skipped for instances already in
episodes.jsonl), scores (skipped for episodes already in scores.jsonl), report (always rebuilt).
Every piece comes from `aac.assembly.build_run`; engines are built only when a stage has work, and
shared when actor, judge and coder are one model.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Sequence
from pathlib import Path

from aac.assembly import Run, build_run, eval_protocol
from aac.cli import command_line_overrides, output_dir
from aac.config import TrainConfig, validate
from aac.errors import UserError
from aac.eval import records
from aac.eval.report import write_report
from aac.progress import bar
from aac.run_dir import adapter_of

log = logging.getLogger("aac.eval")
ACTOR_ADAPTER = "actor"
PAPER_PROTOCOL = {"prompt_style": "paper", "prompt_layout": "per_turn", "answer_cues": False, "shaped_input_cue": False,
                  "max_tokens_per_phase": {}, "stop_per_phase": {}, "domain": "pau"}


class EvalError(UserError, ValueError):
    """A run that cannot start (bad checkpoint, ...); one line."""

    what = "cannot evaluate"


def run_identity(cfg: TrainConfig, adapter: Path | None) -> dict:
    """What makes two runs comparable; resuming into a folder with a different identity is refused."""
    e = cfg.eval
    model = cfg.model.name
    name = e.name or f"{Path(model).name}{'+' + adapter.parent.name if adapter else ''} {e.mode}"
    return {
        "name": name, "model": model, "checkpoint": str(adapter) if adapter else None, "mode": e.mode,
        "data": e.data, "split": e.split, "engine": e.engine or cfg.rollout.engine, "dtype": cfg.model.dtype,
        "teacher": str(e.teacher),
        "temperature": e.temperature, "max_tokens_per_turn": e.max_tokens_per_turn,
        "history_window": e.history_window, "max_calls": e.max_calls, "call_timeout_s": e.call_timeout_s,
        "judge_model": e.judge_model or model, "coder_model": e.coder_model or model,
        "judge_max_tokens": e.judge_max_tokens, "coder_max_tokens": e.coder_max_tokens,
        "codematch_timeout_s": e.codematch_timeout_s, "seed": cfg.seed, **_protocol_identity(cfg),
        **({"service_call_timeout_s": e.service_call_timeout_s} if cfg.env.domain == "web" else {}),
    }


def _protocol_identity(cfg: TrainConfig) -> dict:
    """The prompt style, answer cues, per-phase budgets and domain, where they leave the paper's defaults
    (older run folders, which played those, keep their identity)."""
    from aac.rollout.driver import phase_budgets, phase_stops

    chosen = {"prompt_style": str(cfg.env.prompt_style), "prompt_layout": str(cfg.env.prompt_layout),
              "answer_cues": bool(cfg.env.answer_cues), "shaped_input_cue": bool(cfg.env.shaped_input_cue),
              "max_tokens_per_phase": phase_budgets(cfg.eval),
              "stop_per_phase": {k: list(v) for k, v in phase_stops(cfg.eval).items()}, "domain": str(cfg.env.domain)}
    return {k: v for k, v in chosen.items() if v != PAPER_PROTOCOL[k]}


def _add_timing(run_dir: Path, stage: str, seconds: float, count: int) -> None:
    path = run_dir / records.TIMING
    timing = json.loads(path.read_text()) if path.exists() else {}
    entry = timing.setdefault(stage, {"seconds": 0.0, "episodes": 0})
    entry["seconds"] = round(entry["seconds"] + seconds, 2)
    entry["episodes"] += count
    records.write_json(path, timing)


def play(cfg: TrainConfig, instances: list, run_dir: Path, run: Run, adapter: Path | None) -> None:
    """Stage 1: write an episode record for every instance not yet in episodes.jsonl."""
    from aac.env.protocol import sandbox_caller
    from aac.env.teacher import teacher_prompts
    from aac.eval.runner import ActorSpec, run_in_context, run_interactive
    from aac.rollout.driver import EpisodeSpec, phase_budgets, phase_stops

    e = cfg.eval
    path = run_dir / records.EPISODES
    done = {r["uid"] for r in records.read_jsonl(path, repair=True)}
    # an episode's key is its instance's place in the split: a resumed run samples what a fresh one would
    todo = [EpisodeSpec(k, inst) for k, inst in enumerate(instances) if inst.uid not in done]
    if done:
        log.info("resuming: %d of %d episodes already in %s", len(instances) - len(todo), len(instances), path)
    if not todo:
        return
    rank = json.loads((adapter / "adapter_config.json").read_text()).get("r", 16) if adapter else None
    engine = run.engines.actor(kind=e.engine, lora_rank=rank)
    if adapter is not None:
        engine.load_adapter(ACTOR_ADAPTER, str(adapter), 1)
    actor = ActorSpec(engine, ACTOR_ADAPTER if adapter else None, e.max_tokens_per_turn, e.temperature, cfg.seed,
                      cfg.rollout.top_p, teacher_prompts(e.teacher), phase_budgets(e), phase_stops(e))
    teacher = {} if e.teacher == "none" else {"teacher": str(e.teacher)}  # marks a teacher's episodes
    t0 = time.perf_counter()
    with bar(len(todo), f"{e.mode} episodes", enabled=cfg.logging.progress, log=log, unit="episodes") as advance:
        def save(recs: list[dict]) -> None:
            records.append_jsonl(path, [{**r, **teacher} for r in recs])

        if e.mode == "interactive":
            protocol = eval_protocol(e, cfg.env)
            caller = sandbox_caller(run.pool, spread_list=cfg.env.spread_list_args)
            run_interactive(todo, actor, protocol, caller, batch_size=e.batch_size, on_done=save,
                            progress=advance)
        else:
            run_in_context(todo, actor, batch_size=e.batch_size, on_done=save, progress=advance)
    _add_timing(run_dir, "play", time.perf_counter() - t0, len(todo))


def score(cfg: TrainConfig, instances: list, run_dir: Path, run: Run) -> None:
    """Stage 2: judge rating and code match for every episode not yet in scores.jsonl."""
    from aac.eval.scoring import score_episodes

    e = cfg.eval
    by_uid = {i.uid: i for i in instances}
    path = run_dir / records.SCORES
    scored = {r["uid"] for r in records.read_jsonl(path, repair=True)}
    todo = [ep for ep in records.read_jsonl(run_dir / records.EPISODES)
            if ep["uid"] in by_uid and ep["uid"] not in scored]
    if not todo:
        return
    judge, matcher = run.scorers()
    matcher = matcher if e.code_match else None
    t0 = time.perf_counter()
    with bar(len(todo), "scoring", enabled=cfg.logging.progress, log=log, unit="episodes") as advance:
        score_episodes(todo, by_uid, judge, matcher, gold=matcher is not None and (e.gold or bool(matcher.reference_rows)),
                       batch_size=e.batch_size, on_done=lambda recs: records.append_jsonl(path, recs), progress=advance,
                       coverage=run.informative_calls(), mutants=run.mutant_kills())
    _add_timing(run_dir, "score", time.perf_counter() - t0, len(todo))


def resolve(cfg: TrainConfig, overrides: Sequence[str] | None = None, *,
            announce: bool = True) -> tuple[TrainConfig, Path | None]:
    """The config an eval plays, and its checkpoint's adapter: a checkpoint of a training run (or
    `eval.protocol_from`) plays that run's protocol except where `overrides` (the command line's, by default)
    set a key (aac/eval/run_protocol.py), said in a log line (`announce`)."""
    from aac.eval.run_protocol import play_runs_protocol

    adapter = adapter_of(cfg.eval.checkpoint) if cfg.eval.checkpoint else None
    cfg = play_runs_protocol(cfg, adapter, command_line_overrides() if overrides is None else overrides, announce=announce)
    validate(cfg)
    return cfg, adapter


def evaluate(cfg: TrainConfig, *, overrides: Sequence[str] | None = None, run: Run | None = None,
             run_dir: Path | None = None) -> dict:
    """Run the harness described by a composed `eval_config` (played as `resolve` says); returns the report
    (also in out_dir, or `run_dir` where given: aac.describe plays a package's functions and classes apart).
    `run`: pieces to play on (engines, sandbox pool, scorers) that the caller built from an eval of the same
    model and closes, so evals in turn start each engine once (aac/eval/side_by_side.py)."""
    from aac.datasets import load_instances

    cfg, adapter = resolve(cfg, overrides)
    if run is not None and (run.cfg.model != cfg.model or run.cfg.rollout != cfg.rollout):
        raise EvalError("evaluate(run=...): the pieces were built for another model or engine settings")
    e = cfg.eval
    run_dir = run_dir or output_dir(cfg)
    run_dir.mkdir(parents=True, exist_ok=True)
    if adapter is not None and (e.engine or cfg.rollout.engine) == "openai":
        raise EvalError("engine=openai cannot load checkpoint=: serve the adapter with the endpoint "
                        "(vllm serve --lora-modules NAME=PATH) and set rollout.openai.model=NAME")
    instances = load_instances(e.data, split=e.split, limit=e.limit, on_bad_row=cfg.env.on_bad_row,
                               domain=cfg.env.domain)
    records.check_same_run(run_dir, run_identity(cfg, adapter))
    log.info("%s: %d instances of %s (%s) -> %s", e.mode, len(instances), e.data, e.split, run_dir)
    own = run is None
    pieces = build_run(cfg, train=False) if run is None else run
    try:
        pieces.pool.keep_warm(e.batch_size)  # one function per live episode
        play(cfg, instances, run_dir, pieces, adapter)
        if e.score:
            score(cfg, instances, run_dir, pieces)
    finally:
        if own:
            pieces.close()
    report = write_report(run_dir)
    log.info("description score %.3f, code match %.2f %%, %s", report["description_score"]["mean"],
             100 * report["code_match"]["mean"], run_dir / records.REPORT_MD)
    return report
