"""Statistics of the PAU metrics: summaries, the paired bootstrap (p-value and interval) and the per-instance MAX."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

import numpy as np

SCORES = (1, 2, 3, 4, 5)  # the judge's scale


def mean_std(values: Sequence[float]) -> tuple[float, float]:
    """Mean and population std; (nan, nan) for no values."""
    if not len(values):
        return float("nan"), float("nan")
    arr = np.asarray(values, dtype=float)
    return float(arr.mean()), float(arr.std())


def score_histogram(scores: Sequence[float]) -> dict[str, float]:
    """% of instances in each score range [k, k+1) (k = 5 is the single value 5)."""
    if not len(scores):
        return {str(k): 0.0 for k in SCORES}
    arr = np.clip(np.floor(np.asarray(scores, dtype=float)), 1, 5)
    return {str(k): float(100.0 * np.mean(arr == k)) for k in SCORES}


def pct(flags: Sequence[bool]) -> float:
    return float(100.0 * np.mean(np.asarray(flags, dtype=float))) if len(flags) else float("nan")


def _paired_diff(a: Sequence[float], b: Sequence[float]) -> np.ndarray:
    diff = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    if diff.ndim != 1 or len(a) != len(b):
        raise ValueError(f"paired bootstrap needs two runs over the same instances (got {len(a)} and {len(b)})")
    if not len(diff):
        raise ValueError("paired bootstrap needs at least one instance")
    return diff


def _resampled_means(diff: np.ndarray, resamples: int, seed: int, chunk: int) -> Iterator[np.ndarray]:
    """Means of `diff` over instances resampled with replacement, `chunk` resamples at a time (bounded memory)."""
    rng = np.random.default_rng(seed)
    n = len(diff)
    done = 0
    while done < resamples:
        size = min(chunk, resamples - done)
        yield diff[rng.integers(0, n, size=(size, n))].mean(axis=1)
        done += size


def paired_bootstrap(a: Sequence[float], b: Sequence[float], *, resamples: int = 10_000,
                     seed: int = 0, chunk: int = 1000) -> float:
    """One-sided p-value that run A is not better than run B on paired per-instance scores.

    Resample instances with replacement; p = P(mean(A - B) < 0) + P(mean(A - B) = 0) / 2 over
    the resamples. Ties count half, so identical runs give exactly 0.5 and a run that wins
    on almost every resample gives p near 0.
    """
    below = ties = 0.0
    for means in _resampled_means(_paired_diff(a, b), resamples, seed, chunk):
        # sums of the same tie values can differ in the last bits: compare with a tolerance
        zero = np.isclose(means, 0.0, atol=1e-12)
        below += np.sum((means < 0) & ~zero)
        ties += np.sum(zero)
    return float((below + 0.5 * ties) / resamples)


def paired_interval(a: Sequence[float], b: Sequence[float], *, level: float = 0.95, resamples: int = 10_000,
                    seed: int = 0, chunk: int = 1000) -> tuple[float, float, float]:
    """mean(A - B) over paired instances and its percentile bootstrap interval at `level`."""
    diff = _paired_diff(a, b)
    means = np.concatenate(list(_resampled_means(diff, resamples, seed, chunk)))
    tail = 100 * (1 - level) / 2
    return float(diff.mean()), float(np.percentile(means, tail)), float(np.percentile(means, 100 - tail))


def per_instance_max(runs: Sequence[Mapping[str, float]]) -> dict[str, float]:
    """Best value per instance uid over runs, over the uids every run has."""
    if not runs:
        return {}
    common = set(runs[0]).intersection(*runs[1:])
    return {uid: max(run[uid] for run in runs) for uid in sorted(common)}
