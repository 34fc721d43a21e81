"""Scoring finished episodes: judge rating and code match, one batch of episodes at a time."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from aac.env.observation import Observation
from aac.scorers.codematch import CodeMatcher, CoderTask
from aac.scorers.judge import Judge


def coder_task(episode: dict, instance, description: str) -> CoderTask:
    from aac.env.domains import get_domain

    examples = [Observation(inp, out, err) for inp, out, err in episode["observations"]]
    domain = get_domain(instance.domain)
    return CoderTask(header=instance.header, description=description, examples=examples,
                     test_examples=domain.match_cases(instance), domain=domain.name)


def score_episodes(episodes: Sequence[dict], instances: Mapping[str, object], judge: Judge, matcher: CodeMatcher,
                   *, gold: bool, batch_size: int, on_done: Callable[[list[dict]], None],
                   progress: Callable[[int], None] = lambda n: None) -> None:
    """Rate each episode's description against the gold one and code-match it (and, with `gold`,
    code-match the gold description on the same observed examples)."""
    for start in range(0, len(episodes), batch_size):
        chunk = episodes[start: start + batch_size]
        insts = [instances[e["uid"]] for e in chunk]
        # a row without a gold description (e.g. CRUXEval in builtin:pau_like) has no judge score; its
        # code match still counts
        judged = [k for k, i in enumerate(insts) if i.description]
        rated = iter(judge.rate([(insts[k].header, insts[k].description, chunk[k]["description"]) for k in judged]))
        ratings = [next(rated) if i.description else None for i in insts]
        matches = matcher.score([coder_task(e, i, e["description"]) for e, i in zip(chunk, insts)])
        golds = matcher.score([coder_task(e, i, i.description) for e, i in zip(chunk, insts)]) if gold else None
        out = []
        for k, (e, r, m) in enumerate(zip(chunk, ratings, matches)):
            judge_rec = ({"score": None, "parsed": False, "text": "", "skipped": "no gold description"} if r is None
                         else {"score": r.score, "parsed": r.parsed, "text": r.text})
            rec = {"uid": e["uid"], "judge": judge_rec, "code_match": m.to_dict()}
            if golds is not None:
                rec["code_match_gold"] = golds[k].to_dict()
            out.append(rec)
        on_done(out)
        progress(len(chunk))
