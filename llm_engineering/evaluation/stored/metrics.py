"""The judge-free figures of an `evaluation_summary`: each reference metric's mean per model, and the checks' pass
rates (types inside the summary; `stored.summary` holds them)."""

from __future__ import annotations

from typing import Optional

from pydantic import BaseModel, Field

from llm_engineering.evaluation.stored.figures import Rate


class MetricScores(BaseModel):
    """One metric's mean over the answers it covers (rows with a reference and an answer), with its 95% interval
    (with several answers per prompt: the mean of row means, its interval two-level, as a criterion's)."""

    name: str
    mean: Optional[float]
    ci: Optional[list[float]] = Field(None, description="95% bootstrap interval of the mean")
    rows: int = Field(0, description="answers with a value (rows with a reference and an answer)")
    answers: int = Field(0, description="answers of the model (or category): the metric covers `rows` of them")


class CheckScores(BaseModel):
    """How often the answers pass their checks: every check of an answer (`passed`, the gates' `checks`), each check
    on its own (`items`, the gates' `check_items`), and per check type."""

    rows: int = Field(description="answers with at least one check")
    passed: Rate = Field(description="answers that pass every one of their checks (with samples: the interval is "
                         "two-level)")
    items: Rate = Field(description="checks passed, over every check of every answer")
    by_type: dict[str, Rate] = Field(default_factory=dict, description="per check type: checks of that type passed")


class CheckVerdict(BaseModel):
    """One check of one answer, as the row browser shows it."""

    type: str
    value: str = Field(description="the check's value as JSON text")
    passed: bool
    reason: Optional[str] = Field(None, description="why it failed: the missing word, the parse error, the count")
