"""Load, validate and subset the test split from the embedded set, the Hub or local files."""

from __future__ import annotations

import logging
from collections import Counter
from typing import Any, Mapping, Optional, Sequence

from datasets import Dataset, Features, List, Value

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.generation.config import ColumnsConfig, DatasetConfig, PromptConfig
from llm_engineering.evaluation.generation.conversation_rows import (
    ID_ALIASES,
    as_split,
    conversation_rows,
    is_conversation_split,
)
from llm_engineering.evaluation.generation.prompts import alpaca_prompt
from llm_engineering.evaluation.generation.source import DatasetError, read_split
from llm_engineering.evaluation.metrics.check_rows import rows_checks

logger = logging.getLogger(__name__)

# The test split's columns, typed: a split whose rows all lack a reference keeps a text column of None.
SPLIT_FEATURES = Features({col.ID: Value("string"), col.INSTRUCTION: Value("string"), col.REFERENCE: Value("string")})
# Where each role's column is found when `dataset.columns` does not name it: the first of these the split has (a role
# not listed here: a column of the role's own name).
USUAL_NAMES: dict[str, tuple[str, ...]] = {
    "instruction": col.INSTRUCTION_ALIASES, "reference": col.REFERENCE_ALIASES, "id": (col.ID,)}
REQUIRED_ROLES = ("instruction",)


def role_columns(found: Sequence[str], columns: ColumnsConfig, usual: Mapping[str, tuple[str, ...]] = USUAL_NAMES,
                 every: Sequence[str] = ()) -> dict[str, list[str]]:
    """The columns filling each role of `columns`: the one it names ([] for `none`), else the first of the role's
    usual names the split has ([] if none; for the roles in `every`, all of them in order: a conversation split reads
    each row's first non-empty one). A named column the split lacks, or one column in two roles, is refused."""
    chosen: dict[str, list[str]] = {}
    named = {role: name.strip() if name else None for role, name in columns.model_dump().items()}
    for role, name in named.items():
        if name is not None and name.lower() == col.NO_COLUMN:
            if role in REQUIRED_ROLES:
                raise DatasetError(f"dataset.columns.{role} is {name!r}, but every row needs an {role}: name its column "
                                   f"with --column {role}=NAME (dataset.columns.{role}), or leave it out to find it by "
                                   f"its usual names {list(usual[role])}.")
            chosen[role] = []
        elif name is not None:
            if name not in found:
                raise DatasetError(f"dataset.columns.{role} names the column {name!r}, but the test split has "
                                   f"{list(found)}: set dataset.columns.{role} (or --column {role}=NAME) to one of those.")
            chosen[role] = [name]
        else:
            present = [alias for alias in usual.get(role, (role,)) if alias in found]
            chosen[role] = present if role in every else present[:1]
    _refuse_shared_columns(chosen, named)
    return chosen


def _refuse_shared_columns(chosen: Mapping[str, list[str]], named: Mapping[str, Optional[str]]) -> None:
    """One column in two roles (the instruction graded as its own reference) stops here, naming how each role got it."""
    for name in dict.fromkeys(n for names in chosen.values() for n in names):
        roles = [role for role, names in chosen.items() if name in names]
        if len(roles) > 1:
            how = [f"{role} ({f'--column {role}={name}' if named[role] else 'found by its usual name'})"
                   for role in roles]
            raise DatasetError(
                f"The column {name!r} would fill {'two' if len(roles) == 2 else len(roles)} roles, {' and '.join(how)}: "
                f"one column fills one role. Name each "
                f"role's own column with --column ROLE=NAME (dataset.columns.ROLE), or turn an optional one off with "
                f"--column ROLE={col.NO_COLUMN} (e.g. --column reference={col.NO_COLUMN}: no reference).")


def _required(roles: Mapping[str, list[str]], role: str, found: Sequence[str]) -> str:
    if not roles[role]:
        aliases = USUAL_NAMES[role]
        raise DatasetError(
            f"The test split has no {role} column: looked for {list(aliases)}, found {list(found)}. Name yours with "
            f"--column {role}=NAME (or dataset.columns.{role}: NAME in the config), or rename it to {aliases[0]!r}.")
    return roles[role][0]


