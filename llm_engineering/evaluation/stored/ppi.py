"""The prediction-powered estimate of a mean (a criterion's, a difference of two models', a win rate): human labels
on some rows, the judge's verdicts on all."""

from __future__ import annotations

from typing import Optional

from pydantic import BaseModel, Field


class Estimate(BaseModel):
    mean: Optional[float]
    ci: Optional[list[float]] = Field(None, description="95% interval")


class PPIEstimate(BaseModel):
    """A mean three ways: from every judged row with the judge's bias corrected by the labelled rows (PPI++), from the
    labels alone, from the judge alone. The interval holds when the labelled rows are a uniform random sample of the
    rows."""

    mean: Optional[float] = Field(description="PPI++: the judge's mean over every row, corrected by the labelled rows")
    ci: Optional[list[float]] = Field(None, description="its 95% interval")
    labelled: int = Field(description="rows with a human label and a judge score")
    unlabelled: int = Field(description="rows with a judge score and no label")
    labels_only: Estimate = Field(description="the labels' own mean and classical interval")
    judge_only: Estimate = Field(description="the judge's mean over every judged row, uncorrected")
    bias: Optional[float] = Field(None, description="the judge's mean minus the labels' on the labelled rows")
    power_tuning: Optional[float] = Field(
        None, description="PPI++'s lambda: 0 ignores the judge (the labels' mean), 1 is classic PPI")
    problem: Optional[str] = Field(None, description="why there is no estimate (too few labels, and how many more)")
    random_sample: Optional[bool] = Field(
        None, description="the labels say their rows were chosen at random (True: the interval holds), or not all were "
        "(False: it does not; 'Label next' and labels chosen by hand favour some rows); None: the labels do not say")
