"""Rubrics: what the judge scores, on which scale, and the prompt that asks for it.

A rubric is data (a shipped YAML file, a user's file, or an inline block of the run config):
criteria with a scale and a meaning per level, whether the judge sees the reference answer,
the system prompt and, optionally, the prompt template. The verdict model, its JSON schema
(which constrains generation) and the parser are derived from it (`verdict`); backends only turn
chat messages into raw replies.
"""

from __future__ import annotations

import string
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Optional

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from llm_engineering.evaluation.config_base import validation_problems
from llm_engineering.evaluation.judging.conversation import History, conversation_text

DEFAULT_RUBRIC = "task-accuracy"
PLACEHOLDERS = {
    "instruction": "the instruction",
    "answer": "the answer being judged",
    "reference": "the reference answer (reference-guided rubrics only)",
    "criteria": "the criteria and their scales, written out from the rubric",
    "format": "the JSON structure the reply must have",
}
# Column names the evaluations already use: a criterion may not be called so that its columns clash.
_RESERVED = {"judge", "jury", "reference", "expected", "model", "answer", "instruction", "prompt"}


class Criterion(BaseModel):
    """One scored criterion: its columns are `<name>_score`, `<name>_analysis`, `<name>_expected`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=r"^[a-z][a-z0-9_]{0,39}$", description="lower-case identifier, e.g. accuracy")
    description: str = Field(min_length=1, description="what the criterion measures, as the judge reads it")
    scale: dict[int, str] = Field(description="score -> what it means; consecutive integers min..max")

    @field_validator("name")
    @classmethod
    def _not_reserved(cls, name: str) -> str:
        if name in _RESERVED:
            raise ValueError(f"{name!r} is a reserved name (its columns would clash); pick another, e.g. {name}_quality")
        return name

    @field_validator("scale")
    @classmethod
    def _consecutive(cls, scale: dict[int, str]) -> dict[int, str]:
        levels = sorted(scale)
        if len(levels) < 2:
            raise ValueError(f"the scale needs min < max (at least two levels), got {levels}; write e.g. {{1: poor, 3: good}}"
                             " with a meaning for every level between")
        if levels[0] < 0 or levels[-1] > 100:
            raise ValueError(f"scale levels must lie in 0..100, got {levels[0]}..{levels[-1]}")
        missing = sorted(set(range(levels[0], levels[-1] + 1)) - set(levels))
        if missing:
            raise ValueError(f"the scale must give a meaning to every level from {levels[0]} to {levels[-1]}; missing {missing}")
        return {level: scale[level] for level in levels}

    @property
    def values(self) -> list[int]:
        return list(self.scale)


class ChecklistSpec(BaseModel):
    """A criterion judged by a checklist (`judging.checklist`): the row's items, each answered yes or no in one token;
    the rubric's other criteria are scored in one short reply, the scores alone, no analysis."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    criterion: str = Field(description="the criterion the items grade (its scale takes the checklist's score)")
    max_items: int = Field(6, ge=1, le=12, description="items per row at most (more are dropped, with the reason)")


class Rubric(BaseModel):
    """What the judge is asked and what its verdict must hold (see the module doc)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field("custom", min_length=1)
    description: str = ""
    system_prompt: str = "You are an impartial expert judge. Give your evaluation as JSON."
    criteria: list[Criterion] = Field(description="at least one criterion")
    reference_guided: bool = Field(False, description="show the judge the reference answer ({reference})")
    reference_required: bool = Field(True, description="with reference_guided: refuse rows without a reference "
                                     "(false: judge them without one, the reference's lines left out)")
    score_first: bool = Field(True, description="each score before its analysis, so a small judge's rambling does not sway it")
    expected_before_analysis: bool = Field(False, description="with score_first false: read the expected scores from a "
                                           "second, short reply that gives the scores before any analysis "
                                           "(`judging.before_analysis`), not at the verdict's score tokens")
    template: Optional[str] = Field(None, description=f"the user prompt; placeholders: {', '.join(PLACEHOLDERS)}")
    checklist: Optional[ChecklistSpec] = Field(None, description="one criterion judged by the row's checklist items")

    @field_validator("criteria")
    @classmethod
    def _unique(cls, criteria: list[Criterion]) -> list[Criterion]:
        if not criteria:
            raise ValueError("a rubric needs at least one criterion (name, description, scale)")
        names = [c.name for c in criteria]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ValueError(f"criteria are named twice: {twice}; give each criterion its own name")
        return criteria

    @model_validator(mode="after")
    def _template_placeholders(self) -> "Rubric":
        if self.template is None:
            return self
        try:
            used = {field for _, field, _, _ in string.Formatter().parse(self.template) if field is not None}
        except ValueError as error:
            raise ValueError(f"template: {error}; write a literal brace as {{{{ or }}}}") from None
        unknown = sorted(used - set(PLACEHOLDERS))
        if unknown:
            raise ValueError(f"template uses unknown placeholder(s) {unknown}; known: {sorted(PLACEHOLDERS)} "
                             f"(write a literal brace as {{{{ or }}}})")
        missing = sorted({"instruction", "answer"} - used)
        if missing:
            raise ValueError(f"template never shows {missing}; add {', '.join('{' + m + '}' for m in missing)}")
        if self.reference_guided != ("reference" in used):
            raise ValueError("reference_guided is true but the template has no {reference}" if self.reference_guided
                             else "the template shows {reference} but reference_guided is false; set it to true")
        return self

    @model_validator(mode="after")
    def _before_analysis(self) -> "Rubric":
        if self.expected_before_analysis and self.score_first:
            raise ValueError("expected_before_analysis is for a rubric that writes each analysis before its score; this "
                             "one has score_first true, so its expected scores are read before the analysis already: "
                             "drop expected_before_analysis or set score_first to false")
        return self

    @model_validator(mode="after")
    def _checklist_criterion(self) -> "Rubric":
        if self.checklist is None:
            return self
        if self.checklist.criterion not in self.names:
            raise ValueError(f"checklist.criterion {self.checklist.criterion!r} is not a criterion of the rubric "
                             f"({self.names}): name the criterion the items grade")
        if self.expected_before_analysis:
            raise ValueError("a checklist rubric writes no analysis: drop expected_before_analysis")
        return self

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.criteria]

    def criterion(self, name: str) -> Criterion:
        return next(c for c in self.criteria if c.name == name)

    @property
    def scales(self) -> dict[str, dict[int, str]]:
        """Each criterion's levels and what each means."""
        return {c.name: dict(c.scale) for c in self.criteria}


