"""An episode's prompts rebuilt from its record: the recorded replies are stepped through the protocol's own
`Episode`, each call answered with its recorded result, so every prompt is exactly what the actor saw. A record
(aac.eval's, a training run's) keeps replies and call results, never the prompt text: the training run's episode
log (aac/training/episode_log.py) and SFT's traces (aac/traces.py) both rebuild the prompts here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from aac.env.instance import Instance
from aac.env.protocol import Episode, ProtocolConfig
from aac.errors import UserError
from aac.sandbox.result import CallKind, CallResult


class ReplayError(UserError, ValueError):
    """A record the protocol does not replay to the same turns (one line)."""

    what = "cannot replay"


@dataclass(frozen=True)
class TraceTurn:
    """One actor turn: the chat it was prompted with and its reply."""

    uid: str
    messages: list[dict]
    reply: str


def recorded_caller(steps: list[dict]) -> Callable[[str, str, float], CallResult]:
    """A caller that returns the recorded results of the episode's calls, in order."""
    calls = iter([s["call"] for s in steps if s.get("phase") == "input" and s.get("call") is not None])

    def call(source: str, input_str: str, timeout_s: float) -> CallResult:
        rec = next(calls, None)
        if rec is None:
            raise ReplayError("the replay made more calls than the record holds")
        error = rec.get("error")
        kind = rec.get("kind") or (CallKind.OK if error is None else CallKind.RAISED)  # records before kinds
        return CallResult(output=None, error=error, duration_s=rec.get("duration_s", 0.0),
                          output_repr=rec.get("output_repr", "None"), normalized=None, kind=kind)

    return call


def replay(record: dict, instance: Instance, protocol: ProtocolConfig) -> list[TraceTurn]:
    """The episode's turns with their prompts, rebuilt; ReplayError when the replay diverges from the record."""
    steps = record.get("steps") or []
    episode = Episode(instance, protocol, recorded_caller(steps))
    turns = []
    for step in steps:
        if episode.done:
            raise ReplayError(f"{record['uid']}: the replay ended before the record")
        messages = episode.prompt()
        got = episode.step(step["response"])
        if got.phase.value != step["phase"] or got.parsed != step.get("parsed"):
            raise ReplayError(f"{record['uid']}: the replay diverged at turn {step['index']}")
        turns.append(TraceTurn(record["uid"], messages, step["response"]))
    return turns
