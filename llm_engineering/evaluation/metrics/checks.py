"""Per-row checks (verifiable instructions): what an answer must hold, checked by code, never by a judge.

A check is `{type, value, ...}`: a dataset row's own (its `checks` column) or the config's `checks:`, applied to every
row. Each type is a small pydantic model (a discriminated union on `type`), so a bad check fails where it is read
(`check_rows.read_checks`), before any generation. Nothing a check holds is executed: a regex runs with a time limit
(the `regex` package's `timeout`), a JSON schema is validated by `jsonschema` without fetching anything.

Each check's `failure(answer)` is None where the answer passes, else the reason it fails in words (the missing word,
the parse error, the count).
"""

from __future__ import annotations

import json
import re
from typing import Annotated, Any, Literal, Optional, Union

from pydantic import Field, NonNegativeFloat, NonNegativeInt, field_validator

from llm_engineering.evaluation.config_base import Strict

REGEX_TIMEOUT_S = 1.0  # per answer: a pattern that backtracks past it fails its check instead of hanging the run
_SHOWN = 60  # characters of an answer or a value quoted in a reason
_FENCE = re.compile(r"^```[\w-]*\s*\n(.*?)\n?```$", re.DOTALL)
_LAST_NUMBER = re.compile(r"[-−]?\d[\d,]*(?:\.\d+)?")


def _quoted(text: str) -> str:
    return json.dumps(text if len(text) <= _SHOWN else text[:_SHOWN] + "…", ensure_ascii=False)


class _TextCheck(Strict):
    value: str
    case_sensitive: bool = False

    def _both(self, answer: str) -> tuple[str, str]:
        return (answer, self.value) if self.case_sensitive else (answer.lower(), self.value.lower())


class Contains(_TextCheck):
    type: Literal["contains"] = "contains"

    def failure(self, answer: str) -> Optional[str]:
        text, value = self._both(answer)
        return None if value in text else f"{_quoted(self.value)} is not in the answer"


class NotContains(_TextCheck):
    type: Literal["not_contains"] = "not_contains"

    def failure(self, answer: str) -> Optional[str]:
        text, value = self._both(answer)
        return f"the answer holds {_quoted(self.value)}" if value in text else None


class Equals(_TextCheck):
    """The answer, stripped, is the value."""

    type: Literal["equals"] = "equals"

    def failure(self, answer: str) -> Optional[str]:
        text, value = self._both(answer.strip())
        return None if text == value.strip() else f"the answer is {_quoted(answer.strip())}, not {_quoted(self.value)}"


class StartsWith(_TextCheck):
    type: Literal["starts_with"] = "starts_with"

    def failure(self, answer: str) -> Optional[str]:
        text, value = self._both(answer.strip())
        return None if text.startswith(value) else f"the answer starts {_quoted(answer.strip()[:len(self.value) + 10])}"


class EndsWith(_TextCheck):
    type: Literal["ends_with"] = "ends_with"

    def failure(self, answer: str) -> Optional[str]:
        text, value = self._both(answer.strip())
        return None if text.endswith(value) else f"the answer ends {_quoted(answer.strip()[-len(self.value) - 10:])}"


class Regex(Strict):
    """The pattern is found in the answer (`regex.search`; write `^...$` to match the whole answer, `(?i)` to ignore
    case)."""

    type: Literal["regex"] = "regex"
    value: str

    @field_validator("value")
    @classmethod
    def _compiles(cls, pattern: str) -> str:
        import regex

        try:
            regex.compile(pattern)
        except regex.error as error:
            raise ValueError(f"the pattern {pattern!r} does not compile ({error}); fix the pattern") from None
        return pattern

    def failure(self, answer: str) -> Optional[str]:
        import regex

        try:
            found = regex.search(self.value, answer, timeout=REGEX_TIMEOUT_S)
        except TimeoutError:
            return (f"the pattern ran past its {REGEX_TIMEOUT_S:g} s limit on this answer (it backtracks without end): "
                    f"simplify it")
        return None if found else f"no match for {_quoted(self.value)}"


def _json_of(answer: str) -> tuple[Any, Optional[str]]:
    """The answer as JSON (a code fence around it is allowed), or the reason it is not."""
    text = answer.strip()
    fenced = _FENCE.match(text)
    try:
        return json.loads(fenced.group(1) if fenced else text), None
    except json.JSONDecodeError as error:
        return None, f"not JSON: {error}"


class IsJson(Strict):
    """The answer is JSON (alone, or alone in a code fence)."""

    type: Literal["is_json"] = "is_json"
    value: bool = True

    def failure(self, answer: str) -> Optional[str]:
        _, problem = _json_of(answer)
        return problem if self.value else ("the answer is JSON" if problem is None else None)


