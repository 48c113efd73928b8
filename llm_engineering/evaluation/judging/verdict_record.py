"""The verdict record: one judge's (or a jury's) verdict on one answer, from the judge's reply to the row the
`evaluations` artifact stores (as inspect_ai's `Score` on a sample).

Its fields, their types and the columns they become are laid out here once (`_layout`): the columns with their
types (`judge_columns`), a record's values (`VerdictRecord.row`), the rows of many added to a dataset
(`with_verdicts`) and a stored row read back (`VerdictRecord.from_row`) all follow that one layout. A row stored by
an earlier run, before a column existed (`judge_seconds`, `judge_calls`, `expected_score_problem`...), reads that
field as None. The records are built in `scoring` from the judges' readings of their replies.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Iterator, Optional, Sequence

from datasets import Dataset, List, Value

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.judging.checklist import GradedItem
from llm_engineering.evaluation.judging.rubric import Rubric


@dataclass(frozen=True)
class CriterionRecord:
    """One criterion's verdict: its integer score and analysis, its expected score and the probability of each level
    of its scale (from the judge's logprobs); with a jury, each judge's score and expected score; under a checklist
    rubric, why this criterion (one besides the checklist's) has no score."""

    score: Optional[int] = None
    analysis: Optional[str] = None
    expected: Optional[float] = None
    probabilities: Optional[list[float]] = None
    jury_scores: Optional[list[Optional[int]]] = None
    jury_expected: Optional[list[Optional[float]]] = None
    error: Optional[str] = None


@dataclass(frozen=True)
class VerdictRecord:
    """A verdict on one answer: the judge's id, each criterion's verdict, the checklist's items as read (under a
    checklist rubric), why there is no verdict or no expected score, the raw reply, and what it cost (tokens, whether
    it came from the cache, seconds, calls). None where an earlier run stored no such column."""

    judge_model: str
    criteria: dict[str, CriterionRecord] = field(default_factory=dict)
    items: Optional[list[GradedItem]] = None
    error: Optional[str] = None
    expected_problem: Optional[str] = None
    raw: Optional[str] = None
    prompt_tokens: Optional[int] = None
    completion_tokens: Optional[int] = None
    cached: Optional[bool] = None
    seconds: Optional[float] = None
    calls: Optional[int] = None

    def row(self, rubric: Rubric, jury: bool = False) -> dict[str, Any]:
        """The record's columns (`judge_columns`) and their values."""
        return {column.name: column.read(self) for column in _layout(rubric, jury)}

    @classmethod
    def from_row(cls, row: dict[str, Any], rubric: Rubric, jury: bool = False) -> VerdictRecord:
        """The record a stored row holds; a column the row lacks (stored before it existed) reads as None."""
        own: dict[str, Any] = {}
        criteria: dict[str, dict[str, Any]] = {name: {} for name in rubric.names}
        for column in _layout(rubric, jury):
            value = row.get(column.name)
            if column.criterion is not None:
                criteria[column.criterion][column.field] = value
            elif column.field == "items":
                own["items"] = [GradedItem(**item) for item in value] if value is not None else None
            else:
                own[column.field] = value
        return cls(criteria={name: CriterionRecord(**values) for name, values in criteria.items()}, **own)

    @property
    def scored(self) -> bool:
        """A valid verdict: no error, and a score on every criterion."""
        return self.error is None and all(c.score is not None for c in self.criteria.values())


# Each criterion's fields: (field, its column for a criterion, its type); a jury's also; under a checklist rubric,
# the other criteria's reason for no score.
_CRITERION: tuple[tuple[str, Callable[[str], str], Any], ...] = (
    ("score", col.score, Value("int32")),
    ("analysis", col.analysis, Value("string")),
    ("expected", col.expected, Value("float64")),
    ("probabilities", col.probabilities, List(Value("float64"))),
)
_JURY = (("jury_scores", col.jury_scores, List(Value("int32"))), ("jury_expected", col.jury_expected, List(Value("float64"))))
_NO_SCORE = ("error", col.score_error, Value("string"))
_ITEMS = List({"item": Value("string"), "yes": Value("float64"), "mass": Value("float64"), "problem": Value("string")})
# The record's own fields after the criteria: (field, column, type).
_OWN = (
    ("error", col.JUDGE_ERROR, Value("string")),
    ("expected_problem", col.EXPECTED_PROBLEM, Value("string")),
    ("raw", col.JUDGE_RAW, Value("string")),
    ("prompt_tokens", col.JUDGE_PROMPT_TOKENS, Value("int32")),
    ("completion_tokens", col.JUDGE_COMPLETION_TOKENS, Value("int32")),
    ("cached", col.JUDGE_CACHED, Value("bool")),
    ("seconds", col.JUDGE_SECONDS, Value("float64")),
    ("calls", col.JUDGE_CALLS, Value("int32")),
)


@dataclass(frozen=True)
class _Column:
    name: str
    feature: Any
    field: str
    criterion: Optional[str] = None  # None: a field of the record itself

    def read(self, record: VerdictRecord) -> Any:
        if self.criterion is not None:
            return getattr(record.criteria.get(self.criterion) or CriterionRecord(), self.field)
        if self.field == "items":
            return [asdict(item) for item in record.items] if record.items is not None else None
        return getattr(record, self.field)


def _layout(rubric: Rubric, jury: bool) -> Iterator[_Column]:
    """The columns of a verdict under `rubric`, in their order: the judge's id, each criterion's, a checklist's items
    and the other criteria's reasons for no score, the record's own."""
    yield _Column(col.JUDGE_MODEL, Value("string"), "judge_model")
    for name in rubric.names:
        for fieldname, column, feature in _CRITERION + (_JURY if jury else ()):
            yield _Column(column(name), feature, fieldname, name)
    if rubric.checklist is not None:
        yield _Column(col.checklist_items(rubric.checklist.criterion), _ITEMS, "items")
        for name in rubric.names:
            if name != rubric.checklist.criterion:
                yield _Column(_NO_SCORE[1](name), _NO_SCORE[2], _NO_SCORE[0], name)
    for fieldname, column_name, feature in _OWN:
        yield _Column(column_name, feature, fieldname)


def judge_columns(rubric: Rubric, jury: bool = False) -> dict[str, Any]:
    """The verdict columns and their types (explicit, so a column that is all None keeps its type)."""
    return {column.name: column.feature for column in _layout(rubric, jury)}


def with_verdicts(dataset: Dataset, records: Sequence[VerdictRecord], rubric: Rubric, jury: bool = False) -> Dataset:
    """`dataset` with each row's verdict record in the verdict columns (any it held before replaced)."""
    columns = judge_columns(rubric, jury)
    rows = [record.row(rubric, jury) for record in records]
    out = dataset.remove_columns([name for name in columns if name in dataset.column_names])
    for name, feature in columns.items():
        out = out.add_column(name, [row[name] for row in rows], feature=feature)
    return out
