"""A scripted privileged critic (`critic.kind=scripted`): a rule with a known optimum, for controlled
experiments and tests of what the policy learns (benchmarks/bench_behaviour.py).

It holds the function's source and grades by what the calls explored, measured in the sandbox by
the same coverage machinery as `critic.informativeness=coverage` (aac/critic/coverage.py):
- a call is *informative* when its input is new in the episode and it reaches branch arcs of the
  true function that the earlier inputs (the context examples included) did not; a function
  without branch arcs has no informative call. Under `critic.scripted_rule=coverage`, a new result
  (beside the earlier calls' results) makes it informative too (the coverage score is above 0, the rule of
  aac/eval/informative.py: a call that raised or timed out never is);
- informativeness of a plan: 1.0 if the call it led to (`Judgment.query`) was informative, else 0.0;
- hypothesis quality after n informative calls (`Judgment.observations`, past the context examples):
  `stop_threshold * n / K` while n < K, 1.0 from n = K on (K = `critic.scripted_k`). So the stop
  threshold (`rewards.stop_threshold`) is passed exactly at the K-th informative call: stopping then
  is right, before it premature, and going on after it earns nothing more.
The hypothesis text and the plan's words play no part. Scores come back through the same interface
as `PrivilegedCritic.score` (a float in [0, 1], None when the function could not be measured), with
the same counters, so the reward schedules run unchanged.

`critic.mode=symmetric` (the SYM-INFO ablation) is the same rule without the privileged side: it reads
neither the source nor the gold description, runs nothing, and knows only what the actor saw. A call is
informative when its input is new in the episode and its result, as the actor saw it (the call's
`Judgment.answer`, or its observation), is new beside the earlier observations' (the normalised output,
or the exception's type: `coverage.result_key`) and is no error: the `coverage` rule without its branch
arcs (`critic.scripted_rule` picks the privileged rule only). Hypothesis quality after n such calls as
above, so `critic.scripted_k` and the stop threshold keep their meaning.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Optional

from aac.critic.coverage import CoverageInformativeness, result_key
from aac.critic.critic import Counted, _Counters
from aac.critic.judgment import Judgment
from aac.env.domains import get_domain

if TYPE_CHECKING:
    from aac.config import CriticConfig
    from aac.env.domains import Caller


class ScriptedCritic(Counted):
    def __init__(self, cfg: CriticConfig, *, stop_threshold: float, caller: Optional[Caller] = None,
                 coverage: Optional[CoverageInformativeness] = None) -> None:
        self.k = cfg.scripted_k
        self.rule = cfg.scripted_rule
        self.symmetric = cfg.mode == "symmetric"
        self.stop_threshold = stop_threshold
        # symmetric: no coverage helper, nothing run (the source is never read)
        self.coverage = None if self.symmetric else coverage or CoverageInformativeness(
            caller, output_weight=cfg.coverage_output_weight, call_timeout_s=cfg.coverage_call_timeout_s)
        self._counters = _Counters()
        self._lock = threading.Lock()

    def quality(self, informative_calls: int) -> float:
        """s_hyp after `informative_calls` informative calls."""
        return 1.0 if informative_calls >= self.k else self.stop_threshold * informative_calls / self.k

    def score(self, judgments: list[Judgment]) -> list[Optional[float]]:
        """One score per judgment, in order; None where the function could not be measured."""
        per_call = [self._calls(j) for j in judgments]
        if self.coverage is not None:
            self.coverage.measure([c for calls in per_call for c in calls])
        out: list[Optional[float]] = []
        for j, calls in zip(judgments, per_call):
            verdicts = [self._informative(c) for c in calls]
            if any(v is None for v in verdicts):
                out.append(None)
            elif j.kind == "informativeness":
                out.append(float(bool(verdicts and verdicts[0])))
            else:
                out.append(self.quality(sum(verdicts)))
        with self._lock:
            c = self._counters
            c.judgments += len(judgments)
            c.coverage_judgments += len(judgments)
            c.coverage_failures += sum(s is None for s in out)
        return out

    @staticmethod
    def _calls(j: Judgment) -> list[Judgment]:
        """The calls whose informativeness `j` reads, each as a query after the observations before it."""
        if j.kind == "informativeness":
            return [] if j.query is None else [j]
        first = len(get_domain(j.instance.domain).context(j.instance))  # the context comes first, and is no call
        return [Judgment(kind="informativeness", instance=j.instance, hypothesis="", observations=j.observations[:i],
                         text="", query=j.observations[i].input, answer=j.observations[i])
                for i in range(first, len(j.observations))]

    def _informative(self, call: Judgment) -> Optional[bool]:
        if self.coverage is None:
            return self._new_result(call)
        if self.rule == "coverage":
            score = self.coverage.score([call])[0]  # 0 for a call that raised or timed out
            reached = None if score is None else score > 0
        else:
            arcs = self.coverage.new_branch_arcs(call)
            reached = None if arcs is None else bool(arcs[1])
        if reached is None:
            return None
        earlier = {o.input.strip() for o in call.observations}
        return call.query.strip() not in earlier and reached

    @staticmethod
    def _new_result(call: Judgment) -> Optional[bool]:
        """The symmetric rule: a new input whose result (no error) the earlier observations did not show;
        None when the call's result is not in the judgment."""
        if call.answer is None:
            return None
        if call.answer.error is not None:
            return False
        earlier = {o.input.strip() for o in call.observations}
        seen = {result_key(o.output_repr, o.error) for o in call.observations}
        return call.query.strip() not in earlier and result_key(call.answer.output_repr, None) not in seen

    def close(self) -> None:
        if self.coverage is not None:
            self.coverage.close()
