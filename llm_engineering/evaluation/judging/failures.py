"""Why a judge gave no verdict: the cause read back from the error text a row stores, counted with one example each.

A row's `judge_error` is text, written in a stable form so that its cause reads back, in a run's report as in an
older run's stored rows:
- a request that failed: `request failed after N attempt(s): <cause>: <message>` (`request_error`), the cause
  `HTTP 400` (the server's own message after it), `timeout` or `connection error`; a Batch API request's
  `batch <id>: HTTP 400: <message>`, or `batch <id> expired without running this request`;
- a reply that did not parse: `invalid JSON (...)`, or that did not hold a verdict: `invalid verdict (...)`;
- a row with no answer to judge: `not judged: the prompt is longer than engine.max_model_len ...`.
A jury's row error names each judge's (`judge: error; judge: error`): the first one's cause is the row's.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from llm_engineering.evaluation.stored.figures import FailureCause

TIMEOUT = "timeout"
CONNECTION = "connection error"
INVALID_JSON = "invalid JSON"
INVALID_VERDICT = "invalid verdict"
NOT_GENERATED = "no answer generated"
NO_REPLY = "no reply"
INCOMPLETE = "incomplete verdict"
INCOMPLETE_VERDICT = f"{INCOMPLETE}: a criterion has no score"  # a row with no error, a score missing
BATCH_NOT_RUN = "batch not run"
OTHER = "other"

# Each cause's marks in an error text, earliest in the text wins; older runs' names of the same causes too
# (APITimeoutError, APIConnectionError: the exception's name, as errors were written before).
_MARKS = [
    (r"\bHTTP (?P<status>\d{3})\b", None),
    (r"\btimeout\b|APITimeoutError|timed out", TIMEOUT),
    (r"\bconnection error\b|APIConnectionError", CONNECTION),
    (r"\binvalid JSON\b", INVALID_JSON),
    (r"\binvalid verdict\b|\bno preference in the reply\b|\bneither Yes nor No\b|\bno verdict\b", INVALID_VERDICT),
    (r"\bnot judged: the prompt is longer\b", NOT_GENERATED),
    (r"\bno reply\b", NO_REPLY),
    (r"\bincomplete verdict\b", INCOMPLETE),
    (r"\bbatch \S+ (?:failed|expired|cancelled)\b|\bbatch_(?:failed|expired|cancelled)\b", BATCH_NOT_RUN),
]
_PATTERN = re.compile("|".join(f"(?P<c{k}>{pattern})" for k, (pattern, _) in enumerate(_MARKS)), re.IGNORECASE)


def request_error(problem: str, attempts: int) -> str:
    """The error of a request that failed after `attempts` tries; `problem` is `<cause>: <message>`: `HTTP 400: <the
    server's message>`, `timeout: ...`, `connection error: ...`."""
    return f"request failed after {attempts} attempt(s): {problem}"


def failure_cause(error: str) -> str:
    """The cause an error text names: `HTTP <status>`, `timeout`, `connection error`, `invalid JSON`, `invalid
    verdict`, `no answer generated`, `no reply`, `incomplete verdict`, `batch not run`, or `other`."""
    found = _PATTERN.search(error)
    if found is None:
        return OTHER
    k = int(next(name for name, value in found.groupdict().items() if value is not None and name != "status")[1:])
    return _MARKS[k][1] or f"HTTP {found.group('status')}"


def failure_causes(errors: Iterable[str]) -> list[FailureCause]:
    """The errors counted by cause, the most frequent first, each with its first error as the example."""
    causes: dict[str, FailureCause] = {}
    for error in errors:
        cause = failure_cause(error)
        known = causes.get(cause)
        causes[cause] = known.model_copy(update={"count": known.count + 1}) if known else FailureCause(
            cause=cause, count=1, example=error)
    return sorted(causes.values(), key=lambda c: -c.count)