class RubricError(ValueError):
    """A rubric that cannot be used; the message names the problem and the fix."""


def shipped_rubrics() -> list[str]:
    folder = resources.files("llm_engineering.evaluation") / "data" / "rubrics"
    return sorted(entry.name.removesuffix(".yaml") for entry in folder.iterdir() if entry.name.endswith(".yaml"))


def _validate(data: Any, where: str) -> Rubric:
    if not isinstance(data, dict):
        raise RubricError(f"{where}: a rubric is a mapping with criteria (see docs/rubrics.md); got {type(data).__name__}")
    try:
        return Rubric.model_validate(data)
    except ValidationError as error:
        raise RubricError(f"{where}: {validation_problems(error, 'rubric')}") from None


@lru_cache(maxsize=None)
def _shipped(name: str) -> Rubric:
    """A shipped rubric, read once per process (backends ask for theirs at every call)."""
    text = (resources.files("llm_engineering.evaluation") / "data" / "rubrics" / f"{name}.yaml").read_text()
    return _validate(yaml.safe_load(text), f"shipped rubric {name!r}")


def load_rubric(spec: "str | dict[str, Any] | Rubric") -> Rubric:
    """A shipped rubric by name, a YAML file by path, or an inline mapping -> a validated `Rubric`."""
    if isinstance(spec, Rubric):
        return spec
    if isinstance(spec, dict):
        return _validate(spec, "inline rubric")
    if spec in shipped_rubrics():
        return _shipped(spec)
    path = Path(spec).expanduser()
    if not path.is_file():
        raise RubricError(f"rubric {spec!r} is neither a shipped rubric {shipped_rubrics()} nor an existing YAML file; "
                          f"name one of those, or give the path of your rubric file")
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as error:
        raise RubricError(f"rubric file {path} is not valid YAML: {error}") from None
    return _validate(data, f"rubric file {path}")


def _criteria_text(rubric: Rubric) -> str:
    blocks = []
    for i, c in enumerate(rubric.criteria, 1):
        levels = "\n".join(f"{score}: {meaning}" for score, meaning in c.scale.items())
        blocks.append(f"{i}. {c.name.replace('_', ' ').capitalize()}: {c.description}\n"
                      f"{c.name.replace('_', ' ').capitalize()} scale:\n{levels}")
    return "\n\n".join(blocks)


def _format_text(rubric: Rubric) -> str:
    def part(c: Criterion) -> str:
        fields = [f'"score": {c.values[0]}', '"analysis": "..."']
        return f'"{c.name}": {{{", ".join(fields if rubric.score_first else fields[::-1])}}}'

    return "Give your evaluation as JSON with this structure:\n{" + ", ".join(part(c) for c in rubric.criteria) + "}"


REFERENCE_LINE = "Reference answer (what a right answer contains; other wording can be right too): {reference}\n\n"


def default_template(rubric: Rubric, with_reference: bool = True) -> str:
    """The prompt a rubric without its own template gets (`with_reference`: the row has a reference to show)."""
    reference = REFERENCE_LINE if rubric.reference_guided and with_reference else ""
    return (f"You are an expert judge. Evaluate an answer to an instruction on {len(rubric.criteria)} "
            f"criteri{'on' if len(rubric.criteria) == 1 else 'a'}.\n\n{{criteria}}\n\n"
            f"Instruction: {{instruction}}\n\n{reference}Answer: {{answer}}\n\n{{format}}")


def judge_messages(rubric: Rubric, instruction: str, answer: str, reference: Optional[str] = None,
                   history: History = None) -> list[dict[str, str]]:
    """The chat messages that ask the judge for one answer's verdict; a turn of a conversation (`history`: the
    conversation before its user message) shows the conversation so far in place of the instruction."""
    if rubric.reference_guided and reference is None and rubric.reference_required:
        raise RubricError(f"rubric {rubric.name!r} is reference-guided but the rows have no reference answer; "
                          f"use a rubric without references (e.g. helpfulness) or a dataset with references")
    prompt = (rubric.template or default_template(rubric, reference is not None)).format(
        instruction=conversation_text(history, instruction) if history else instruction, answer=answer,
        reference=reference or "",
        criteria=_criteria_text(rubric), format=_format_text(rubric),
    )
    return [{"role": "system", "content": rubric.system_prompt}, {"role": "user", "content": prompt}]


