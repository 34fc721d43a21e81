"""Teacher traces for supervised fine-tuning: the actor turns of `aac.eval` runs as chat samples.

An eval run (aac/eval/records.py) stores each episode's replies and call results, not the prompts.
The prompts are rebuilt by replaying the replies through the protocol (aac/env/replay.py), so a trace's
prompts are exactly what the actor saw (and what training shows it). An episode is kept when its judged description score is
>= `min_score` (the release's warm-start kept the *worst* traces: its comparison was inverted).
A teacher's run (`eval.teacher=answer_aware`, marked in run.json) loads the same way: the replay
gives the ordinary prompts, without the privileged text the teacher saw, so the student learns the
teacher's replies from its own view (CodeARC-SFT).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING

from aac.env.instance import Instance
from aac.env.protocol import ProtocolConfig
from aac.env.replay import ReplayError, TraceTurn, replay
from aac.errors import UserError
from aac.eval.records import load_run

if TYPE_CHECKING:
    from aac.config import EnvConfig

log = logging.getLogger(__name__)


class TraceError(UserError, ValueError):
    """An eval run that cannot be turned into samples (one line)."""

    what = "cannot make traces"


@dataclass
class TraceSummary:
    episodes: int = 0
    kept: int = 0
    below_threshold: int = 0
    unscored: int = 0
    not_replayed: int = 0  # the replay diverged from the record, or the instance is gone
    turns: int = 0
    teachers: dict[str, str] = field(default_factory=dict)  # run dir -> the teacher that played it

    def text(self) -> str:
        return (f"{self.episodes} episodes: {self.kept} kept ({self.turns} turns), {self.below_threshold} "
                f"below the score threshold, {self.unscored} unscored, {self.not_replayed} not replayable; "
                f"teacher {', '.join(sorted(set(self.teachers.values()))) or '-'}")


def judged_score(score_record: dict | None) -> float | None:
    """The judge's description score of a scores.jsonl record (None when not judged)."""
    judge = (score_record or {}).get("judge") or {}
    value = judge.get("score")
    return None if value is None else float(value)


def keep_episode(score_record: dict | None, min_score: float) -> bool:
    """The filter: judged, and at least `min_score` (higher is better: 1-5)."""
    score = judged_score(score_record)
    return score is not None and score >= min_score


def run_protocol(identity: dict, env: EnvConfig) -> ProtocolConfig:
    """The protocol an eval run played (its window, call budget, timeout, prompt style and answer
    cues; the env's prompt bounds)."""
    try:
        ev = SimpleNamespace(history_window=identity["history_window"], max_calls=identity["max_calls"],
                             call_timeout_s=identity["call_timeout_s"])
    except KeyError as e:
        raise TraceError(f"run.json lacks {e.args[0]}: not an interactive aac.eval run") from None
    played = ProtocolConfig.from_eval(ev, env)
    # a run's identity names its style and cues only where they left the paper's (older runs too)
    return replace(played, prompt_style=identity.get("prompt_style", "paper"),
                   prompt_layout=identity.get("prompt_layout", "per_turn"),
                   answer_cues=identity.get("answer_cues", False),
                   shaped_input_cue=identity.get("shaped_input_cue", False))


def load_turns(run_dirs: Iterable[str | Path], min_score: float, env: EnvConfig,
               instances_for=None) -> tuple[list[TraceTurn], TraceSummary]:
    """The turns of every kept episode of the runs. `instances_for(data, split, domain)` loads a run's
    instances of a domain (default: aac.datasets.load_instances)."""
    if instances_for is None:
        from aac.datasets import load_instances

        def instances_for(data: str, split: str, domain: str = "pau") -> list[Instance]:
            return load_instances(data, split=split, domain=domain)

    summary, turns = TraceSummary(), []
    for run_dir in run_dirs:
        identity, episodes, scores = load_run(run_dir)
        if identity.get("mode") != "interactive":
            raise TraceError(f"{run_dir}: mode {identity.get('mode')!r}; SFT needs interactive episodes")
        protocol = run_protocol(identity, env)
        summary.teachers[str(run_dir)] = identity.get("teacher", "none")
        domain = identity.get("domain", "pau")  # a run's identity names its domain where it is not pau
        by_uid = {i.uid: i for i in instances_for(identity["data"], identity["split"], domain)}
        for record in episodes:
            summary.episodes += 1
            score = scores.get(record["uid"])
            if judged_score(score) is None:
                summary.unscored += 1
                continue
            if not keep_episode(score, min_score):
                summary.below_threshold += 1
                continue
            instance = by_uid.get(record["uid"])
            try:
                if instance is None:
                    raise TraceError(f"{record['uid']}: not in {identity['data']} ({identity['split']})")
                episode_turns = replay(record, instance, protocol)
            except (TraceError, ReplayError) as e:
                log.warning("skipping an episode: %s", e)
                summary.not_replayed += 1
                continue
            summary.kept += 1
            summary.turns += len(episode_turns)
            turns += episode_turns
    return turns, summary
