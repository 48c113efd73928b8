"""Turns of conversations in stored rows: which turn a row answers, and the first turns alone.

A one-turn split has no `turn` column: each of its rows is a first turn, so whatever reads turns reads it as before.
"""

from __future__ import annotations

from typing import Any

from datasets import Dataset

from llm_engineering.evaluation import columns as col


def turn_of(row: dict[str, Any]) -> int:
    """Which turn of its conversation a row answers (1 for a one-turn row, or one stored before conversations)."""
    return row.get(col.TURN) or 1


def first_turns(rows: Dataset) -> Dataset:
    """The first turns of conversations only (every row of a one-turn split): what the judge check pairs, since a
    later turn's instruction reads only after the conversation before it."""
    if col.TURN not in rows.column_names or all(turn == 1 for turn in rows[col.TURN]):
        return rows
    return rows.filter(lambda turn: turn == 1, input_columns=col.TURN)


def with_references(rows: Dataset) -> Dataset:
    """The rows that have a reference answer (a turn of a conversation may have none)."""
    if col.REFERENCE not in rows.column_names or all(r is not None for r in rows[col.REFERENCE]):
        return rows
    return rows.filter(lambda reference: reference is not None, input_columns=col.REFERENCE)


def answered(rows: Dataset) -> Dataset:
    """The rows with an answer (not empty, not left ungenerated)."""
    return rows.filter(lambda answer: bool(answer and answer.strip()), input_columns=col.ANSWER)
