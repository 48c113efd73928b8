"""Load, validate and subset the test split from the embedded set, the Hub or local files."""

from __future__ import annotations

import logging
from collections import Counter
from importlib import resources
from pathlib import Path
from typing import Any, Optional

from datasets import Dataset, DatasetDict, Features, List, Value, load_dataset, load_from_disk
from datasets.exceptions import DatasetNotFoundError

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.config import ColumnsConfig, DatasetConfig, PromptConfig
from llm_engineering.evaluation.generation.conversation_rows import as_split, conversation_rows, is_conversation_split
from llm_engineering.evaluation.generation.prompts import alpaca_prompt
from llm_engineering.evaluation.metrics.check_rows import rows_checks

logger = logging.getLogger(__name__)

EMBEDDED = "embedded"
EMBEDDED_FILE = "llm_twin_test.jsonl"
# A few two-turn conversations written for the project (MT-Bench's shape), each second turn about the first answer.
EMBEDDED_CONVERSATIONS = "embedded-conversations"
EMBEDDED_FILES = {EMBEDDED: EMBEDDED_FILE, EMBEDDED_CONVERSATIONS: "conversations.jsonl"}
# The test split's columns, typed: a split whose rows all lack a reference keeps a text column of None.
SPLIT_FEATURES = Features({col.ID: Value("string"), col.INSTRUCTION: Value("string"), col.REFERENCE: Value("string")})
_FILE_BUILDERS = {".json": "json", ".jsonl": "json", ".parquet": "parquet", ".csv": "csv"}


class DatasetError(ValueError):
    """The test split cannot be used as given; the message says why and how to fix it."""


def embedded_split_path(source: str = EMBEDDED) -> Path:
    """An evaluation set this package ships: LLM-engineering instructions with references (`embedded`), or
    two-turn conversations about them (`embedded-conversations`)."""
    return Path(str(resources.files("llm_engineering.evaluation") / "data" / EMBEDDED_FILES[source]))


def _pick_split(loaded: Dataset | DatasetDict, split: str, source: str) -> Dataset:
    if isinstance(loaded, Dataset):
        return loaded
    if split not in loaded:
        raise DatasetError(
            f"Dataset {source!r} has no {split!r} split (it has {sorted(loaded)}); "
            f"set dataset.split to one of those."
        )
    return loaded[split]


def read_split(source: str, split: str = "test", revision: Optional[str] = None, token: Optional[str] = None) -> Dataset:
    """Read one split from 'embedded' (or 'embedded-conversations'), a local file/folder, or a Hugging Face dataset
    id (private or gated ones with `token`)."""
    if source in EMBEDDED_FILES:
        return load_dataset("json", data_files={split: str(embedded_split_path(source))}, split=split)
    path = Path(source).expanduser()
    try:
        if path.is_file():
            builder = _FILE_BUILDERS.get(path.suffix.lower())
            if builder is None:
                raise DatasetError(
                    f"Cannot read {path}: unsupported file type {path.suffix!r}; "
                    f"use one of {sorted(_FILE_BUILDERS)} or a dataset folder."
                )
            return load_dataset(builder, data_files={split: str(path)}, split=split)
        if path.is_dir():
            if (path / "dataset_dict.json").exists() or (path / "dataset_info.json").exists():
                return _pick_split(load_from_disk(str(path)), split, source)
            return load_dataset(str(path), split=split)
        if path.suffix.lower() in _FILE_BUILDERS or source.startswith((".", "/", "~")):
            raise DatasetError(f"Dataset file not found: {path}. Check the path given to --dataset.")
        return load_dataset(source, split=split, revision=revision, token=token)
    except DatasetError:
        raise
    except DatasetNotFoundError as error:  # on the Hub: no such repo, or no such revision of it (its own words)
        access = ("the token set (HUGGINGFACE_ACCESS_TOKEN or HF_TOKEN) may lack access to it" if token else
                  "if it is private or gated, set HUGGINGFACE_ACCESS_TOKEN (or HF_TOKEN) to a token with access")
        raise DatasetError(
            f"Cannot read dataset {source!r}{f' at revision {revision!r}' if revision else ''}: {error} Check the "
            f"dataset id{' and dataset.revision (a branch, tag or commit sha)' if revision else ''}; {access}."
        ) from error
    except ValueError as error:
        if "split" in str(error).lower():
            raise DatasetError(f"Dataset {source!r} has no {split!r} split: {error}") from error
        raise DatasetError(f"Cannot read dataset {source!r}: {error}") from error
    except Exception as error:  # the datasets library raises many types for one cause
        raise DatasetError(
            f"Cannot read dataset {source!r} ({_root_cause(error)}). Fix the file, or give a Hub dataset "
            f"id that is reachable, or a local json/jsonl/parquet/csv file or dataset folder."
        ) from error