class JsonKeys(Strict):
    """The answer is a JSON object holding every key of `value`."""

    type: Literal["json_keys"] = "json_keys"
    value: list[str] = Field(min_length=1)

    def failure(self, answer: str) -> Optional[str]:
        data, problem = _json_of(answer)
        if problem:
            return problem
        if not isinstance(data, dict):
            return f"the JSON is a {type(data).__name__}, not an object"
        missing = [key for key in self.value if key not in data]
        return f"missing key(s) {', '.join(map(_quoted, missing))}" if missing else None


class JsonSchema(Strict):
    """The answer is JSON valid against the JSON Schema `value` (its `$schema`'s draft, else 2020-12)."""

    type: Literal["json_schema"] = "json_schema"
    value: dict[str, Any]

    @field_validator("value")
    @classmethod
    def _valid_schema(cls, schema: dict[str, Any]) -> dict[str, Any]:
        from jsonschema.exceptions import SchemaError
        from jsonschema.validators import validator_for

        try:
            validator_for(schema).check_schema(schema)
        except SchemaError as error:
            where = "/".join(map(str, error.path)) or "the top"
            raise ValueError(f"the schema is not valid JSON Schema ({error.message}, at {where}); fix the schema") from None
        return schema

    def failure(self, answer: str) -> Optional[str]:
        from jsonschema.exceptions import best_match
        from jsonschema.validators import validator_for

        data, problem = _json_of(answer)
        if problem:
            return problem
        error = best_match(validator_for(self.value)(self.value).iter_errors(data))
        if error is None:
            return None
        where = "/".join(map(str, error.absolute_path))
        return f"schema: {error.message}" + (f" (at {where})" if where else "")


class MinWords(Strict):
    type: Literal["min_words"] = "min_words"
    value: NonNegativeInt

    def failure(self, answer: str) -> Optional[str]:
        words = len(answer.split())
        return None if words >= self.value else f"{words} words, fewer than {self.value}"


class MaxWords(Strict):
    type: Literal["max_words"] = "max_words"
    value: NonNegativeInt

    def failure(self, answer: str) -> Optional[str]:
        words = len(answer.split())
        return None if words <= self.value else f"{words} words, more than {self.value}"


class MaxChars(Strict):
    type: Literal["max_chars"] = "max_chars"
    value: NonNegativeInt

    def failure(self, answer: str) -> Optional[str]:
        return None if len(answer) <= self.value else f"{len(answer)} characters, more than {self.value}"


def final_number(answer: str) -> Optional[float]:
    """The last number the answer writes (`1,000` is a thousand; a minus sign kept), None where it writes none."""
    found = _LAST_NUMBER.findall(answer)
    return float(found[-1].replace(",", "").replace("−", "-")) if found else None


class Number(Strict):
    """The answer's final number (`final_number`) is the value, within `tolerance`."""

    type: Literal["number"] = "number"
    value: float
    tolerance: NonNegativeFloat = 0.0

    def failure(self, answer: str) -> Optional[str]:
        number = final_number(answer)
        if number is None:
            return "no number in the answer"
        if abs(number - self.value) <= self.tolerance:
            return None
        within = f" within {self.tolerance:g}" if self.tolerance else ""
        return f"the final number is {number:g}, not {self.value:g}{within}"


CheckType = Union[Contains, NotContains, Equals, StartsWith, EndsWith, Regex, IsJson, JsonKeys, JsonSchema, MinWords,
                  MaxWords, MaxChars, Number]
Check = Annotated[CheckType, Field(discriminator="type")]
CHECK_TYPES: dict[str, type[CheckType]] = {
    model.model_fields["type"].default: model for model in CheckType.__args__  # type: ignore[attr-defined]
}
# How each type is written, for the message of a bad check.
EXAMPLES = {
    "contains": '{"type": "contains", "value": "LoRA", "case_sensitive": false}',
    "not_contains": '{"type": "not_contains", "value": "As an AI", "case_sensitive": false}',
    "equals": '{"type": "equals", "value": "Paris", "case_sensitive": false}',
    "starts_with": '{"type": "starts_with", "value": "Yes"}', "ends_with": '{"type": "ends_with", "value": "."}',
    "regex": '{"type": "regex", "value": "^\\\\d+ GB$"}', "is_json": '{"type": "is_json"}',
    "json_keys": '{"type": "json_keys", "value": ["name", "size"]}',
    "json_schema": '{"type": "json_schema", "value": {"type": "object", "required": ["name"]}}',
    "min_words": '{"type": "min_words", "value": 20}', "max_words": '{"type": "max_words", "value": 120}',
    "max_chars": '{"type": "max_chars", "value": 500}', "number": '{"type": "number", "value": 42, "tolerance": 0.5}',
}


def check_value(check: CheckType) -> str:
    """The check's value as JSON text (how the evaluations store it)."""
    return json.dumps(check.value, ensure_ascii=False)
