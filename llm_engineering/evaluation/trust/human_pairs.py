"""Human-labelled answer pairs (LLMBar, MT-Bench expert votes, your own): two answers to one instruction and the
one people judged better. Read from JSONL or CSV and checked whole before any judge starts.

One pair a line: `instruction`, `output_1`, `output_2`, `label` (1: output_1 is better, 2: output_2, 0: a tie; or
A, B, tie as the report's labels write them); `id` and `reference` are optional (an id defaults to the pair's line).
A pair's label is read as a `Preference`: A for output_1, B for output_2.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

from pydantic import BaseModel, Field

from llm_engineering.evaluation import preference
from llm_engineering.evaluation.records import read_records
from llm_engineering.evaluation.stored.pairwise import Preference

REQUIRED = ("instruction", "output_1", "output_2", "label")
OPTIONAL = ("id", "reference")
FORMAT = ("one pair a line with instruction, output_1, output_2 and label (1: output_1 better, 2: output_2 better, "
          "0: a tie), id and reference optional")


class PairsError(ValueError):
    """A pairs file that cannot be used; the message names the file, the line and the fix."""


class HumanPair(BaseModel):
    id: str
    instruction: str
    output_1: str
    output_2: str
    label: Preference = Field(description="the output people judged better: A output_1, B output_2, or a tie")
    reference: Optional[str] = None
    line: int = 0


def _problem(record: dict[str, Any]) -> Optional[str]:
    missing = [name for name in REQUIRED if name not in record]
    if missing:
        return f"missing {', '.join(missing)} (found {', '.join(sorted(record)) or 'no columns'}); each pair needs {FORMAT}"
    if preference.read(record["label"]) is None:
        return (f"label {record['label']!r} is not 1, 2 or 0 (or A, B, tie); write 1 when output_1 is better, 2 for "
                f"output_2, 0 for a tie")
    for name in ("instruction", "output_1", "output_2"):
        if not isinstance(record[name], str) or not record[name].strip():
            return f"{name} is empty; every pair needs an instruction and two non-empty answers (drop the pair)"
    if record.get("reference") is not None and not isinstance(record["reference"], str):
        return f"reference must be text, got {type(record['reference']).__name__}"
    return None


def load_pairs(path: Path, limit: Optional[int] = None) -> list[HumanPair]:
    """Every pair of `path` (the first `limit`), or an error naming the file, the line and the fix."""
    path = Path(path)
    if not path.is_file():
        raise PairsError(f"{path}: no such file; give a .jsonl or .csv file with {FORMAT}")
    pairs: list[HumanPair] = []
    first_line: dict[str, int] = {}
    _, records = read_records(path, error=PairsError, what="a pair", fix=f"write {FORMAT}, as one JSON object")
    for number, record in records:
        problem = _problem(record)
        if problem:
            raise PairsError(f"{path}, line {number}: {problem}")
        pair_id = str(record.get("id") or f"line-{number}")
        if pair_id in first_line:
            raise PairsError(f"{path}, line {number}: id {pair_id!r} is also on line {first_line[pair_id]}; give each "
                             f"pair its own id")
        first_line[pair_id] = number
        pairs.append(HumanPair(id=pair_id, instruction=record["instruction"], output_1=record["output_1"],
                               output_2=record["output_2"], label=preference.read(record["label"]),
                               reference=record.get("reference") or None, line=number))
    if not pairs:
        raise PairsError(f"{path}: no pairs in the file; write {FORMAT}")
    return pairs[:limit] if limit else pairs
