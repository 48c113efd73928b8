"""Proportions with 95% intervals, and the fixed row pairings that the trust checks use."""

from __future__ import annotations

import math
import random
from typing import Callable, Optional, Sequence

import numpy as np

from llm_engineering.evaluation.stored.figures import Rate

Z_95 = 1.959964
BOOTSTRAP_SAMPLES = 2000


_FEW_VALUES = 64  # scores on a small scale: resample the counts of each value, not every row
_DRAWS_PER_CHUNK = 4_000_000  # rows drawn at once when resampling row by row: bounds memory at ~32 MB


def mean(values: Sequence[float]) -> Optional[float]:
    """The mean to 4 decimals (None for no values)."""
    return round(sum(values) / len(values), 4) if values else None


def _bootstrap_means(values: Sequence[float], samples: int, seed: int) -> np.ndarray:
    """`samples` means of rows drawn with replacement. Time and memory grow linearly with the rows: data with few
    distinct values (integer scores) is resampled as multinomial counts of each value (the same distribution of
    resampled means as drawing rows, at a cost independent of the rows); other data row by row, in chunks."""
    rng = np.random.default_rng(seed)
    data = np.asarray(values, dtype=float)
    distinct, counts = np.unique(data, return_counts=True)
    if len(distinct) <= _FEW_VALUES:
        return rng.multinomial(len(data), counts / len(data), size=samples) @ distinct / len(data)
    chunk = max(1, _DRAWS_PER_CHUNK // len(data))
    return np.concatenate([
        data[rng.integers(0, len(data), size=(min(chunk, samples - start), len(data)))].mean(axis=1)
        for start in range(0, samples, chunk)
    ])


def bootstrap_ci(values: Sequence[float], samples: int = BOOTSTRAP_SAMPLES, seed: int = 0) -> Optional[list[float]]:
    """95% percentile-bootstrap interval of the mean (None for fewer than two values)."""
    if len(values) < 2:
        return None
    low, high = np.percentile(_bootstrap_means(values, samples, seed), [2.5, 97.5])
    return [round(float(low), 4), round(float(high), 4)]


def bootstrap_rows_ci(rows: int, statistic: Callable[[np.ndarray], Optional[float]], samples: int = BOOTSTRAP_SAMPLES,
                      seed: int = 0) -> Optional[list[float]]:
    """95% percentile-bootstrap interval of a statistic over `rows` rows: `statistic(indices)` of rows drawn with
    replacement; draws where it is undefined (None) are skipped, and with fewer than two left there is no interval."""
    rng = np.random.default_rng(seed)
    values = [value for value in (statistic(rng.integers(0, rows, size=rows)) for _ in range(samples)) if value is not None]
    if len(values) < 2:
        return None
    low, high = np.percentile(values, [2.5, 97.5])
    return [round(float(low), 4), round(float(high), 4)]


def bootstrap_p(values: Sequence[float], samples: int = BOOTSTRAP_SAMPLES, seed: int = 0) -> Optional[float]:
    """Two-sided bootstrap p-value of "the mean is zero": twice the smaller share of resampled means on either side
    of zero, counted as (k + 1) / (samples + 1) so that it is never 0 (None for fewer than two values). It is below
    0.05 where the 95% interval of `bootstrap_ci` (same seed) excludes zero."""
    if len(values) < 2:
        return None
    means = _bootstrap_means(values, samples, seed)
    side = min(int((means >= 0).sum()), int((means <= 0).sum()))
    return round(min(1.0, 2 * (side + 1) / (samples + 1)), 4)


def holm(p_values: Sequence[Optional[float]], alpha: float = 0.05) -> list[bool]:
    """Which hypotheses Holm's step-down procedure rejects at family-wise error `alpha` (None: not tested).

    Sorted ascending, the k-th smallest of m p-values is rejected while p <= alpha / (m - k); the first that is
    not stops the procedure."""
    tested = sorted((p, i) for i, p in enumerate(p_values) if p is not None)
    rejected = [False] * len(p_values)
    for k, (p, i) in enumerate(tested):
        if p > alpha / (len(tested) - k):
            break
        rejected[i] = True
    return rejected


def _paired_test_size(differences: Sequence[float], power: float, alpha: float) -> Optional[tuple[float, float]]:
    """(the spread of the differences, z(1 - alpha/2) + z(power)) that size a two-sided paired test; None for fewer
    than two differences, or differences that do not vary (nothing to size a test by)."""
    if len(differences) < 2 or len(set(differences)) < 2:
        return None
    from scipy.stats import norm

    return float(np.std(np.asarray(differences, dtype=float), ddof=1)), norm.ppf(1 - alpha / 2) + norm.ppf(power)


def detectable_difference(differences: Sequence[float], power: float = 0.8, alpha: float = 0.05) -> Optional[float]:
    """The smallest mean paired difference a two-sided test at `alpha` detects with `power`, given the spread of
    these differences and their count: (z(1 - alpha/2) + z(power)) * sd / sqrt(n). None for fewer than two, or
    when they do not vary."""
    size = _paired_test_size(differences, power, alpha)
    if size is None:
        return None
    sd, z = size
    return round(z * sd / math.sqrt(len(differences)), 4)


def detectable_change(scores: Sequence[float], power: float = 0.8, alpha: float = 0.05) -> Optional[float]:
    """The smallest change of these rows' mean that a paired comparison with another run of the same rows detects
    with `power`, when the two runs' scores on a row are uncorrelated: the paired differences then spread sqrt(2)
    times as far as the scores. Runs whose scores correlate (the same answers, a similar model) detect smaller
    changes, so this is an upper bound. None for fewer than two scores."""
    spread = detectable_difference(scores, power, alpha)
    return None if spread is None else round(spread * math.sqrt(2), 4)


def rows_needed(differences: Sequence[float], difference: float, power: float = 0.8, alpha: float = 0.05) -> Optional[int]:
    """Paired rows a mean difference of `difference` needs to be detected with `power`, at the spread of these
    differences. None for fewer than two, or differences that do not vary."""
    size = _paired_test_size(differences, power, alpha)
    if size is None or difference == 0:
        return None
    sd, z = size
    return max(2, math.ceil((z * sd / abs(difference)) ** 2))


def rows_for_change(scores: Sequence[float], change: float, power: float = 0.8, alpha: float = 0.05) -> Optional[int]:
    """Paired rows a change of `change` in the mean needs to be detected with `power`, runs uncorrelated per row
    (as `detectable_change`)."""
    return rows_needed([value * math.sqrt(2) for value in scores], change, power, alpha)


def wilson_interval(count: int, total: int, z: float = Z_95) -> Optional[list[float]]:
    """Wilson score interval of a proportion: sound at 0%, 100% and small `total`, unlike the normal one."""
    if total <= 0:
        return None
    p = count / total
    denominator = 1 + z * z / total
    centre = (p + z * z / (2 * total)) / denominator
    half = z * math.sqrt(p * (1 - p) / total + z * z / (4 * total * total)) / denominator
    return [round(max(0.0, centre - half), 4), round(min(1.0, centre + half), 4)]


def rate(count: int, total: int) -> Rate:
    if not 0 <= count <= total:
        raise ValueError(f"count {count} must lie between 0 and total {total}")
    return Rate(count=count, total=total, rate=round(count / total, 4) if total else None,
                ci=wilson_interval(count, total))


def derangement(n: int, seed: int = 0) -> list[int]:
    """A fixed permutation with no fixed point: row i is paired with row `result[i]`, never itself.

    Sattolo's algorithm (a random single cycle), seeded: the same `n` and `seed` give the same
    pairing on every machine, so a check is reproducible and its judge calls are cached.
    """
    if n < 2:
        raise ValueError(f"a derangement needs at least 2 rows, got {n}")
    order = list(range(n))
    rng = random.Random(seed)
    for i in range(n - 1, 0, -1):
        j = rng.randrange(i)  # j < i: what makes it a single cycle
        order[i], order[j] = order[j], order[i]
    return order


def sample_rows(n: int, k: int, seed: int = 0) -> list[int]:
    """`min(k, n)` row indices, a fixed random sample in ascending order."""
    if k >= n:
        return list(range(n))
    return sorted(random.Random(seed).sample(range(n), k))


def fmt(value: Optional[float], digits: int = 2) -> str:
    """A number with fixed decimals, `n/a` when missing."""
    return "n/a" if value is None else f"{value:.{digits}f}"


def with_ci(mean: Optional[float], ci: Optional[list[float]]) -> str:
    """`2.50 [2.00, 3.00]`: a mean and its 95% interval."""
    return fmt(mean) + (f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "")


def rate_with_ci(value: Optional[float], ci: Optional[list[float]]) -> str:
    """`75% [56%, 100%]`: a rate and its 95% interval, `n/a` when missing."""
    return "n/a" if value is None else f"{value:.0%}" + (f" [{ci[0]:.0%}, {ci[1]:.0%}]" if ci else "")
