"""A played episode as a JSON record: the form `aac.eval` stores, scores and reports (and training's
held-out evaluation scores the same way)."""

from __future__ import annotations

from collections.abc import Iterable

from aac.env.prompts import INITIAL_HYPOTHESIS
from aac.env.protocol import StepRecord
from aac.rollout.driver import PlayedEpisode
from aac.sandbox.result import CallKind


def _step_dict(step: StepRecord) -> dict:
    call = step.call
    return {
        # the reply is prefill + response: the prefill was the prompt's (an answer cue), the response generated
        "index": step.index, "phase": step.phase.value, "prefill": step.prefill, "response": step.response,
        "parse_ok": step.parse_ok,
        "parsed": step.parsed, "decision": step.decision, "hypothesis": step.hypothesis, "done": step.done,
        "call": None if call is None else {"output_repr": call.output_repr, "error": call.error,
                                           "kind": call.kind.value, "duration_s": round(call.duration_s, 4)},
    }


def interactive_record(played: PlayedEpisode) -> dict:
    episode = played.episode
    steps = episode.steps
    inst = episode.instance
    return {
        "uid": inst.uid, "source": inst.source, "mode": "interactive",
        # an episode that never formed a hypothesis predicted nothing (scored 1 without asking the judge)
        "description": "" if episode.hypothesis == INITIAL_HYPOTHESIS else episode.hypothesis,
        "num_queries": episode.num_queries,
        "concluded": episode.concluded, "timed_out": episode.timed_out,
        "turns": len(steps), "format_errors": sum(not s.parse_ok for s in steps),
        "observations": [[o.input, o.output_repr, o.error] for o in episode.observations],
        "steps": [_step_dict(s) for s in steps],
        "gen_tokens": played.generated_tokens, "engine_errors": played.engine_errors,
        "elapsed_s": round(played.elapsed_s, 3),
    }


def call_counts(records: Iterable[dict]) -> dict[str, int]:
    """The sandbox calls of these episode records: `calls`, `timeouts` (ran past the call timeout and were
    killed: a black box that hangs) and `errors` (the sandbox failed them: a worker crashed or never
    started). A function's own exception is its answer, not counted here."""
    kinds = [CallKind(s["call"]["kind"]) for r in records for s in r.get("steps", ()) if (s.get("call") or {}).get("kind")]
    return {"calls": len(kinds), "timeouts": sum(k is CallKind.TIMEOUT for k in kinds),
            "errors": sum(k.sandbox_failed for k in kinds)}
