"""The `checklists` artifact: each row's checklist items, written once and reused by every model and every rescoring.

Items come from the dataset's own `checklist` column where a row has one (a user's items, used as given but for empty
and repeated ones); else, by default, from the row's reference, its points (`judging.reference_points`); else from a
writer (the judge, or `checklists.writer`): one reply per row, from its instruction and reference, or its instruction
alone where it has none (`judging.checklist.writer_messages`), cleaned (`clean_items`). A row left without a usable
item keeps its error, and its answers get no checklist verdict (an error on their rows, never a score).

Each row keeps its items' `source` (`SOURCES`; the writer's id apart, in `writer`), and the rows scored on them carry it
(`checklist_source`): items written from the instruction alone say what an answer must do, not which facts it must
state, so the report counts and averages the rows of each source apart (`report.checklist_text`).
"""

from __future__ import annotations

from typing import Optional

from datasets import Dataset, Features, List, Value

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.judging.checklist import clean_items, read_items, writer_messages, writer_schema
from llm_engineering.evaluation.judging.judge import Judge
from llm_engineering.evaluation.judging.reference_points import reference_points
from llm_engineering.evaluation.judging.transport import ask_judge

FEATURES = {col.ID: Value("string"), col.CHECKLIST: List(Value("string")), "source": Value("string"),
            "writer": Value("string"), "dropped": List(Value("string")), "error": Value("string")}
GIVEN = "dataset"  # `source` of items a row's own `checklist` column gave
REFERENCE = "reference sentences"  # `source` of items that are the reference's points (its sentences or list entries)
FROM_REFERENCE = "written from the reference"  # a writer's, from the instruction and the reference
FROM_INSTRUCTION = "written from the instruction"  # a writer's, from the instruction alone (the row has no reference)
SOURCES = (GIVEN, REFERENCE, FROM_REFERENCE, FROM_INSTRUCTION)


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
        written_by = writer.backend.judge_id if k in written else None
        source = (GIVEN if given[k] is not None else REFERENCE if k in points
                  else FROM_REFERENCE if references[k] else FROM_INSTRUCTION)
        for name, value in ((col.ID, str(ids[k])), (col.CHECKLIST, kept), ("source", source), ("writer", written_by),
                            ("dropped", dropped), ("error", error)):
            out[name].append(value)
    return Dataset.from_dict(out, features=Features(FEATURES))


def with_checklists(rows: Dataset, checklists: Dataset) -> Dataset:
    """`rows` with each row's items (`checklist`) and their source (`checklist_source`) from `checklists`, joined by id
    (a row without one gets none)."""
    by_id = {row_id: (items, source) for row_id, items, source
             in zip(checklists[col.ID], checklists[col.CHECKLIST], checklists["source"])}
    joined = [by_id.get(str(row_id), (None, None)) for row_id in rows[col.ID]]
    rows = rows.remove_columns([c for c in (col.CHECKLIST, col.CHECKLIST_SOURCE) if c in rows.column_names])
    rows = rows.add_column(col.CHECKLIST, [items for items, _ in joined], feature=List(Value("string")))
    return rows.add_column(col.CHECKLIST_SOURCE, [source for _, source in joined], feature=Value("string"))


def checklist_problems(checklists: Dataset) -> list[str]:
    """Rows left without a checklist, and why, for the run's notes."""
    return [f"row {row_id}: {error}" for row_id, error in zip(checklists[col.ID], checklists["error"]) if error]


def items_sources(checklists: Dataset) -> dict[str, int]:
    """How many rows' items came from each source (`SOURCES`)."""
    counts: dict[str, int] = {}
    for source in checklists["source"]:
        counts[source] = counts.get(source, 0) + 1
    return counts
