"""A row's checks read and validated: from a dataset's `checks` column (a list of `{type, value, ...}`, or that list
as JSON text, as a CSV cell holds it) and from the config's `checks:`. A bad check stops here, before any
generation, with the check, what is wrong and how it is written (`ChecksError`).

The test split carries each row's checks as JSON text (`checks_text`), the evaluations each check's verdict.
"""

from __future__ import annotations

import json
from typing import Any, Optional, Sequence, cast

from pydantic import TypeAdapter, ValidationError

from llm_engineering.evaluation.metrics.checks import CHECK_TYPES, EXAMPLES, Check, CheckType

_CHECK: TypeAdapter[CheckType] = TypeAdapter(Check)
_KINDS = ", ".join(CHECK_TYPES)


class ChecksError(ValueError):
    """A check that cannot be used; the message names the check, the problem and how the check is written."""


def _shown(check: Any) -> str:
    text = json.dumps(check, ensure_ascii=False, default=str)
    return text if len(text) <= 120 else text[:120] + "…"


def read_check(check: Any) -> CheckType:
    """One check from its mapping (a check already read is kept); `ChecksError` saying what is wrong and how the type
    is written."""
    if isinstance(check, tuple(CHECK_TYPES.values())):
        return cast(CheckType, check)
    if not isinstance(check, dict):
        raise ChecksError(f"{_shown(check)} is not a mapping; write each check as {{\"type\": ..., \"value\": ...}}, "
                          f"e.g. {EXAMPLES['contains']}")
    # A dataset's list of checks is loaded as one struct type: each holds every key any check has, None where unset.
    given = {key: value for key, value in check.items() if value is not None}
    kind = given.get("type")
    if kind not in CHECK_TYPES:
        raise ChecksError(f"{_shown(check)}: unknown check type {kind!r}; use one of {_KINDS}")
    try:
        return _CHECK.validate_python(given)
    except ValidationError as error:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'][1:]) or 'check'}: "
                             f"{e['msg'].removeprefix('Value error, ')}" for e in error.errors())
        raise ChecksError(f"{_shown(check)}: {problems}; write it as {EXAMPLES[kind]}") from None


def read_checks(value: Any) -> list[CheckType]:
    """A row's checks: None or an empty value for none, a list of check mappings, or that list as JSON text;
    `ChecksError` naming the check (by its position, from 1) otherwise."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return []
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as error:
            raise ChecksError(f"checks are not valid JSON ({error}); write a JSON list, e.g. "
                              f"[{EXAMPLES['contains']}]") from None
    if not isinstance(value, list):
        raise ChecksError(f"checks are {type(value).__name__}, not a list; write a list of checks, e.g. "
                          f"[{EXAMPLES['contains']}]")
    checks = []
    for number, check in enumerate(value, 1):
        try:
            checks.append(read_check(check))
        except ChecksError as error:
            raise ChecksError(f"check {number} {error}") from None
    return checks


def checks_text(checks: Sequence[CheckType]) -> Optional[str]:
    """Checks as the JSON text a test split stores (each with its type and the options set); None for none."""
    if not checks:
        return None
    return json.dumps([{"type": c.type, **c.model_dump(exclude_defaults=True)} for c in checks], ensure_ascii=False)


def rows_checks(values: Sequence[Any], ids: Sequence[str], column: str) -> tuple[list[Optional[str]], list[str]]:
    """Each row's checks (a dataset's `column`) as the test split stores them (`checks_text`), and a problem per row
    whose checks are bad, naming the row by number and id."""
    texts, problems = [], []
    for row, (value, row_id) in enumerate(zip(values, ids)):
        try:
            texts.append(checks_text(read_checks(value)))
        except ChecksError as error:
            texts.append(None)
            problems.append(f"row {row} (id {row_id}): {column!r}: {error}")
    return texts, problems