def _reference_text(value: Any) -> Optional[str]:
    """A row's reference: text as it is, a number as text (a math answer), None where the row has none (empty)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    return value if not isinstance(value, str) or value.strip() else None


def validate_split(dataset: Dataset, columns: Optional[ColumnsConfig] = None) -> Dataset:
    """Normalise to columns (id, instruction, reference) and reject unusable rows.

    The columns are those `columns` names, else found by their usual names (`role_columns`); `none` turns an optional
    role off. The reference is optional, per row: a row without one (no reference column, or an empty
    value) is judged on its instruction and answer alone. A missing `id` column is filled with the row number so
    every generated answer can be matched back to its row. A split with `turns` or `messages` rows (conversations)
    becomes a row per answered turn, with the columns of `conversation_rows`.
    """
    columns = columns or ColumnsConfig()
    if len(dataset) == 0:
        raise DatasetError("The test split is empty: point --dataset at a split with rows.")
    if is_conversation_split(dataset):
        return _conversations(dataset, columns)
    roles = role_columns(dataset.column_names, columns)
    instruction = _required(roles, "instruction", dataset.column_names)
    reference = next(iter(roles["reference"]), None)
    id_column = next(iter(roles["id"]), None)
    # Plain lists in one pass: `dataset[name]` is a lazy column that reads a row per item.
    values = dataset.select_columns(list(dict.fromkeys(c for c in (id_column, instruction, reference) if c))).to_dict()
    raw_ids = values[id_column] if id_column else list(range(len(dataset)))
    ids = [str(value) for value in raw_ids]
    instructions = values[instruction]
    raw_references = values[reference] if reference else [None] * len(dataset)
    references = [_reference_text(value) for value in raw_references]

    problems = [f"row {row}: no id; give every row an id, or number the rows with --column id={col.NO_COLUMN}"
                for row, value in enumerate(raw_ids) if value is None or str(value).strip() == ""]
    for row, (row_id, text, ref) in enumerate(zip(ids, instructions, references)):
        if not isinstance(text, str) or not text.strip():
            problems.append(f"row {row} (id {row_id}): empty or non-text {instruction!r}")
        if ref is not None and not isinstance(ref, str):
            problems.append(f"row {row} (id {row_id}): {reference!r} is {type(ref).__name__}, not text; give it as "
                            f"text, or leave it empty for a row without a reference")
    given = Counter(row_id for row_id, raw in zip(ids, raw_ids) if raw is not None)
    duplicates = sorted(row_id for row_id, count in given.items() if count > 1)
    if duplicates:
        problems.append(f"duplicate ids {duplicates[:5]}: every row needs a unique id")
    _refuse(problems)
    with_reference = sum(ref is not None for ref in references)
    if with_reference < len(references):
        logger.info("%d of %d rows have a reference answer (%s); the others are judged on instruction and answer",
                    with_reference, len(references), repr(reference) if reference else "no reference column")
    split = Dataset.from_dict({col.ID: ids, col.INSTRUCTION: instructions, col.REFERENCE: references},
                              features=SPLIT_FEATURES)
    return _with_checks_and_category(_with_own_checklists(split, dataset), dataset, roles)


def _with_checks_and_category(split: Dataset, source: Dataset, roles: Mapping[str, list[str]]) -> Dataset:
    """The source's checks (validated here, before any generation: a bad one names its row) and category columns,
    where it has them (`columns.checks`, `columns.category`, else the columns of those names)."""
    checks, category = next(iter(roles["checks"]), None), next(iter(roles["category"]), None)
    if checks is not None:
        texts, problems = rows_checks(source[checks], split[col.ID], checks)
        _refuse(problems)
        split = split.add_column(col.CHECKS, texts, feature=Value("string"))
    if category is not None:
        names = [None if value is None or str(value).strip() == "" else str(value).strip() for value in source[category]]
        split = split.add_column(col.CATEGORY, names, feature=Value("string"))
    return split


def _with_own_checklists(split: Dataset, source: Dataset) -> Dataset:
    """The source's `checklist` column, items a user wrote (a list of texts, or one text of lines), kept for a
    checklist rubric, which grades them as given."""
    if col.CHECKLIST not in source.column_names:
        return split
    items = []
    for row, value in enumerate(source[col.CHECKLIST]):
        texts = value.splitlines() if isinstance(value, str) else value
        if texts is not None and not (isinstance(texts, list) and all(isinstance(t, str) for t in texts)):
            raise DatasetError(f"row {row}: {col.CHECKLIST!r} is {type(value).__name__}; give a list of texts (or one "
                               f"text, an item a line), or leave it empty for items written from the reference")
        items.append([t.strip() for t in texts if t.strip()] or None if texts is not None else None)
    return split.add_column(col.CHECKLIST, items, feature=List(Value("string")))


def _refuse(problems: list[str]) -> None:
    if problems:
        shown = "\n  - ".join(problems[:10])
        more = f"\n  ... and {len(problems) - 10} more" if len(problems) > 10 else ""
        raise DatasetError(f"The test split has {len(problems)} bad row(s):\n  - {shown}{more}")


def _conversations(dataset: Dataset, columns: ColumnsConfig) -> Dataset:
    roles = role_columns(dataset.column_names, columns, {**USUAL_NAMES, "id": ID_ALIASES}, every=("id", "reference"))
    rows, problems = conversation_rows(dataset, roles["id"], roles["instruction"], roles["reference"])
    counts = Counter(row.id for row in rows)
    duplicates = sorted(row_id for row_id, count in counts.items() if count > 1)
    if duplicates:
        problems.append(f"duplicate ids {duplicates[:5]}: every row (each turn of a conversation: <id>/turn-<k>) "
                        f"needs a unique id")
    _refuse(problems)
    return as_split(rows)


def select_rows(dataset: Dataset, limit: Optional[int]) -> Dataset:
    """The first `limit` rows (all rows when None); of conversations, the first `limit` conversations, every turn."""
    if limit is None:
        return dataset
    if col.CONVERSATION_ID in dataset.column_names:
        conversations = dataset[col.CONVERSATION_ID]
        kept = set(list(dict.fromkeys(conversations))[:limit])
        return dataset.select([i for i, c in enumerate(conversations) if c in kept]).flatten_indices()
    if limit >= len(dataset):
        return dataset
    return dataset.select(range(limit))


def read_test_split(config: DatasetConfig, reference_required_by: Optional[str] = None,
                    token: Optional[str] = None) -> Dataset:
    """Read, validate and subset the configured test split (a private Hub dataset with the Hub `token`).
    `reference_required_by`: the name of a rubric that cannot judge a row without a reference, so such rows stop the
    run here, before any model loads."""
    raw = read_split(config.source, config.split, config.revision, token, config.encoding)
    split = select_rows(validate_split(raw, config.columns), config.row_limit)
    logger.info("Loaded %d rows from %s (split %s)", len(split), config.source, config.split)
    if reference_required_by:
        missing = [row_id for row_id, ref in zip(split[col.ID], split[col.REFERENCE]) if ref is None]
        if missing:
            raise DatasetError(
                f"{len(missing)} of {len(split)} rows have no reference answer (ids {missing[:5]}"
                f"{' ...' if len(missing) > 5 else ''}), but rubric {reference_required_by!r} judges against one: use "
                f"--rubric task-accuracy (judges with the reference where a row has one), a rubric without references "
                f"(helpfulness), or name the reference column with --column reference=NAME.")
    return split


def with_prompts(split: Dataset, prompt: PromptConfig) -> Dataset:
    """Add the `prompt` column: the Alpaca-formatted instruction (`alpaca`, and `auto`, where generation replaces it
    for a model with a chat template), or for `chat` the bare instruction that generation renders with each
    model's tokenizer."""
    instructions = split.select_columns([col.INSTRUCTION]).to_dict()[col.INSTRUCTION]
    prompts = instructions if prompt.template == "chat" else [alpaca_prompt(text) for text in instructions]
    return split.add_column(col.PROMPT, prompts)
