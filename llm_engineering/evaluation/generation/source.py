"""Read one split of a dataset from its source: the embedded sets, a local file or folder, or a Hugging Face dataset
id; a mistake in the source, the split or the encoding is named with its fix."""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Optional

from datasets import Dataset, DatasetDict, get_dataset_split_names, load_dataset, load_from_disk
from datasets.exceptions import DatasetNotFoundError

EMBEDDED = "embedded"
EMBEDDED_FILE = "llm_twin_test.jsonl"
# A few two-turn conversations written for the project (MT-Bench's shape), each second turn about the first answer.
EMBEDDED_CONVERSATIONS = "embedded-conversations"
EMBEDDED_FILES = {EMBEDDED: EMBEDDED_FILE, EMBEDDED_CONVERSATIONS: "conversations.jsonl"}
_FILE_BUILDERS = {".json": "json", ".jsonl": "json", ".parquet": "parquet", ".csv": "csv"}
_TEXT_SUFFIXES = (".json", ".jsonl", ".csv")
# A single file holds one split, read under the name `dataset.split` has by default.
FILE_SPLIT = "test"
DEFAULT_ENCODING = "utf-8"
_SPLIT_FIX = "--split NAME (dataset.split in the config)"


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
        raise DatasetError(f"Dataset {source!r} has no {split!r} split (it has {sorted(loaded)}): give one of those with "
                           f"{_SPLIT_FIX}.")
    return loaded[split]


def _single_file(path: Path, split: str, encoding: str) -> Dataset:
    """A json/jsonl/parquet/csv file: one split, `FILE_SPLIT`; `split` naming another is a mistake, not ignored."""
    builder = _FILE_BUILDERS.get(path.suffix.lower())
    if builder is None:
        raise DatasetError(f"Cannot read {path}: unsupported file type {path.suffix!r}; use one of "
                           f"{sorted(_FILE_BUILDERS)} or a dataset folder.")
    if split != FILE_SPLIT:
        raise DatasetError(f"--split {split} (dataset.split): {path} is a single file, which holds one split, read as "
                           f"{FILE_SPLIT!r}. Leave --split out (or set dataset.split: {FILE_SPLIT}), or give a folder or "
                           f"Hub dataset that has a {split!r} split.")
    # A BOM at the start of a utf-8 file is read as one (`utf-8-sig`), not as part of the first column's name.
    text = {"encoding": "utf-8-sig" if encoding == DEFAULT_ENCODING else encoding} if builder != "parquet" else {}
    return load_dataset(builder, data_files={split: str(path)}, split=split, **text)


def read_split(source: str, split: str = FILE_SPLIT, revision: Optional[str] = None, token: Optional[str] = None,
               encoding: str = DEFAULT_ENCODING) -> Dataset:
    """Read one split from 'embedded' (or 'embedded-conversations'), a local file/folder, or a Hugging Face dataset
    id (private or gated ones with `token`); csv and json text in `encoding`."""
    path = embedded_split_path(source) if source in EMBEDDED_FILES else Path(source).expanduser()
    # Passed to the builder only when asked for: a parquet folder's builder takes no encoding.
    text = {"encoding": encoding} if encoding != DEFAULT_ENCODING else {}
    try:
        if path.is_file():
            return _single_file(path, split, encoding)
        if path.is_dir():
            if (path / "dataset_dict.json").exists() or (path / "dataset_info.json").exists():
                return _pick_split(load_from_disk(str(path)), split, source)
            return load_dataset(str(path), split=split, **text)
        if path.suffix.lower() in _FILE_BUILDERS or source.startswith((".", "/", "~")):
            raise DatasetError(f"Dataset file not found: {path.absolute()}. Check the path given to --dataset (a "
                               f"relative one is read from the folder the command runs in).")
        return load_dataset(source, split=split, revision=revision, token=token, **text)
    except DatasetError:
        raise
    except DatasetNotFoundError as error:  # on the Hub: no such repo, or no such revision of it (its own words)
        access = ("the token set (HUGGINGFACE_ACCESS_TOKEN or HF_TOKEN) may lack access to it" if token else
                  "if it is private or gated, set HUGGINGFACE_ACCESS_TOKEN (or HF_TOKEN) to a token with access")
        raise DatasetError(
            f"Cannot read dataset {source!r}{f' at revision {revision!r}' if revision else ''}: {error} Check the "
            f"dataset id{' and dataset.revision (a branch, tag or commit sha)' if revision else ''}; {access}."
        ) from error
    except Exception as error:  # the datasets library raises many types for one cause
        undecodable = _undecodable(path, encoding) if path.exists() else None
        if undecodable:
            raise DatasetError(
                f"Cannot read dataset {source!r}: {undecodable} is not {encoding} text. Give the file's encoding with "
                f"--encoding NAME (dataset.encoding in the config; e.g. latin-1, cp1252, utf-16), or save it as UTF-8."
            ) from error
        if isinstance(error, ValueError) and "split" in str(error).lower():
            names = _split_names(str(path) if path.exists() else source, revision, token)
            raise DatasetError(f"Dataset {source!r} has no {split!r} split (it has {names}): give one of those with "
                               f"{_SPLIT_FIX}.") from error
        raise DatasetError(
            f"Cannot read dataset {source!r} ({_root_cause(error)}). Fix the file, or give a Hub dataset "
            f"id that is reachable, or a local json/jsonl/parquet/csv file or dataset folder."
        ) from error


def _undecodable(path: Path, encoding: str) -> Optional[str]:
    """Where the first csv/json text file at `path` (a file, or a folder's files) stops decoding in `encoding`:
    the file, the byte and its offset and line; None when every file decodes."""
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    for file in (f for f in files if f.suffix.lower() in _TEXT_SUFFIXES):
        data = file.read_bytes()
        try:
            data.decode(encoding)
        except UnicodeDecodeError as error:
            line = data.count(b"\n", 0, error.start) + 1
            return f"{file} (byte 0x{data[error.start]:02x} at offset {error.start}, line {line})"
    return None


def _split_names(source: str, revision: Optional[str], token: Optional[str]) -> list[str] | str:
    """The splits `source` has, or "?" where they cannot be listed either."""
    try:
        return sorted(get_dataset_split_names(source, revision=revision, token=token))
    except Exception:  # the error being reported says more than this one
        return "?"


def _root_cause(error: BaseException) -> str:
    """The innermost cause: `datasets` wraps a parse error of line N in a generic one."""
    seen = {id(error)}  # a chain can loop (`raise error from error`): it stops before an error met again
    while (inner := error.__cause__ or error.__context__) is not None and id(inner) not in seen:
        seen.add(id(inner))
        error = inner
    return f"{type(error).__name__}: {error}"
