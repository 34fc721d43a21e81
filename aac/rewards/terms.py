"""The pieces every schedule shares: the length and call terms, b_term, and which
critic judgment a step needs (and of what text).

Every constant comes from `RewardConfig` (`rewards.*`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from aac.config import RewardConfig, Schedule
from aac.phase import Phase

if TYPE_CHECKING:
    from aac.env.protocol import StepRecord

SCHEDULES = tuple(Schedule)  # defined once, in aac.config; values are checked when the config loads
INFORMATIVENESS = "informativeness"
HYPOTHESIS = "hypothesis"


def length_penalty(text: str, tau: int) -> float:
    """Capped length penalty r_len: 0 up to tau words, then -(n - tau) / (2 tau), floored at -1."""
    n = len(text.split())
    return 0.0 if n <= tau else -min((n - tau) / (2 * tau), 1.0)


def b_term(stopped: bool, s: float, cfg: RewardConfig) -> float:
    """+1 right stop (s > stop_threshold), -1 premature stop, +1 right to go on (s < continue_threshold)."""
    if stopped:
        return 1.0 if s > cfg.stop_threshold else -1.0
    return 1.0 if s < cfg.continue_threshold else 0.0


def late_stop(stopped: bool, s: float, cfg: RewardConfig) -> float:
    """`late_stop_penalty` for going on (not `stopped`) with a hypothesis that already passes the stop
    threshold, else 0."""
    return cfg.late_stop_penalty if not stopped and s > cfg.stop_threshold else 0.0


def _failed(step: StepRecord) -> bool:
    """A reply that did not parse, or an input whose call raised or timed out (a parsed input without a
    call is a failure too: nothing was observed)."""
    return not step.parse_ok or (Phase(step.phase) == "input" and (step.call is None or not step.call.ok))


def format_penalty(step: StepRecord, cfg: RewardConfig) -> float:
    """-p_parse for a failed step (`_failed`), else 0. Every schedule but `final` pays it."""
    return -cfg.p_parse if _failed(step) else 0.0


def input_reward(step: StepRecord, cfg: RewardConfig) -> float:
    """`format_penalty` if the input or its call failed, else lambda_h / (2 T_max); plus r_len."""
    outcome = -cfg.p_parse if _failed(step) else cfg.lambda_h / (2 * cfg.t_max)
    return outcome + length_penalty(step.response, cfg.tau_input)


def judgment_kind(step: StepRecord, cfg: RewardConfig) -> Optional[str]:
    """The critic judgment this step's reward reads under the schedule, or None (`rewards.mask_hypothesis`:
    none for reflect turns).

    Grade it on `graded_text(step, kind)`: a hypothesis judgment grades the hypothesis the step
    leaves, whatever its phase (under `final` the last step may be a reasoning turn)."""
    schedule, kind = cfg.schedule, Phase(step.phase)
    if schedule == "final":
        return HYPOTHESIS if step.done else None
    if kind == "reflect":
        # masked: no hypothesis score, so neither schedule pays a hypothesis or stop term (as for P5)
        return None if cfg.mask_hypothesis else HYPOTHESIS
    if kind == "reasoning" and schedule != "no_informativeness" and step.parse_ok:
        return INFORMATIVENESS
    return None


def graded_text(step: StepRecord, kind: str) -> str:
    """What the critic grades for a judgment of `kind` on `step`: the plan of a reasoning turn, or the
    hypothesis held after the step (a reflect that failed to parse keeps the previous one)."""
    if kind == HYPOTHESIS:
        return step.hypothesis
    if kind == INFORMATIVENESS:
        return step.parsed or step.text
    raise ValueError(f"unknown judgment kind {kind!r}: expected {HYPOTHESIS} or {INFORMATIVENESS}")


def check_score(step: StepRecord, score: Optional[float], cfg: RewardConfig) -> None:
    """A score is None (no judgment, or a failed one: masked) or in [0, 1] for a step that asked for one."""
    if score is None:
        return
    if judgment_kind(step, cfg) is None:
        raise ValueError(f"step {step.index} ({Phase(step.phase)}) asks for no critic score under "
                         f"rewards.schedule={cfg.schedule}, got {score}")
    if not 0.0 <= score <= 1.0:
        raise ValueError(f"step {step.index}: critic score {score} is outside [0, 1]")
