"""What one build kept and dropped: the summary every builder (PAU sources, stateful classes, library
functions) reports, as text for the log and as a dict for `meta.json` and `--summary-json`."""

from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

from aac.env.rows import write_instances

if TYPE_CHECKING:
    from aac.env.instance import Instance


def write_built(out: str, instances: list[Instance], summary_text: str) -> None:
    """A builder CLI's last act: write the rows, then print the build's summary and where the rows went."""
    write_instances(out, instances)
    print(summary_text)
    print(f"wrote {len(instances)} rows to {out}")


def mean(xs: list[float]) -> float | None:
    return statistics.fmean(xs) if xs else None


@dataclass
class BuildSummary:
    """`rows_in` candidates read (functions, classes), `rows_kept`, `dropped` candidates by reason,
    per kept row its test examples and, where the builder measures it, the branch coverage of
    them, and the run's seconds. A builder's own counts come from `details` and `detail_lines`."""

    source: str
    rows_in: int = 0
    rows_kept: int = 0
    dropped: Counter = field(default_factory=Counter)
    coverages: list[float] = field(default_factory=list)  # per kept row; empty where not measured
    test_examples: list[int] = field(default_factory=list)  # per kept row
    seconds: float = 0.0

    unit: ClassVar[str] = "rows"  # what `rows_in` counts, in the text
    measures_coverage: ClassVar[bool] = True

    def keep(self, instance: Instance, coverage: float | None = None) -> None:
        self.rows_kept += 1
        self.test_examples.append(len(instance.test_examples))
        if coverage is not None:
            self.coverages.append(coverage)

    @property
    def mean_coverage(self) -> float | None:
        return mean(self.coverages)

    def details(self) -> dict:
        return {}

    def detail_lines(self) -> list[str]:
        return []

    def as_dict(self) -> dict:
        cov = self.coverages
        out = {"source": self.source, "rows_in": self.rows_in, "rows_kept": self.rows_kept,
               "dropped": dict(self.dropped.most_common())}
        if self.measures_coverage:
            out |= {"mean_branch_coverage": self.mean_coverage, "rows_at_full_coverage": sum(c >= 1.0 for c in cov),
                    "rows_at_90pct_coverage": sum(c >= 0.9 for c in cov)}
        return out | {"mean_test_examples": mean(self.test_examples), **self.details(),
                      "seconds": round(self.seconds, 1)}

    def text(self) -> str:
        d = self.as_dict()
        lines = [f"source {self.source}: {self.rows_in} {self.unit} in, {self.rows_kept} kept ({self.seconds:.1f} s)"]
        if self.measures_coverage:
            cov = "n/a" if d["mean_branch_coverage"] is None else f"{100 * d['mean_branch_coverage']:.1f}%"
            lines.append(f"  mean branch coverage of test examples: {cov}; rows at 100%: "
                         f"{d['rows_at_full_coverage']}, at >= 90%: {d['rows_at_90pct_coverage']}")
        lines.append(f"  mean test examples per row: {d['mean_test_examples'] or 0:.1f}")
        lines += self.detail_lines()
        lines += [f"  dropped {n:4d}: {reason}" for reason, n in self.dropped.most_common()]
        return "\n".join(lines)
