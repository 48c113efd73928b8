"""Figures the stored types share: a rate with its interval, a score's correlation with length, a jury's agreement,
the judge's failures by cause."""

from __future__ import annotations

from typing import Optional

from pydantic import BaseModel, Field


class Rate(BaseModel):
    """`count` of `total`, as a rate with its 95% Wilson interval (None when `total` is 0)."""

    count: int
    total: int
    rate: Optional[float]
    ci: Optional[list[float]] = Field(None, description="95% Wilson score interval")

    def describe(self) -> str:
        """`12/20 (60%, 95% CI 39-78%)`."""
        if self.rate is None:
            return f"{self.count}/{self.total} (n/a)"
        interval = f", 95% CI {self.ci[0]:.0%}-{self.ci[1]:.0%}" if self.ci else ""
        return f"{self.count}/{self.total} ({self.rate:.0%}{interval})"


class LengthCorrelation(BaseModel):
    """Spearman correlation of scores with answer lengths (None where a side is constant)."""

    rows: int
    spearman: Optional[float]
    p_value: Optional[float]


class JuryAgreement(BaseModel):
    """How far a jury's judges agree on one criterion: Krippendorff's alpha (ordinal) over every
    judged row of every model, with a 95% bootstrap interval over rows."""

    criterion: str
    alpha: Optional[float]
    ci: Optional[list[float]] = None
    rows: int = Field(description="rows scored by at least two judges")


class FailureCause(BaseModel):
    """Verdicts that failed for one cause (`judging.failures`: `HTTP 400`, `timeout`, `invalid JSON`...), with the
    first one's error as the example (an HTTP error's holds the server's message)."""

    cause: str
    count: int
    example: str
