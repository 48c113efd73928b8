"""Records read from a file people write (labels, human-labelled pairs): JSONL or CSV, each record with the line it
starts on, so that every later error can name the file and the line. What a record must hold is the caller's."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any, Optional

Record = tuple[int, dict[str, Any]]  # (the line the record starts on, its fields)


def read_records(path: Path, *, error: type[ValueError], what: str, fix: str) -> tuple[Optional[list[str]], list[Record]]:
    """(the CSV header, None for JSONL or an empty CSV; the records with their lines). A file that cannot be read as
    records raises `error` naming the file, the line and, for JSONL, `fix` (how to write one `what`, say "a label")."""
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        return None, _jsonl(path, error, what, fix)
    if suffix == ".csv":
        return _csv(path, error)
    raise error(f"{path}: {what.removeprefix('a ')}s are read from .jsonl or .csv files, not "
                f"{suffix or 'a file without a suffix'!r}")


def _jsonl(path: Path, error: type[ValueError], what: str, fix: str) -> list[Record]:
    records = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as problem:
            raise error(f"{path}, line {number}: not valid JSON ({problem.msg}, char {problem.pos}); {fix}") from None
        if not isinstance(record, dict):
            raise error(f"{path}, line {number}: {what} is a JSON object, got {type(record).__name__}; {fix}")
        records.append((number, record))
    return records


def _csv(path: Path, error: type[ValueError]) -> tuple[Optional[list[str]], list[Record]]:
    # utf-8-sig: a spreadsheet's export may start with a byte-order mark, which would rename the first column.
    with path.open(encoding="utf-8-sig", newline="") as handle:
        reader = csv.DictReader(handle)
        if reader.fieldnames is None:
            return None, []
        records, start = [], reader.line_num + 1
        for record in reader:  # a text may span lines: a record is named by the line it starts on
            if None in record or None in record.values():
                raise error(f"{path}, line {start}: {'more' if None in record else 'fewer'} fields than the header's "
                            f"{len(reader.fieldnames)}; quote text that holds commas or quotes")
            records.append((start, dict(record)))
            start = reader.line_num + 1
    return list(reader.fieldnames), records
