"""Human labels read from a file; the agreement of a judge's scores with pointwise labels, and the baselines that need
no judge (pairwise labels' are `preference_agreement`'s)."""

from __future__ import annotations

import re
import warnings
from pathlib import Path
from typing import Any, Literal, Optional, Sequence, TypeVar, Union

import numpy as np
from pydantic import BaseModel, Field, ValidationError, field_validator
from scipy.stats import spearmanr
from sklearn.exceptions import UndefinedMetricWarning
from sklearn.metrics import cohen_kappa_score

from llm_engineering.evaluation.config_base import validation_problems
from llm_engineering.evaluation.rates import BOOTSTRAP_SAMPLES, bootstrap_ci, bootstrap_rows_ci
from llm_engineering.evaluation.records import read_records
from llm_engineering.evaluation.samples import majority
from llm_engineering.evaluation.stored.labels import Kind, PointwiseAgreement
from llm_engineering.evaluation.stored.pairwise import Preference

COLUMNS: dict[str, tuple[str, ...]] = {
    "pointwise": ("id", "answer", "criterion", "score"),
    "pairwise": ("id", "answer_a", "answer_b", "preferred"),
}
# Optional in both kinds: where the labels were written (the report's "Download labels" fills them); `rubric` is
# checked against the judge's rubric.
PROVENANCE = ("run", "rubric")
# Optional per label: how the row was chosen (the corrected means' intervals hold for rows chosen at random).
Chosen = Literal["random", "label-next", "least-sure", "by-hand"]
CHOSEN = "chosen"


class LabelsError(ValueError):
    """A labels file that cannot be used; the message names the file, the line and the fix."""


class _Label(BaseModel):
    id: str
    run: Optional[str] = Field(None, description="the run whose report the label was written in")
    rubric: Optional[str] = Field(None, description="the rubric whose scale the label uses")
    chosen: Optional[Chosen] = Field(
        None, description="how the report's labelling view chose the row: in its random order, in its 'Label next' "
        "order (the judge's worst scores first), its 'Least sure first' order (the judge's confidence) or by hand; None: "
        "not said")

    @field_validator("id", mode="before")
    @classmethod
    def _text(cls, value: Any) -> Any:
        # A jsonl id may be a number and a csv id is always text: the same ids should match either way.
        return str(value) if isinstance(value, int) and not isinstance(value, bool) else value

    @field_validator("run", "rubric", "chosen", mode="before")
    @classmethod
    def _blank_is_none(cls, value: Any) -> Any:
        return None if value == "" else value  # a csv's empty cell


class PointwiseLabel(_Label):
    """A human's score for one answer on one criterion."""

    answer: str = Field(description="the exact answer text that was labelled")
    criterion: str
    score: int

    @field_validator("score", mode="before")
    @classmethod
    def _integer(cls, value: Any) -> int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, str) and re.fullmatch(r"[+-]?[0-9]+", value.strip()):
            return int(value)
        raise ValueError(f"must be a whole number on the rubric's scale, got {value!r}")


class PairwiseLabel(_Label):
    """A human's preference between two answers to one row."""

    answer_a: str
    answer_b: str
    preferred: Preference


_L = TypeVar("_L", PointwiseLabel, PairwiseLabel)


class Labels(BaseModel):
    """The rows of one labels file, all of one kind."""

    kind: Kind
    rows: Union[list[PointwiseLabel], list[PairwiseLabel]]
    source: Optional[str] = Field(None, description="the file the labels were read from, as it was given")
    lines: list[int] = Field(default_factory=list, description="each row's line in that file")
    run: Optional[str] = Field(None, description="the run the labels name (the report they were written in)")
    rubric: Optional[str] = Field(None, description="the rubric the labels name")

    @property
    def pointwise_rows(self) -> list[PointwiseLabel]:
        """The rows, for pointwise labels; a LabelsError for pairwise ones."""
        return self._rows_of("pointwise", PointwiseLabel)

    @property
    def pairwise_rows(self) -> list[PairwiseLabel]:
        """The rows, for pairwise labels; a LabelsError for pointwise ones."""
        return self._rows_of("pairwise", PairwiseLabel)

    def _rows_of(self, kind: Kind, model: type[_L]) -> list[_L]:
        where = self.source or "the labels"
        if self.kind != kind:
            raise LabelsError(f"{where}: {kind} labels are needed here, but these are {self.kind} labels")
        rows = [r for r in self.rows if isinstance(r, model)]
        if len(rows) != len(self.rows):
            raise LabelsError(f"{where}: the labels say {kind}, but not every row is a {kind} label")
        return rows


