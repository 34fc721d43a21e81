"""What a page shows, read from a training run dir (OUT/episodes, metrics.jsonl) or an `aac.eval` dir
(episodes.jsonl, scores.jsonl, run.json, report.json), as one plain form (`Side`).

An episode here: its place (step, uid), the flags the index filters on (concluded, premature stop,
format errors, timed out, score), its return, and its turns (reply, call and result, hypothesis,
critic score, reward, advantage); an eval's episode also its query efficiency over its row's mutants
(`qe`: the share killed after each query, beside the oracle's; aac/eval/query_efficiency.py). A training episode's score is the critic's score of its final
hypothesis (0-1); an eval episode's is the judge's rating of its description (1-5). The privileged
side (gold description, source code) goes to `Side.functions`, once per function.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import aac.episode_files as episode_files
from aac.errors import UserError
from aac.run_dir import METRICS, run_of

log = logging.getLogger(__name__)

# the files of an aac.eval dir (aac/eval/records.py names them; the viewer reads, never writes them)
EVAL_EPISODES, EVAL_SCORES, EVAL_RUN, EVAL_REPORT = "episodes.jsonl", "scores.jsonl", "run.json", "report.json"


class ViewError(UserError, ValueError):
    """A folder the viewer cannot draw (one line)."""

    what = "cannot view"


@dataclass
class Side:
    """One run dir or eval dir, as the page draws it."""

    kind: str  # "train" | "eval"
    name: str
    path: str
    episodes: list[dict]
    functions: dict[str, dict] = field(default_factory=dict)  # uid -> {"description", "code"}: privileged
    metrics: list[dict] = field(default_factory=list)  # metrics.jsonl rows (training)
    summary: dict[str, Any] = field(default_factory=dict)  # report.json's headline numbers (eval)
    score_range: tuple[float, float] = (0.0, 1.0)


def _jsonl(path: Path) -> list[dict]:
    """Complete lines only: a run killed mid-write leaves a partial last line."""
    if not path.exists():
        return []
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return out


def _turn(t: dict) -> dict:
    call = t.get("call")
    return {
        "i": t.get("index"), "phase": t["phase"], "text": (t.get("prefill") or "") + (t.get("response") or ""),
        "ok": t.get("parse_ok", True), "parsed": t.get("parsed"), "decision": t.get("decision"),
        "hyp": t.get("hypothesis"),
        "call": None if call is None else {"out": call.get("output_repr"), "err": call.get("error"),
                                           "kind": call.get("kind")},
        "judged": t.get("judged"), "score": t.get("score"), "reward": t.get("reward"), "adv": t.get("advantage"),
        "ver": t.get("adapter_version"), "ph": t.get("prompt_hash"), "pt": t.get("prompt_tokens"),
    }


def _episode(rec: dict, turns: list[dict], *, eid: str, score: Optional[float], premature: Optional[bool]) -> dict:
    first_prompt = next((t.get("prompt") for t in turns if t.get("prompt")), None)
    return {
        "id": eid, "step": rec.get("step"), "uid": rec["uid"], "source": rec.get("source"),
        "concluded": bool(rec.get("concluded")), "premature": premature, "timed_out": bool(rec.get("timed_out")),
        "format_errors": rec.get("format_errors") or sum(not t.get("parse_ok", True) for t in turns),
        "score": score, "ret": rec.get("return"), "queries": rec.get("num_queries"),
        "description": rec.get("description") or "", "turns": [_turn(t) for t in turns],
        # the first turn's prompt shows the task as the actor saw it; later ones repeat it with the history
        "prompt": first_prompt,
    }


def load_train(run_dir: Path) -> Side:
    records = episode_files.read_steps(run_dir / episode_files.DIR)
    if not records:
        raise ViewError(f"{run_dir}: no kept episodes in {episode_files.DIR}/ (logging.episodes_per_step=0, "
                        "or a run from before the episode log)")
    episodes, functions = [], {}
    for n, rec in enumerate(records):
        turns = rec["turns"]
        final = next((t for t in reversed(turns) if t.get("judged") == "hypothesis" and t.get("score") is not None),
                     None)
        episodes.append(_episode(rec, turns, eid=f"s{rec['step']}-{n}", score=None if final is None else final["score"],
                                 premature=rec.get("premature_stop")))
        if rec.get("privileged"):
            functions[rec["uid"]] = rec["privileged"]
    return Side("train", run_dir.name, str(run_dir), episodes, functions, metrics=_jsonl(run_dir / METRICS))


def _eval_functions(identity: dict, uids: set[str]) -> dict[str, dict]:
    """The gold side of the eval's functions, from the dataset its run.json names ({} when it cannot be read)."""
    if "data" not in identity:  # a run dir without run.json (hand-made, tests)
        return {}
    try:
        from aac.datasets import load_instances

        instances = load_instances(identity["data"], split=identity["split"], domain=identity.get("domain", "pau"))
    except Exception as e:  # the page still shows the episodes
        log.warning("aac.view: no privileged panel for %s (%s: %s)", identity.get("data"), type(e).__name__, e)
        return {}
    return {i.uid: {"description": i.description, "code": i.code} for i in instances if i.uid in uids}


def load_eval(eval_dir: Path) -> Side:
    if not (eval_dir / EVAL_EPISODES).exists():
        raise ViewError(f"{eval_dir}: neither a training run (no {episode_files.DIR}/) nor an eval dir "
                        f"(no {EVAL_EPISODES})")
    identity = json.loads((eval_dir / EVAL_RUN).read_text(encoding="utf-8")) if (eval_dir / EVAL_RUN).exists() else {}
    scores = {r["uid"]: r for r in _jsonl(eval_dir / EVAL_SCORES)}
    episodes = []
    for rec in _jsonl(eval_dir / EVAL_EPISODES):
        scored = scores.get(rec["uid"]) or {}
        # no per-turn critic in an eval: a premature stop is unknown there
        episode = _episode(rec, rec.get("steps") or [], eid=rec["uid"], score=(scored.get("judge") or {}).get("score"),
                           premature=None)
        episodes.append({**episode, "qe": scored.get("query_efficiency")})
    report = json.loads((eval_dir / EVAL_REPORT).read_text(encoding="utf-8")) if (eval_dir / EVAL_REPORT).exists() else {}
    summary = {"description score (1-5)": (report.get("description_score") or {}).get("mean"),
               "code match": (report.get("code_match") or {}).get("mean"),
               "queries / episode": report.get("queries_mean"),
               "informative calls / episode": report.get("informative_calls_mean"),
               "mutants killed / episode": (report.get("query_efficiency") or {}).get("killed_mean"),
               "... of the oracle's with as many queries": (report.get("query_efficiency") or {}).get("vs_oracle_mean"),
               "concluded %": report.get("concluded_pct"), "format errors / turn": report.get("format_error_rate")}
    name = identity.get("name") or eval_dir.name
    return Side("eval", name, str(eval_dir), episodes, _eval_functions(identity, {e["uid"] for e in episodes}),
                summary={k: v for k, v in summary.items() if v is not None}, score_range=(1.0, 5.0))


def load(path: str | Path) -> Side:
    """A training run dir (or a path inside it: a checkpoint, its adapter) or an eval dir."""
    path = run_of(path)
    if not path.is_dir():
        raise ViewError(f"{path}: no such directory")
    return load_train(path) if (path / episode_files.DIR).is_dir() else load_eval(path)
