"""`aac_potential`, the default schedule: the §6 terms rearranged so the episode return has the
properties of docs/method.md §7.1 (P1-P5). It needs the whole episode, so it is computed by episode.

Per step (defaults: lambda_h = 2, p_parse = 0.5, T_max = 40):
- reasoning: `info_budget * r_judge / ceil(T_max / 3)` + r_len(tau_reason); `-p_parse` instead of
  the judged term when no plan parsed. An episode's plans earn at most `info_budget` in all, however
  many it writes (the table pays up to 1 per plan: 14 in a 40-step episode).
- input: as in the table: `-p_parse` on a failed call, else `lambda_h / (2 T_max)` (summing to at
  most lambda_h / 2 over an episode: 13 calls, 0.325, at T_max = 40), + r_len(tau_input).
- reflect: `lambda_h * (s_t - s_prev)` + r_len(tau_reflect) (+ `-p_parse` if it did not parse).
  The hypothesis term is a potential difference (Ng et al. 1999) over Phi = lambda_h * s: it
  telescopes, so an episode's hypothesis terms add up to `lambda_h * s_final`. s_prev is the last
  *judged* hypothesis's score, 0 before the first (the initial "not yet formed" describes nothing).
  A better hypothesis raises its own turn's reward; the next turn's step is smaller by as much, so
  the credit stays with the turn that improved it and the return only sees the final quality.
- the terminal decision: the YES reflect also gets `lambda_h * b_term(True, s)`: +lambda_h for a
  right stop (s > stop_threshold), -lambda_h for a premature one. Once per episode, on the turn that
  decided. The table's per-turn "right to go on" bonus (+lambda_h on every NO with s < 0.3) is not
  paid: summed, it is the stalling incentive; going on is paid by the better hypothesis it leads to.
  `rewards.late_stop_penalty` (0 by default) is the reward of a NO whose hypothesis already passes the
  stop threshold, on that turn: for a verified score (docs/method.md §7.5; it gives up P2).
- timeout: `timeout_penalty` is spread equally over the reflect turns that did not stop (the
  decisions that ran out the clock), not put on the last step, usually a plan; an episode with no
  reflect turn puts it on its last step.
- a judged step whose score is None (no valid rating, or no reply) gets no judged term: no
  informativeness, no potential step (s_prev carries over to the next judged hypothesis), no stop
  bonus or penalty (P5). Unjudged terms (length, parse, call, timeout) stay.
- `rewards.mask_hypothesis`: no reflect turn asks for a score, so none gets a hypothesis or stop
  term; the return is what the sandbox verifies (plans' informativeness under coverage scoring, calls,
  format, length, timeout). Stopping then pays only by ending before a format error or the timeout.

Why this holds P1-P4 (tests/test_reward_properties.py checks them on random episodes): the
hypothesis terms sum to lambda_h * s_final <= lambda_h, the stop term is +-lambda_h once, plans and
calls add at most info_budget + 0.325, and length terms are <= 0 and 0 within tau. So an episode
stopping correctly returns > lambda_h * (stop_threshold + 1) = 3.4 (with calls that succeed), one
timing out at most lambda_h + info_budget + 0.325 + timeout_penalty = 2.325;
and with the decision fixed, a higher s raises its own turn's reward and never lowers the return.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Optional

from aac.config import RewardConfig
from aac.phase import Phase
from aac.rewards.terms import b_term, check_score, format_penalty, input_reward, late_stop, length_penalty

if TYPE_CHECKING:
    from aac.env.protocol import StepRecord


def _info_per_plan(cfg: RewardConfig) -> float:
    return cfg.info_budget / math.ceil(cfg.t_max / 3)  # reasoning turns sit at steps 0, 3, 6, ...


def potential_rewards(steps: Sequence[StepRecord], scores: Sequence[Optional[float]], cfg: RewardConfig) -> list[float]:
    """The `aac_potential` reward of each step of one episode; `scores[i]` belongs to `steps[i]`."""
    per_plan = _info_per_plan(cfg)
    s_prev = 0.0
    rewards = []
    for step, score in zip(steps, scores):
        check_score(step, score, cfg)
        kind = Phase(step.phase)
        if kind == "reasoning":
            judged = format_penalty(step, cfg) if not step.parse_ok else per_plan * (score or 0.0)
            rewards.append(judged + length_penalty(step.response, cfg.tau_reason))
        elif kind == "input":
            rewards.append(input_reward(step, cfg))
        else:
            r = format_penalty(step, cfg) + length_penalty(step.response, cfg.tau_reflect)
            if score is not None:
                r += cfg.lambda_h * (score - s_prev)
                s_prev = score
                if step.decision is True:
                    r += cfg.lambda_h * b_term(True, score, cfg)
                r += late_stop(step.decision is True, score, cfg)
            rewards.append(r)
    if steps and steps[-1].timed_out:
        went_on = [i for i, s in enumerate(steps) if Phase(s.phase) == "reflect" and s.decision is not True]
        targets = went_on or [len(steps) - 1]
        for i in targets:
            rewards[i] += cfg.timeout_penalty / len(targets)
    return rewards
