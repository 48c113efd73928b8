"""The `checklists` artifact: each row's checklist items, written once and reused by every model and every rescoring.

Items come from the dataset's own `checklist` column where a row has one (a user's items, used as given but for empty
and repeated ones); else, by default, from the row's reference, its sentences (`judging.checklist.reference_points`);
else from a writer (the judge, or `checklists.writer`): one reply per row, from its instruction and reference, or its
instruction alone where it has none (`judging.checklist.writer_messages`), cleaned (`clean_items`). A row left without
a usable item keeps its error, and its answers get no checklist verdict (an error on their rows, never a score).
"""

from __future__ import annotations

from typing import Optional

from datasets import Dataset, Features, List, Value

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.judging.checklist import (
    clean_items, read_items, reference_points, writer_messages, writer_schema,
)
from llm_engineering.evaluation.judging.judge import Judge
from llm_engineering.evaluation.judging.transport import ask_judge

FEATURES = {col.ID: Value("string"), col.CHECKLIST: List(Value("string")), "source": Value("string"),
            "dropped": List(Value("string")), "error": Value("string")}
GIVEN = "dataset"  # `source` of items a row's own `checklist` column gave
REFERENCE = "reference sentences"  # `source` of items that are the reference's sentences


def _given(items: object) -> Optional[list[str]]:
    """A row's own `checklist` value as items: a list of texts, or one text of lines; None where it has none."""
    if items is None:
        return None
    if isinstance(items, str):
        items = items.splitlines()
    return [str(item) for item in items] if isinstance(items, (list, tuple)) and items else None


def write_checklists(writer: Judge, rows: Dataset, max_items: int, from_reference: bool = True) -> Dataset:
    """One checklist per distinct row id of `rows` (columns id, instruction, reference; `checklist` optional): the
    row's own items; or, `from_reference`, its reference's sentences; or the writer's (its first backend, through its
    cache), which writes every row's items where `from_reference` is off and those of rows without a reference."""
    seen: dict[str, int] = {}
    ids, instructions = rows[col.ID], rows[col.INSTRUCTION]
    references = rows[col.REFERENCE] if col.REFERENCE in rows.column_names else [None] * len(rows)
    own = rows[col.CHECKLIST] if col.CHECKLIST in rows.column_names else [None] * len(rows)
    for k, row_id in enumerate(ids):
        seen.setdefault(str(row_id), k)
    order = list(seen.values())
    given = {k: _given(own[k]) for k in order}
    points = {k: reference_points(str(references[k]), max_items) for k in order
              if given[k] is None and from_reference and references[k]}
    to_write = [k for k in order if given[k] is None and k not in points]
    replies = ask_judge(writer.backend, [writer_messages(instructions[k], references[k], max_items) for k in to_write],
                        cache=writer.cache, is_valid=lambda text: bool(read_items(text)),
                        reply_schema=writer_schema(max_items))
    written = dict(zip(to_write, replies))
    out: dict[str, list] = {name: [] for name in FEATURES}
    for k in order:
        raw = given[k] if given[k] is not None else points[k] if k in points else read_items(written[k].text)
        # A user's items, and the reference's own sentences, are kept as they are (only empty and repeated ones go); a
        # writer's are held to the limits.
        as_given = given[k] is not None or k in points
        kept, dropped = clean_items(raw or [], None if as_given else references[k], len(raw or []) if as_given else max_items)
        error = None if kept else ("no usable item: " + ("; ".join(dropped) if dropped else
                                                         written[k].error or "the writer's reply held no item list"))
        source = GIVEN if given[k] is not None else REFERENCE if k in points else writer.backend.judge_id
        for name, value in ((col.ID, str(ids[k])), (col.CHECKLIST, kept), ("source", source), ("dropped", dropped),
                            ("error", error)):
            out[name].append(value)
    return Dataset.from_dict(out, features=Features(FEATURES))


def with_checklists(rows: Dataset, checklists: Dataset) -> Dataset:
    """`rows` with each row's items (`checklist`) from `checklists`, joined by id (a row without one gets none)."""
    by_id = dict(zip(checklists[col.ID], checklists[col.CHECKLIST]))
    items = [by_id.get(str(row_id)) for row_id in rows[col.ID]]
    rows = rows.remove_columns(col.CHECKLIST) if col.CHECKLIST in rows.column_names else rows
    return rows.add_column(col.CHECKLIST, items, feature=List(Value("string")))


def checklist_problems(checklists: Dataset) -> list[str]:
    """Rows left without a checklist, and why, for the run's notes."""
    return [f"row {row_id}: {error}" for row_id, error in zip(checklists[col.ID], checklists["error"]) if error]


def items_sources(checklists: Dataset) -> dict[str, int]:
    """How many rows' items came from each source (`dataset`, or the writer's id)."""
    counts: dict[str, int] = {}
    for source in checklists["source"]:
        counts[source] = counts.get(source, 0) + 1
    return counts