def _root_cause(error: BaseException) -> str:
    """The innermost cause: `datasets` wraps a parse error of line N in a generic one."""
    seen = {id(error)}  # a chain can loop (`raise error from error`): it stops before an error met again
    while (inner := error.__cause__ or error.__context__) is not None and id(inner) not in seen:
        seen.add(id(inner))
        error = inner
    return f"{type(error).__name__}: {error}"


def _column(dataset: Dataset, given: Optional[str], aliases: tuple[str, ...], role: str, *,
            required: bool = True) -> Optional[str]:
    """The column holding `role`: the one `dataset.columns.<role>` names, else the first of `aliases` present; None
    for an optional role that is absent."""
    found = dataset.column_names
    if given is not None:
        if given not in found:
            raise DatasetError(f"dataset.columns.{role} names the column {given!r}, but the test split has "
                               f"{found}: set dataset.columns.{role} (or --column {role}=NAME) to one of those.")
        return given
    name = next((name for name in aliases if name in found), None)
    if name is None and required:
        raise DatasetError(
            f"The test split has no {role} column: looked for {list(aliases)}, found {found}. Name yours with "
            f"--column {role}=NAME (or dataset.columns.{role}: NAME in the config), or rename it to {aliases[0]!r}."
        )
    return name


def _reference_text(value: Any) -> Optional[str]:
    """A row's reference: text as it is, a number as text (a math answer), None where the row has none (empty)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    return value if not isinstance(value, str) or value.strip() else None


def validate_split(dataset: Dataset, columns: Optional[ColumnsConfig] = None) -> Dataset:
    """Normalise to columns (id, instruction, reference) and reject unusable rows.

    The columns are those `columns` names, else found by their usual names (`columns.INSTRUCTION_ALIASES`,
    `REFERENCE_ALIASES`). The reference is optional, per row: a row without one (no reference column, or an empty
    value) is judged on its instruction and answer alone. A missing `id` column is filled with the row number so
    every generated answer can be matched back to its row. A split with `turns` or `messages` rows (conversations)
    becomes a row per answered turn, with the columns of `conversation_rows`.
    """
    columns = columns or ColumnsConfig()
    if len(dataset) == 0:
        raise DatasetError("The test split is empty: point --dataset at a split with rows.")
    if is_conversation_split(dataset):
        return _conversations(dataset, columns)
    instruction = _column(dataset, columns.instruction, col.INSTRUCTION_ALIASES, "instruction")
    reference = _column(dataset, columns.reference, col.REFERENCE_ALIASES, "reference", required=False)
    id_column = _column(dataset, columns.id, (col.ID,), "id", required=False)
    # Plain lists in one pass: `dataset[name]` is a lazy column that reads a row per item.
    values = dataset.select_columns(list(dict.fromkeys(c for c in (id_column, instruction, reference) if c))).to_dict()
    raw_ids = values[id_column] if id_column else list(range(len(dataset)))
    ids = [str(value) for value in raw_ids]
    instructions = values[instruction]
    raw_references = values[reference] if reference else [None] * len(dataset)
    references = [_reference_text(value) for value in raw_references]

    problems = [f"row {row}: no id; give every row an id, or drop the {id_column!r} column to number rows"
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
    return _with_checks_and_category(_with_own_checklists(split, dataset), dataset, columns)


def _with_checks_and_category(split: Dataset, source: Dataset, columns: ColumnsConfig) -> Dataset:
    """The source's checks (validated here, before any generation: a bad one names its row) and category columns,
    where it has them (`columns.checks`, `columns.category`, else the columns of those names)."""
    checks = _column(source, columns.checks, (col.CHECKS,), "checks", required=False)
    category = _column(source, columns.category, (col.CATEGORY,), "category", required=False)
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
    rows, problems = conversation_rows(dataset, columns.id, columns.instruction, columns.reference)
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
    raw = read_split(config.source, config.split, config.revision, token)
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
