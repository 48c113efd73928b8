"""Several answers per prompt (`sampling.n`): a row's samples grouped, intervals that take in the spread between
them, and the reducers that turn a row's K scores into one (mean, max, majority, pass@k).

A model's answers to one prompt differ (temperature 0.8): a mean over rows of one answer each moves from seed to
seed by more than an interval over rows admits. With K answers per row, the interval comes from a two-level
bootstrap: rows drawn with replacement, then within each drawn row its samples drawn with replacement, so the
randomness of generation is inside it (Davison & Hinkley 1997, sec. 3.8: drawing at both levels errs on the wide
side, never the narrow one).
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any, Callable, Optional, Sequence, TypeVar

import numpy as np
from datasets import Dataset

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.rates import BOOTSTRAP_SAMPLES, bootstrap_ci, mean

Number = TypeVar("Number", int, float)

_CELLS_PER_CHUNK = 4_000_000  # drawn values at once in the two-level bootstrap: bounds memory at ~64 MB


def sample_of(row: dict[str, Any]) -> int:
    """Which of its prompt's answers a row is (0 for rows stored before samples existed)."""
    return row.get(col.SAMPLE) or 0


def answer_key(row: dict[str, Any]) -> tuple[str, int]:
    """(id, sample): which answer of which prompt a row is; one model's s-th answer to a prompt meets another's s-th."""
    return str(row[col.ID]), sample_of(row)


def first_samples(rows: Dataset) -> Dataset:
    """Each prompt's first answer only: what the checks that pair rows with other rows (the judge check, the
    similarity check) read, since a prompt's other answers are no other prompt's."""
    if col.SAMPLE not in rows.column_names or not any(rows[col.SAMPLE]):
        return rows
    return rows.filter(lambda sample: not sample, input_columns=col.SAMPLE)


def grouped(rows: list[dict[str, Any]], value: Callable[[dict[str, Any]], Optional[float]]) -> dict[str, list[float]]:
    """Row id -> the values of its samples (in sample order) where `value` is not None; ids in first-seen order."""
    groups: dict[str, list[tuple[int, float]]] = {}
    for row in rows:
        found = value(row)
        if found is not None:
            groups.setdefault(str(row[col.ID]), []).append((sample_of(row), found))
    return {row_id: [v for _, v in sorted(values)] for row_id, values in groups.items()}


def row_means(groups: dict[str, list[float]]) -> dict[str, float]:
    return {row_id: sum(values) / len(values) for row_id, values in groups.items()}


def verdict_means(rows: list[dict[str, Any]], column: str) -> dict[str, float]:
    """Row id -> `column`'s value over the row's answers with a valid verdict (their mean, with samples): what a
    paired comparison pairs."""
    return row_means(grouped(rows, lambda r: r.get(column) if r.get(col.JUDGE_ERROR) is None else None))


def two_level_ci(groups: Sequence[Sequence[float]], samples: int = BOOTSTRAP_SAMPLES,
                 seed: int = 0) -> Optional[list[float]]:
    """95% percentile interval of the mean of row means: rows drawn with replacement, then each drawn row's own
    values drawn with replacement (as many as it has). With one value per row it is the interval over rows
    (`bootstrap_ci`). None for fewer than two rows."""
    nonempty = [list(g) for g in groups if len(g)]
    if len(nonempty) < 2:
        return None
    if all(len(g) == 1 for g in nonempty):
        return bootstrap_ci([g[0] for g in nonempty], samples, seed)
    rng = np.random.default_rng(seed)
    widest = max(map(len, nonempty))
    values = np.array([g + [0.0] * (widest - len(g)) for g in nonempty])
    counts = np.array([len(g) for g in nonempty])
    chunk = max(1, _CELLS_PER_CHUNK // (len(nonempty) * widest))
    means = []
    for start in range(0, samples, chunk):
        size = min(chunk, samples - start)
        rows = rng.integers(0, len(nonempty), size=(size, len(nonempty)))
        # a uniform draw scaled by each drawn row's count: a position among that row's own values
        within = (rng.random((size, len(nonempty), widest)) * counts[rows][..., None]).astype(int)
        drawn = values[rows[..., None], within]
        used = np.arange(widest) < counts[rows][..., None]
        means.append(((drawn * used).sum(axis=2) / counts[rows]).mean(axis=1))
    low, high = np.percentile(np.concatenate(means), [2.5, 97.5])
    return [round(float(low), 4), round(float(high), 4)]


def between_sample_share(groups: dict[str, list[float]]) -> Optional[float]:
    """The share of the scores' variance that lies between a row's samples rather than between rows (one minus the
    intraclass correlation, from a one-way analysis of variance): near 1, the answers to one prompt differ as much
    as answers to different prompts; near 0, a row's samples agree. None without a row of two samples, or when no
    score varies."""
    many = [v for v in groups.values() if len(v) > 1]
    if not many or len(groups) < 2:
        return None
    within = float(np.mean([np.var(v, ddof=1) for v in many]))
    typical = len(many) / sum(1 / len(v) for v in many)  # the harmonic mean of the samples per row
    between = max(0.0, float(np.var(list(row_means(groups).values()), ddof=1)) - within / typical)
    return None if within + between == 0 else round(within / (within + between), 4)


def row_spread(groups: dict[str, list[float]]) -> Optional[float]:
    """The mean, over rows with two or more samples, of the standard deviation of a row's samples."""
    many = [v for v in groups.values() if len(v) > 1]
    return mean([float(np.std(v, ddof=1)) for v in many]) if many else None


def majority(values: Sequence[Number]) -> Number:
    """The most frequent score; a tie goes to the lowest of the tied (a verdict never rounds up). The one home of
    this rule: a row's samples, a jury's verdicts, the labels' majority baseline."""
    counts = Counter(values)
    top = max(counts.values())
    return min(v for v, c in counts.items() if c == top)


def pass_at_k(n: int, passed: int, k: int) -> float:
    """The chance that at least one of k answers drawn without replacement from n, `passed` of which pass, passes:
    1 - C(n - passed, k) / C(n, k), the unbiased estimator of Chen et al. (2021)."""
    if not 0 < k <= n:
        raise ValueError(f"pass@k needs 0 < k <= n, got k={k}, n={n}")
    return 1.0 - math.comb(n - passed, k) / math.comb(n, k)


Figure = tuple[Optional[float], Optional[list[float]]]  # a mean and its 95% interval


def reducers(groups: dict[str, list[float]], threshold: float, k: int) -> dict[str, Figure]:
    """Each reducer's mean over rows with its 95% interval over rows: `mean`, `max` and `majority` of a row's
    scores, `pass@1` and `pass@k` (a score at or above `threshold` passes; pass@k over rows with k scored samples)."""
    per_row: dict[str, list[float]] = {
        "mean": list(row_means(groups).values()),
        "max": [max(v) for v in groups.values()],
        "majority": [majority(v) for v in groups.values()],
        "pass@1": [pass_at_k(len(v), sum(s >= threshold for s in v), 1) for v in groups.values()],
        f"pass@{k}": [pass_at_k(len(v), sum(s >= threshold for s in v), k) for v in groups.values() if len(v) >= k],
    }
    return {name: (mean(values), bootstrap_ci(values)) for name, values in per_row.items()}
