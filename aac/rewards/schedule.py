"""The per-step reward schedule of SPEC §6: a pure function of a step record and critic scores.

Every constant comes from `RewardConfig` (`rewards.*`). Choices where SPEC is silent:

- Length is counted on the step's whole `response` (think text included: the model pays for
  every word it generates), for every phase; the input turn's reply *is* its input.
- A reasoning turn that fails to parse (the protocol found no plan in it) gets `-p_parse`
  instead of a critic judgment, like the other phases; the length term still applies.
- An input turn is a failure when it did not parse or its call raised or timed out; the
  protocol makes a call for every input that parses, so a parsed turn without a call is
  treated as a failure too (nothing was observed).
- A reflect turn that fails to parse gets `-p_parse` *plus* the hypothesis terms on the
  hypothesis it leaves (the previous one), as not stopping: a parse failure is then always
  p_parse worse than the equivalent valid NO, and never an escape from a premature-stop
  penalty.
- `b_term` reads the agent's decision (`step.decision is True`), not `step.done`, which is
  also true on the timeout step.
- The step that reaches T_max (`step.timed_out`) gets its own phase reward *plus*
  `timeout_penalty`: its content is judged like any other step of its phase (the `turn`
  estimator compares it with them), and the penalty is the added cost of running out.
- `final`: every step gets 0 except the episode's last (`step.done`), which gets the terminal
  outcome `lambda_h * (s_hyp + b_stop)` of the final hypothesis, `b_stop` being
  `b_term(True, s_hyp)` when the agent stopped and 0 otherwise, plus `timeout_penalty` when it
  timed out. No length or parse shaping. (`b_term`'s "right to go on" is a per-step signal:
  after the last step there is nothing to go on to.)
- `sym_info` is `aac` scored by the symmetric critic (`critic.mode=symmetric`).
- `no_informativeness`: reasoning turns get only their length term (and `-p_parse` if
  unparsable); nothing asks the critic about them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Optional

SCHEDULES = ("aac", "final", "sym_info", "no_informativeness")
INFORMATIVENESS = "informativeness"
HYPOTHESIS = "hypothesis"


def phase_kind(phase: Any) -> str:
    """'reasoning' | 'input' | 'reflect' from a `Phase` member or its string value."""
    kind = getattr(phase, "value", phase)
    if kind not in ("reasoning", "input", "reflect"):
        raise ValueError(f"unknown phase {phase!r}: expected reasoning, input or reflect")
    return kind


def length_penalty(text: str, tau: int) -> float:
    """Capped length penalty r_len: 0 up to tau words, then -(n - tau) / (2 tau), floored at -1."""
    if tau <= 0:
        raise ValueError(f"length penalty tau must be > 0, got {tau}")
    n = len(text.split())
    return 0.0 if n <= tau else -min((n - tau) / (2 * tau), 1.0)


def b_term(stopped: bool, s: float, cfg: Any) -> float:
    """+1 right stop (s > stop_threshold), -1 premature stop, +1 right to go on (s < continue_threshold)."""
    if stopped:
        return 1.0 if s > cfg.stop_threshold else -1.0
    return 1.0 if s < cfg.continue_threshold else 0.0


def _schedule(cfg: Any) -> str:
    if cfg.schedule not in SCHEDULES:
        raise ValueError(f"rewards.schedule={cfg.schedule!r} is not one of: {', '.join(SCHEDULES)}")
    return cfg.schedule


def _t_max(cfg: Any) -> int:
    t_max = cfg.t_max
    if isinstance(t_max, bool) or not isinstance(t_max, int) or t_max <= 0:
        raise ValueError(f"rewards.t_max must be a positive int (resolved from env.max_steps), got {t_max!r}")
    return t_max


def judgment_kind(step: Any, cfg: Any) -> Optional[str]:
    """The critic judgment `step_reward` needs for this step under the schedule, or None."""
    schedule, kind = _schedule(cfg), phase_kind(step.phase)
    if schedule == "final":
        return HYPOTHESIS if step.done else None
    if kind == "reflect":
        return HYPOTHESIS
    if kind == "reasoning" and schedule != "no_informativeness" and step.parse_ok:
        return INFORMATIVENESS
    return None


def _check_score(step: Any, score: Optional[float], cfg: Any) -> None:
    need = judgment_kind(step, cfg)
    if need is None:
        return
    if score is None:
        raise ValueError(f"step {step.index} ({phase_kind(step.phase)}) needs its {need} score under "
                         f"rewards.schedule={cfg.schedule}, got None")
    if not 0.0 <= score <= 1.0:
        raise ValueError(f"step {step.index}: critic score {score} is outside [0, 1]")


def _phase_reward(step: Any, score: Optional[float], cfg: Any) -> float:
    kind = phase_kind(step.phase)
    if kind == "reasoning":
        if not step.parse_ok:
            judged = -cfg.p_parse
        elif cfg.schedule == "no_informativeness":
            judged = 0.0
        else:
            judged = score
        return judged + length_penalty(step.response, cfg.tau_reason)
    if kind == "input":
        if not step.parse_ok or step.call is None or not step.call.ok:
            outcome = -cfg.p_parse
        else:
            outcome = cfg.lambda_h / (2 * _t_max(cfg))
        return outcome + length_penalty(step.response, cfg.tau_input)
    stopped = step.decision is True
    parse = 0.0 if step.parse_ok else -cfg.p_parse
    return parse + cfg.lambda_h * (score + b_term(stopped, score, cfg)) + length_penalty(step.response, cfg.tau_reflect)


def _terminal_reward(step: Any, score: Optional[float], cfg: Any) -> float:
    stopped = step.decision is True and phase_kind(step.phase) == "reflect"
    b_stop = b_term(True, score, cfg) if stopped else 0.0
    return cfg.lambda_h * (score + b_stop) + (cfg.timeout_penalty if step.timed_out else 0.0)


def step_reward(step: Any, score: Optional[float], cfg: Any) -> float:
    """The reward of one step; `score` is the critic's judgment named by `judgment_kind` (else None)."""
    _check_score(step, score, cfg)
    if _schedule(cfg) == "final":
        return _terminal_reward(step, score, cfg) if step.done else 0.0
    reward = _phase_reward(step, score, cfg)
    return reward + (cfg.timeout_penalty if step.timed_out else 0.0)


def episode_rewards(steps: Sequence[Any], scores: Sequence[Optional[float]], cfg: Any) -> list[float]:
    """`step_reward` for each step of one episode; `scores[i]` belongs to `steps[i]`."""
    if len(steps) != len(scores):
        raise ValueError(f"episode_rewards: {len(steps)} steps but {len(scores)} scores")
    return [step_reward(step, score, cfg) for step, score in zip(steps, scores)]
