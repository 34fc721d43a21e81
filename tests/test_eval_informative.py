"""Informative calls of an eval record (aac/eval/informative.py): the coverage critic's rule on the
record's queries, each after the calls before it (real coverage runner, real sandbox)."""

from __future__ import annotations

from aac.critic.coverage import CoverageInformativeness
from aac.datasets import load_instances
from aac.env.prompts import example_repr
from aac.env.protocol import sandbox_caller
from aac.eval.informative import count_informative


def test_counts_queries_reaching_new_branches_or_results():
    """HumanEval/125 splits on spaces, else on commas, else counts letters; both context examples
    hold a space. A comma input (new branch), the same again (nothing new), a new letters-only input
    (the last branch), a context example again (nothing new), a call that raised (wrong arity): 2 of 5."""
    inst = next(i for i in load_instances("builtin:humaneval", split="test") if i.uid == "HumanEval/125")
    caller = sandbox_caller(None)
    queries = ["('ab,cd',)", "('ab,cd',)", "('abcdef',)", inst.train_examples[0][0], "('ab', 'cd')"]
    results = [caller(inst.code, q, 5.0) for q in queries]
    record = {"mode": "interactive", "num_queries": len(queries),
              "observations": [[inp, example_repr(out, 300), None] for inp, out in inst.train_examples]
              + [[q, r.output_repr, r.error] for q, r in zip(queries, results)]}
    coverage = CoverageInformativeness(caller)
    try:
        assert count_informative(record, inst, coverage) == 2
        assert count_informative({**record, "num_queries": 1, "observations": record["observations"][:3]},
                                 inst, coverage) == 1
        assert count_informative({**record, "num_queries": 0, "observations": record["observations"][:2]},
                                 inst, coverage) == 0
        assert count_informative({**record, "mode": "in_context"}, inst, coverage) is None
    finally:
        coverage.close()
