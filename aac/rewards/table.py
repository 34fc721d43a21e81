"""The paper's per-step reward table (docs/method.md §6), exactly as stated, and its ablations.

`step_reward` is a pure function of a step record and its critic score. Choices where docs/method.md is silent:

- Length is counted on the step's whole `response` (think text included: the model pays for
  every word it generates), for every phase; the input turn's reply *is* its input.
- A reasoning turn that fails to parse (the protocol found no plan in it) gets `-p_parse`
  instead of a critic judgment, like the other phases; the length term still applies.
- An input turn is a failure when it did not parse or its call raised or timed out.
- A reflect turn that fails to parse gets `-p_parse` *plus* the hypothesis terms on the
  hypothesis it leaves (the previous one), as not stopping: a parse failure is then always
  p_parse worse than the equivalent valid NO, and never an escape from a premature-stop
  penalty.
- `b_term` reads the agent's decision (`step.decision is True`), not `step.done`, which is
  also true on the timeout step.
- The step that reaches T_max (`step.timed_out`) gets its own phase reward *plus*
  `timeout_penalty`.
- A judged step whose score is None (the critic gave no valid rating, or no reply) gets no
  judged term: no informativeness, no `lambda_h * (s + b_term)` (docs/method.md §7.1 P5).
- `final`: every step gets 0 except the episode's last (`step.done`), which gets the terminal
  outcome `lambda_h * (s_hyp + b_stop)` of the final hypothesis (`graded_text`: whatever the last
  phase), `b_stop` being `b_term(True, s_hyp)` when the agent stopped and 0 otherwise, plus
  `timeout_penalty` when it timed out. No length or parse shaping. (`b_term`'s "right to go on"
  is a per-step signal: after the last step there is nothing to go on to.) Its config group sets
  `advantage: final`, the release's broadcast estimator.
- `sym_info` is `aac` scored by the symmetric critic (`critic.mode=symmetric`).
- `no_informativeness`: reasoning turns get only their length term (and `-p_parse` if
  unparsable); nothing asks the critic about them.

Summed into an episode return, this table pays for stalling (docs/method.md §7.1): the default schedule is
`aac_potential` (aac/rewards/potential.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from aac.config import RewardConfig
from aac.phase import Phase
from aac.rewards.terms import b_term, check_score, format_penalty, input_reward, late_stop, length_penalty

if TYPE_CHECKING:
    from aac.env.protocol import StepRecord


def _phase_reward(step: StepRecord, score: Optional[float], cfg: RewardConfig) -> float:
    kind = Phase(step.phase)
    if kind == "reasoning":
        if not step.parse_ok:
            judged = format_penalty(step, cfg)
        elif cfg.schedule == "no_informativeness" or score is None:
            judged = 0.0
        else:
            judged = score
        return judged + length_penalty(step.response, cfg.tau_reason)
    if kind == "input":
        return input_reward(step, cfg)
    stopped = step.decision is True
    parse = format_penalty(step, cfg)
    judged = 0.0 if score is None else cfg.lambda_h * (score + b_term(stopped, score, cfg)) + late_stop(stopped, score, cfg)
    return parse + judged + length_penalty(step.response, cfg.tau_reflect)


def _terminal_reward(step: StepRecord, score: Optional[float], cfg: RewardConfig) -> float:
    stopped = step.decision is True and Phase(step.phase) == "reflect"
    judged = 0.0
    if score is not None:
        judged = cfg.lambda_h * (score + (b_term(True, score, cfg) if stopped else 0.0))
    return judged + (cfg.timeout_penalty if step.timed_out else 0.0)


def step_reward(step: StepRecord, score: Optional[float], cfg: RewardConfig) -> float:
    """The reward of one step; `score` is the critic's judgment named by `judgment_kind` (None: none
    was asked for, or the critic gave none)."""
    schedule = cfg.schedule
    if schedule == "aac_potential":
        raise ValueError("rewards.schedule=aac_potential rewards a step by its place in the episode: "
                         "use episode_rewards")
    check_score(step, score, cfg)
    if schedule == "final":
        return _terminal_reward(step, score, cfg) if step.done else 0.0
    reward = _phase_reward(step, score, cfg)
    return reward + (cfg.timeout_penalty if step.timed_out else 0.0)
