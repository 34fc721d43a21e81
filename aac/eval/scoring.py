"""Scoring finished episodes: judge rating, code match, informative calls and query efficiency over the row's
mutants, one batch of episodes at a time."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Optional

from aac.env.observation import Observation
from aac.eval.informative import count_informative
from aac.eval.query_efficiency import query_efficiency, record_queries
from aac.scorers.codematch import CodeMatcher, CoderTask
from aac.scorers.judge import Judge

if TYPE_CHECKING:
    from aac.critic.coverage import CoverageInformativeness
    from aac.data.mutants import KillRunner
    from aac.scorers.servicecall import ServiceCallMatcher


def coder_task(episode: dict, instance, description: str) -> CoderTask:
    from aac.env.domains import get_domain

    examples = [Observation(inp, out, err) for inp, out, err in episode["observations"]]
    domain = get_domain(instance.domain)
    return CoderTask(header=instance.header, description=description, examples=examples,
                     test_examples=domain.match_cases(instance), domain=domain.name, source=instance.code)


def intent_only_task(instance) -> CoderTask:
    """A coder task with no documentation, no header and no examples: the intent-only baseline."""
    return replace(coder_task({"observations": []}, instance, ""), header="")


def score_episodes(episodes: Sequence[dict], instances: Mapping[str, object], judge: Judge,
                   matcher: Optional[CodeMatcher | ServiceCallMatcher], *, gold: bool, batch_size: int,
                   on_done: Callable[[list[dict]], None], progress: Callable[..., None] = lambda n, **counts: None,
                   coverage: Optional[CoverageInformativeness] = None, mutants: Optional[KillRunner] = None) -> None:
    """Rate each episode's description against the gold one and code-match it (`matcher` None: no code
    match). With `gold`, also the reference rows: code match from the gold description on the same
    observed examples, and, where the matcher has that row (web service calls), from no documentation at
    all (`code_match_intent_only`). With `coverage` (a `CoverageInformativeness`), count each episode's
    informative calls (aac/eval/informative.py); with `mutants` (a `KillRunner`), the query efficiency of each
    interactive episode whose row has mutants (aac/eval/query_efficiency.py). `progress(episodes, **counts)` hears
    of each batch's judge and coder requests as they are done."""
    intent_only = gold and "intent_only" in matcher.reference_rows
    for start in range(0, len(episodes), batch_size):
        chunk = episodes[start: start + batch_size]
        insts = [instances[e["uid"]] for e in chunk]
        # a row without a gold description (e.g. CRUXEval in builtin:pau_like) has no judge score; its
        # code match still counts
        judged = [k for k, i in enumerate(insts) if i.description]
        rated = iter(judge.rate([(insts[k].header, insts[k].description, chunk[k]["description"]) for k in judged]))
        ratings = [next(rated) if i.description else None for i in insts]
        progress(0, **{"judge requests": len(judged)})
        matches = (matcher.score([coder_task(e, i, e["description"]) for e, i in zip(chunk, insts)])
                   if matcher is not None else [None] * len(chunk))
        golds = matcher.score([coder_task(e, i, i.description) for e, i in zip(chunk, insts)]) if gold else None
        baselines = matcher.score([intent_only_task(i) for i in insts]) if intent_only else None
        if matcher is not None:
            progress(0, **{"coder requests": len(chunk) * (1 + (golds is not None) + (baselines is not None))})
        informative = [count_informative(e, i, coverage) if coverage is not None else None
                       for e, i in zip(chunk, insts)]
        efficiency = [query_efficiency(record_queries(e), i, mutants)
                      if mutants is not None and e.get("mode") == "interactive" else None for e, i in zip(chunk, insts)]
        out = []
        for k, (e, r, m) in enumerate(zip(chunk, ratings, matches)):
            judge_rec = ({"score": None, "parsed": False, "text": "", "skipped": "no gold description"} if r is None
                         else {"score": r.score, "parsed": r.parsed, "text": r.text})
            rec = {"uid": e["uid"], "judge": judge_rec}
            if m is not None:
                rec["code_match"] = m.to_dict()
            if golds is not None:
                rec["code_match_gold"] = golds[k].to_dict()
            if baselines is not None:
                rec["code_match_intent_only"] = baselines[k].to_dict()
            if informative[k] is not None:
                rec["informative_calls"] = informative[k]
            if efficiency[k] is not None:
                rec["query_efficiency"] = efficiency[k]
            out.append(rec)
        on_done(out)
        progress(len(chunk))