def _needs() -> str:
    return ("; ".join(f"{kind} labels need the columns {', '.join(names)}" for kind, names in COLUMNS.items())
            + f" (either may add {', '.join(PROVENANCE)} and {CHOSEN})")


def _kind(columns: Sequence[str], where: str) -> Kind:
    """The kind whose columns these are exactly, or an error naming what is missing and extra."""
    given = set(columns) - {*PROVENANCE, CHOSEN}
    for kind, names in COLUMNS.items():
        if given == set(names):
            return kind  # type: ignore[return-value]
    closest = min(COLUMNS, key=lambda kind: len(given ^ set(COLUMNS[kind])))
    missing = [c for c in COLUMNS[closest] if c not in given]
    extra = sorted(given - set(COLUMNS[closest]))
    raise LabelsError(f"{where}: the columns are neither kind (as {closest} labels, missing {missing}, extra {extra}); "
                      f"{_needs()}")


def load_labels(path: Path) -> Labels:
    """Human labels from a jsonl or csv file; the columns tell pointwise from pairwise (see `COLUMNS`)."""
    path = Path(path)
    if not path.is_file():
        raise LabelsError(f"{path}: no such labels file; give the path of a .jsonl or .csv file ({_needs()})")
    header, records = read_records(path, error=LabelsError, what="a label", fix="write one JSON object a line")
    header_kind = _kind(header, f"{path}, line 1 (the header)") if header is not None else None
    if not records:
        raise LabelsError(f"{path}: the file has no labels; {_needs()}")
    kind, first = header_kind, records[0][0]
    rows: list[Any] = []
    seen: dict[tuple[str, ...], int] = {}
    for number, record in records:
        where = f"{path}, line {number}"
        row_kind = _kind(list(record), where)
        kind = kind or row_kind
        if row_kind != kind:
            raise LabelsError(f"{where}: a {row_kind} label, but line {first} is {kind}; put each kind in its own file")
        model = PointwiseLabel if kind == "pointwise" else PairwiseLabel
        try:
            row = model.model_validate(record)
        except ValidationError as error:
            raise LabelsError(f"{where}: {validation_problems(error)}") from None
        key_names = COLUMNS[kind][:3]  # (id, answer, criterion) or (id, answer_a, answer_b)
        key = tuple(getattr(row, name) for name in key_names)
        if key in seen:
            raise LabelsError(f"{where}: the same {', '.join(key_names)} as line {seen[key]}; keep one of the two labels")
        seen[key] = number
        rows.append(row)
    provenance = {name: _one_value(path, records, rows, name) for name in PROVENANCE}
    return Labels(kind=kind, rows=rows, source=str(path), lines=list(seen.values()),  # seen: each row's line, in order
                  **provenance)


def _one_value(path: Path, records: list[tuple[int, dict[str, Any]]], rows: list[Any], name: str) -> Optional[str]:
    """The one run (or rubric) the labels name, None where none does; labels naming two are an error."""
    values = {getattr(row, name): number for (number, _), row in zip(records, rows) if getattr(row, name) is not None}
    if len(values) > 1:
        (first, line), (second, other) = sorted(values.items(), key=lambda item: item[1])[:2]
        raise LabelsError(f"{path}, line {other}: {name} {second!r}, but line {line} names {name} {first!r}; keep the "
                          f"labels of one {name} in a file")
    return next(iter(values), None)


def _check_scale(scores: Sequence[Optional[int]], values: Sequence[int], who: str) -> None:
    # sklearn's kappa silently drops scores outside `labels`: a wrong scale would give a wrong kappa, not an error.
    outside = sorted({s for s in scores if s is not None and s not in values})
    if outside:
        raise ValueError(f"{who} scores {outside} are not on the scale {list(values)}")


