"""The rows a person reads: one view per test item, each model's answer beside the reference with
its verdict, for the report's row browser.

Kept in the summary (so the dashboard's visualization and the standalone report are the same page),
hence bounded: texts are cut at `TEXT_LIMIT` characters and, past `ITEM_LIMIT` items, the worst
items are the ones kept.
"""

from __future__ import annotations

from typing import Optional, Sequence

from datasets import Dataset

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.samples import sample_of
from llm_engineering.evaluation.stored.metrics import CheckVerdict
from llm_engineering.evaluation.stored.summary import AnswerView, ItemView
from llm_engineering.evaluation.turns import turn_of

ITEM_LIMIT = 2000
TEXT_LIMIT = 4000


def _cut(text: Optional[str]) -> str:
    text = text or ""
    return text if len(text) <= TEXT_LIMIT else text[:TEXT_LIMIT] + f"… [{len(text) - TEXT_LIMIT} more characters]"


def _answer_view(row: dict, criteria: list[str], metrics: Sequence[str] = ()) -> AnswerView:
    error = row.get(col.JUDGE_ERROR)
    return AnswerView(
        model_id=row[col.MODEL_ID],
        sample=sample_of(row),
        answer=_cut(row.get(col.ANSWER)),
        scores={c: None if error else row.get(col.score(c)) for c in criteria},
        expected={c: None if error else row.get(col.expected(c)) for c in criteria},
        analyses={c: _cut(row.get(col.analysis(c))) for c in criteria if row.get(col.analysis(c))},
        similarity=row.get(col.REFERENCE_SIMILARITY),
        error=error,
        finish_reason=row.get(col.FINISH_REASON),
        history=[{"role": m["role"], "content": _cut(m["content"])} for m in row.get(col.HISTORY) or []],
        confidence=row.get(col.CONFIDENCE),
        escalated=bool(row.get(col.ESCALATED)),
        metrics={name: row.get(col.metric(name)) for name in metrics},
        checks=[CheckVerdict(**{**v, "reason": _cut(v["reason"]) if v["reason"] else None})
                for v in row.get(col.CHECK_RESULTS) or []],
    )


def item_views(evaluations: list[Dataset], criteria: list[str], limit: int = ITEM_LIMIT,
               metrics: Sequence[str] = ()) -> tuple[list[ItemView], int]:
    """Every test item with each model's answers (in the models' order, a model's samples in turn) and their `metrics`,
    in the test split's order; and how many items there are. Past `limit` items, only the `limit` worst are returned."""
    items: dict[str, ItemView] = {}
    for dataset in evaluations:
        for row in dataset.to_list():
            item = items.setdefault(str(row[col.ID]), ItemView(
                id=str(row[col.ID]), instruction=_cut(row.get(col.INSTRUCTION)),
                reference=_cut(row.get(col.REFERENCE)), answers=[], turn=turn_of(row), category=row.get(col.CATEGORY)))
            item.answers.append(_answer_view(row, criteria, metrics))
    views = list(items.values())
    if len(views) > limit:
        kept = {id(v) for v in sorted(views, key=ItemView.worst)[:limit]}
        views = [v for v in views if id(v) in kept]
    return views, len(items)
