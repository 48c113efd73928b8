"""Load, validate and subset the test split from the embedded set, the Hub or local files."""

from __future__ import annotations

import logging
from collections import Counter
from importlib import resources
from pathlib import Path
from typing import Optional

from datasets import Dataset, DatasetDict, load_dataset, load_from_disk
from datasets.exceptions import DatasetNotFoundError

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.config import DatasetConfig, PromptConfig
from llm_engineering.evaluation.generation.conversation_rows import as_split, conversation_rows, is_conversation_split
from llm_engineering.evaluation.generation.prompts import alpaca_prompt

logger = logging.getLogger(__name__)

EMBEDDED = "embedded"
EMBEDDED_FILE = "llm_twin_test.jsonl"
# A few two-turn conversations written for the project (MT-Bench's shape), each second turn about the first answer.
EMBEDDED_CONVERSATIONS = "embedded-conversations"
EMBEDDED_FILES = {EMBEDDED: EMBEDDED_FILE, EMBEDDED_CONVERSATIONS: "conversations.jsonl"}
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


def read_split(source: str, split: str = "test", revision: Optional[str] = None) -> Dataset:
    """Read one split from 'embedded' (or 'embedded-conversations'), a local file/folder, or a Hugging Face dataset
    id."""
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
        return load_dataset(source, split=split, revision=revision)
    except DatasetError:
        raise
    except DatasetNotFoundError as error:  # on the Hub: no such repo, or no such revision of it (its own words)
        raise DatasetError(
            f"Cannot read dataset {source!r}{f' at revision {revision!r}' if revision else ''}: {error} Check the "
            f"dataset id{' and dataset.revision (a branch, tag or commit sha)' if revision else ''}."
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


def _find_column(dataset: Dataset, aliases: tuple[str, ...], role: str) -> str:
    for name in aliases:
        if name in dataset.column_names:
            return name
    raise DatasetError(
        f"The test split has no {role} column: looked for {list(aliases)}, found "
        f"{dataset.column_names}. Rename the column to {aliases[0]!r}."
    )


def validate_split(dataset: Dataset) -> Dataset:
    """Normalise to columns (id, instruction, reference) and reject unusable rows.

    The reference column may be called `answer` or `output`; a missing `id` column is filled
    with the row number so every generated answer can be matched back to its row. A split with `turns` or
    `messages` rows (conversations) becomes a row per answered turn, with the columns of `conversation_rows`.
    """
    if len(dataset) == 0:
        raise DatasetError("The test split is empty: point --dataset at a split with rows.")
    if is_conversation_split(dataset):
        return _conversations(dataset)
    instruction = _find_column(dataset, col.INSTRUCTION_ALIASES, "instruction")
    reference = _find_column(dataset, col.REFERENCE_ALIASES, "reference answer")
    # Plain lists in one pass: `dataset[name]` is a lazy column that reads a row per item.
    columns = dataset.select_columns([c for c in (col.ID, instruction, reference) if c in dataset.column_names]).to_dict()
    raw_ids = columns[col.ID] if col.ID in columns else list(range(len(dataset)))
    ids = [str(value) for value in raw_ids]
    instructions, references = columns[instruction], columns[reference]

    problems = [f"row {row}: no id; give every row an id, or drop the id column to number rows"
                for row, value in enumerate(raw_ids) if value is None or str(value).strip() == ""]
    for row, (row_id, text, ref) in enumerate(zip(ids, instructions, references)):
        if not isinstance(text, str) or not text.strip():
            problems.append(f"row {row} (id {row_id}): empty or non-text {instruction!r}")
        if not isinstance(ref, str) or not ref.strip():
            problems.append(f"row {row} (id {row_id}): empty or non-text {reference!r}")
    given = Counter(row_id for row_id, raw in zip(ids, raw_ids) if raw is not None)
    duplicates = sorted(row_id for row_id, count in given.items() if count > 1)
    if duplicates:
        problems.append(f"duplicate ids {duplicates[:5]}: every row needs a unique id")
    _refuse(problems)
    return Dataset.from_dict(
        {col.ID: ids, col.INSTRUCTION: instructions, col.REFERENCE: references}
    )


def _refuse(problems: list[str]) -> None:
    if problems:
        shown = "\n  - ".join(problems[:10])
        more = f"\n  ... and {len(problems) - 10} more" if len(problems) > 10 else ""
        raise DatasetError(f"The test split has {len(problems)} bad row(s):\n  - {shown}{more}")


def _conversations(dataset: Dataset) -> Dataset:
    rows, problems = conversation_rows(dataset)
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


def read_test_split(config: DatasetConfig) -> Dataset:
    """Read, validate and subset the configured test split."""
    raw = read_split(config.source, config.split, config.revision)
    split = select_rows(validate_split(raw), config.row_limit)
    logger.info("Loaded %d rows from %s (split %s)", len(split), config.source, config.split)
    return split


def with_prompts(split: Dataset, prompt: PromptConfig) -> Dataset:
    """Add the `prompt` column: the Alpaca-formatted instruction (`alpaca`, and `auto`, where generation replaces it
    for a model with a chat template), or for `chat` the bare instruction that generation renders with each
    model's tokenizer."""
    instructions = split.select_columns([col.INSTRUCTION]).to_dict()[col.INSTRUCTION]
    prompts = instructions if prompt.template == "chat" else [alpaca_prompt(text) for text in instructions]
    return split.add_column(col.PROMPT, prompts)