def _kappa(human: Sequence[int], judge: Sequence[int], values: Sequence[int]) -> Optional[float]:
    if not human:
        return None
    with warnings.catch_warnings():  # undefined (e.g. one score throughout) is reported as None
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        kappa = cohen_kappa_score(human, judge, weights="quadratic", labels=list(values))
    return None if np.isnan(kappa) else round(float(kappa), 4) + 0.0  # + 0.0: no "-0.00" in reports


def _kappa_ci(human: list[int], judge: list[int], values: Sequence[int], *, samples: int, seed: int) -> Optional[list[float]]:
    """Percentile bootstrap over rows; resamples with an undefined kappa are skipped."""
    return bootstrap_rows_ci(len(human), lambda rows: _kappa([human[i] for i in rows], [judge[i] for i in rows], values),
                             samples, seed)


def _share(hits: list[float]) -> Optional[float]:
    return round(sum(hits) / len(hits), 4) if hits else None


def agreement(judge: Sequence[Optional[int]], human: Sequence[int], values: Sequence[int], *,
              samples: int = BOOTSTRAP_SAMPLES, seed: int = 0) -> PointwiseAgreement:
    """How far a judge's scores agree with human scores on one criterion whose scale is `values`."""
    if len(judge) != len(human):
        raise ValueError(f"{len(judge)} judge scores for {len(human)} human labels")
    _check_scale(human, values, "human")
    _check_scale(judge, values, "judge")
    exact = [float(j == h) for j, h in zip(judge, human)]
    within_one = [float(j is not None and abs(j - h) <= 1) for j, h in zip(judge, human)]
    pairs = [(j, h) for j, h in zip(judge, human) if j is not None]
    scored_judge, scored_human = [j for j, _ in pairs], [h for _, h in pairs]
    spearman = None
    if len(set(scored_judge)) > 1 and len(set(scored_human)) > 1:
        spearman = round(float(spearmanr(scored_judge, scored_human).statistic), 4) + 0.0
    kappa = _kappa(scored_human, scored_judge, values)
    return PointwiseAgreement(
        rows=len(human), failed=len(human) - len(pairs),
        exact=_share(exact), exact_ci=bootstrap_ci(exact, samples, seed),
        within_one=_share(within_one), within_one_ci=bootstrap_ci(within_one, samples, seed),
        spearman=spearman, kappa=kappa,
        kappa_ci=_kappa_ci(scored_human, scored_judge, values, samples=samples, seed=seed) if kappa is not None else None,
    )


def majority_baseline(human: list[int]) -> list[int]:
    """The most common human score for every row; a tie goes to the lower score."""
    if not human:
        return []
    return [majority(human)] * len(human)


def length_baseline(lengths: list[int], human: list[int], values: Sequence[int]) -> list[int]:
    """The length-only rule: longer answers get higher scores, in the labels' own proportions.

    Rows sorted by length take the human scores sorted in the same order, so the shortest rows get
    the lowest scores as often as humans gave them. Rows of equal length share one score (the one at
    their middle rank, the lower of two), so that the rule depends on length alone.
    """
    if len(lengths) != len(human):
        raise ValueError(f"{len(lengths)} lengths for {len(human)} human labels")
    _check_scale(human, values, "human")
    slots = sorted(human)
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    predicted = [0] * len(lengths)
    start = 0
    while start < len(order):
        end = start
        while end + 1 < len(order) and lengths[order[end + 1]] == lengths[order[start]]:
            end += 1
        for rank in range(start, end + 1):
            predicted[order[rank]] = slots[(start + end) // 2]
        start = end + 1
    return predicted


def valid_against_baseline(judge_interval: Optional[list[float]], baseline_value: Optional[float]) -> bool:
    """Valid on these labels only if the interval's lower bound is strictly above a judge-free baseline's value
    (False with no interval or no baseline value: nothing shown)."""
    if judge_interval is None or baseline_value is None:
        return False
    return judge_interval[0] > baseline_value
