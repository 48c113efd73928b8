"""The `label_agreement` artifact: the judge against a person's labels, pointwise or pairwise, beside the baselines."""

from __future__ import annotations

from typing import Any, Literal, Optional, Union

from pydantic import BaseModel, Field

from llm_engineering.evaluation.stored.figures import Rate

Kind = Literal["pointwise", "pairwise"]  # what a labels file holds


class PointwiseAgreement(BaseModel):
    """A judge's scores against human scores on one criterion; intervals are 95% bootstraps over rows."""

    rows: int = Field(description="labelled rows, with or without a judge verdict")
    failed: int = Field(description="rows without a verdict: disagreements in exact and within_one, not in spearman, kappa")
    exact: Optional[float] = Field(description="share of rows where the judge gave the human's score")
    exact_ci: Optional[list[float]] = None
    within_one: Optional[float] = Field(description="share of rows where the judge was at most one point off")
    within_one_ci: Optional[list[float]] = None
    spearman: Optional[float] = Field(description="rank correlation; None when a side is constant")
    kappa: Optional[float] = Field(description="quadratic-weighted Cohen's kappa; None when undefined")
    kappa_ci: Optional[list[float]] = None


class PairwiseAgreement(BaseModel):
    """A rater's preferences against human ones; a row without a verdict counts as a disagreement."""

    rows: int
    failed: int = Field(description="rows without a judge verdict")
    agreement: Rate = Field(description="rows where the judge preferred what the human did (A, B or tie)")
    agreement_decisive: Optional[Rate] = Field(
        None, description="rows the human preferred A or B where the judge preferred the same (its tie a miss); "
        "None in reports stored before it was measured")


class LabelledVerdict(BaseModel):
    """One label beside the judge's verdict on the same answer (or pair)."""

    id: str
    criterion: Optional[str] = Field(None, description="pointwise labels only")
    human: Union[int, str] = Field(description="the human's score, or preference A, B or tie")
    judge: Union[int, str, None] = Field(description="the judge's score or combined preference; None: no verdict")
    expected: Optional[float] = Field(None, description="the judge's expected score (pointwise, with logprobs)")
    error: Optional[str] = None


class CriterionAgreement(BaseModel):
    """Pointwise labels of one criterion: the judge's agreement with them, and the baselines'."""

    criterion: str
    scale: list[int]
    rows: int
    judge: PointwiseAgreement = Field(description="the judge's integer scores")
    judge_expected: Optional[PointwiseAgreement] = Field(
        None, description="the judge's expected scores rounded to the nearest level (None: see expected_problem)")
    expected_problem: Optional[str] = None
    majority: PointwiseAgreement = Field(description="the most common human score, given to every answer")
    length: PointwiseAgreement = Field(description="the length-only rule: longer answers score higher")
    valid: bool = Field(description="the lower bound of the judge's exact agreement beats the length-only rule's")
    verdict: str


class PreferenceAgreement(BaseModel):
    """Pairwise labels: the judge's preferences against the human ones, and the baselines'."""

    rows: int
    judge: PairwiseAgreement = Field(description="each pair judged in both orders; orders that disagree make a tie")
    order_disagreement: Rate = Field(description="pairs judged in both orders whose two verdicts disagreed")
    majority: PairwiseAgreement = Field(description="the most common human preference, for every pair")
    length: PairwiseAgreement = Field(description="the longer answer preferred (a tie when both are as long)")
    valid: bool = Field(description="the lower bound of the judge's agreement beats both baselines' agreement")
    verdict: str


class LabelAgreement(BaseModel):
    """The `label_agreement` artifact: the first judge against the human labels of `--labels`."""

    kind: Kind
    judge_model: str
    rubric: str
    rows: int = Field(description="labels in the file")
    criteria: list[CriterionAgreement] = Field(default_factory=list, description="pointwise: one per criterion")
    pairwise: Optional[PreferenceAgreement] = None
    judge_calls: Optional[int] = Field(None, description="verdicts asked for, cached ones included")
    judge_tokens: Optional[int] = Field(None, description="prompt + completion tokens of the calls not served by the cache")
    details: list[LabelledVerdict] = Field(default_factory=list)

    @property
    def valid(self) -> bool:
        """Valid on every criterion (pointwise) or on the preferences (pairwise)."""
        parts = [c.valid for c in self.criteria] + ([self.pairwise.valid] if self.pairwise else [])
        return bool(parts) and all(parts)

    def metadata(self) -> dict[str, Any]:
        """The figures as ZenML metadata (logged by the labels step and by the summary)."""
        def figures(a: PointwiseAgreement) -> dict[str, Any]:
            return {"exact": a.exact, "exact_ci": a.exact_ci, "within_one": a.within_one, "spearman": a.spearman,
                    "kappa": a.kappa, "kappa_ci": a.kappa_ci, "failed": a.failed}

        data: dict[str, Any] = {"judge": self.judge_model, "rubric": self.rubric, "kind": self.kind, "rows": self.rows,
                                "valid": self.valid, "judge_calls": self.judge_calls, "judge_tokens": self.judge_tokens}
        if self.criteria:
            data["criteria"] = {}
        for c in self.criteria:
            data["criteria"][c.criterion] = {"valid": c.valid, "verdict": c.verdict, "rows": c.rows, "judge": figures(c.judge),
                                 "judge_expected": figures(c.judge_expected) if c.judge_expected else c.expected_problem,
                                 "majority": figures(c.majority), "length": figures(c.length)}
        if self.pairwise:
            p = self.pairwise
            data["pairwise"] = {"valid": p.valid, "verdict": p.verdict, "agreement": p.judge.agreement.rate,
                                "agreement_ci": p.judge.agreement.ci, "failed": p.judge.failed,
                                "order_disagreement": p.order_disagreement.rate,
                                "majority": p.majority.agreement.rate, "length": p.length.agreement.rate,
                                "agreement_decisive": {name: a.agreement_decisive.rate if a.agreement_decisive else None
                                                       for name, a in (("judge", p.judge), ("majority", p.majority),
                                                                       ("length", p.length))}}
        return data

