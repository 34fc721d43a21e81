"""Held-out evaluation during training: episodes in the PAU setting (`eval.*`: window, call budget,
sampling), scored as `aac.eval` scores them (LM judge, code match), with the training rewards beside."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Optional

from aac.assembly import Run, eval_protocol
from aac.env.instance import Instance
from aac.metrics import rollout_metrics
from aac.rollout.driver import SamplingSpec
from aac.rollout.workers import RolloutBatch

if TYPE_CHECKING:
    from aac.config import TrainConfig

Play = Callable[..., RolloutBatch]  # (groups, *, sampling, protocol) -> the merged batch


class HeldOutEval:
    """`metrics(play)`: play the held-out instances through `play` (the trainer's rollout) and score them
    with the run's scorers; the instances are loaded on first use."""

    def __init__(self, cfg: TrainConfig, run: Run):
        from aac.datasets import check_split

        self.cfg, self.run = cfg, run
        self._instances: Optional[list[Instance]] = None
        if cfg.eval_every:  # a held-out file without a split fails at the start, not at the first evaluation
            check_split(cfg.eval.data, cfg.eval.split)

    @property
    def instances(self) -> list[Instance]:
        if self._instances is None:
            from aac.datasets import load_instances

            e = self.cfg.eval
            self._instances = load_instances(e.data, split=e.split, limit=self.cfg.eval_limit, on_bad_row="warn",
                                             domain=self.cfg.env.domain)
        return self._instances

    def metrics(self, play: Play) -> dict[str, float]:
        """`aac.eval`'s metrics for the same episodes (`eval/description_score`, ...), plus rewards."""
        from aac.eval.report import summarize
        from aac.eval.scoring import score_episodes

        cfg, e, held = self.cfg, self.cfg.eval, self.instances
        judge, matcher = self.run.scorers()
        sampling = SamplingSpec.from_config(e, cfg.rollout.top_p, logprobs=True)
        batch = play([[inst] for inst in held], sampling=sampling, protocol=eval_protocol(e, cfg.env))
        episodes = [ep.record for ep in batch.episodes]
        scores: dict[str, dict] = {}
        score_episodes(episodes, {i.uid: i for i in held}, judge, matcher if e.code_match else None, gold=False,
                       batch_size=e.batch_size, on_done=lambda recs: scores.update((r["uid"], r) for r in recs),
                       coverage=self.run.informative_calls(), mutants=self.run.mutant_kills())
        report = summarize({}, episodes, scores)
        m = rollout_metrics(batch, cfg.rewards.stop_threshold)
        out = {f"eval/{k}": v for k, v in m.items() if k.startswith(("reward/", "episode/"))}
        out.update({"eval/description_score": report["description_score"]["mean"],
                    "eval/code_match": report["code_match"]["mean"], "eval/queries_mean": report["queries_mean"],
                    "eval/informative_calls_mean": report["informative_calls_mean"],
                    "eval/concluded_pct": report["concluded_pct"],
                    # the share of the mutants an episode's queries killed (rows with mutants; nan: none)
                    "eval/mutants_killed_mean": (report.get("query_efficiency") or {}).get("killed_mean", float("nan")),
                    "eval/format_error_rate": report["format_error_rate"]})
        return out
