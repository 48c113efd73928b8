"""The `trust_checks` artifact: the judge's report card (the judge check and its tiers) and the similarity check."""

from __future__ import annotations

from typing import Any, Literal, Optional

from pydantic import BaseModel, Field, computed_field, model_validator

from llm_engineering.evaluation.stored.figures import Rate


class JudgeCheckPair(BaseModel):
    """One checked row: the score (first criterion) the judge gave its right answer and a worse answer."""

    id: str
    mismatched_id: str
    reference_accuracy: Optional[int] = Field(description="the right answer's first-criterion score")
    mismatched_accuracy: Optional[int] = Field(description="the worse answer's first-criterion score")
    reference_expected: Optional[float] = None
    mismatched_expected: Optional[float] = None
    error: Optional[str] = None
    right_is_copy: bool = Field(False, description="the right answer is the reference itself where the judge sees the "
                                "reference (its rewording failed, lost a fact or most of its words)")
    right_answer: Optional[str] = Field(None, description="the right answer judged, where it is not the reference "
                                        "(a rewording)")
    worse_answer: Optional[str] = Field(None, description="the worse answer judged")
    rules: dict[str, int] = Field(default_factory=dict, description="each judge-free rule's order of the two "
                                  "answers: 1 the right one above, 0 a tie, -1 the worse one above")

    @property
    def expected_order(self) -> Optional[int]:
        """+1 the right answer higher, -1 lower, 0 tie: by integer score, ties broken by expected score."""
        if self.reference_accuracy is None or self.mismatched_accuracy is None:
            return None
        if self.reference_accuracy != self.mismatched_accuracy:
            return 1 if self.reference_accuracy > self.mismatched_accuracy else -1
        if self.reference_expected is None or self.mismatched_expected is None:
            return None
        difference = self.reference_expected - self.mismatched_expected
        return (difference > 0) - (difference < 0)


# A tier that a judge-free rule passes above this says little of the judge (the judge must beat the rule there).
RULE_PASS = 0.65
# The level of the paired test (`trust.paired`) at which the judge is told apart from a rule.
PAIRED_ALPHA = 0.05


class PairedTest(BaseModel):
    """The judge against one rule on the same pairs (`trust.paired`): the discordant pairs and the exact McNemar
    p-value."""

    judge_only: int = Field(description="pairs the judge passes and the rule does not")
    rule_only: int = Field(description="pairs the rule passes and the judge does not")
    p_value: float = Field(description="exact two-sided McNemar p-value (1.0 without discordant pairs)")

    @property
    def standing(self) -> Literal["above", "not_told_apart", "below"]:
        """The judge above or below the rule at `PAIRED_ALPHA`, or not told apart."""
        if self.p_value >= PAIRED_ALPHA or self.judge_only == self.rule_only:
            return "not_told_apart"
        return "above" if self.judge_only > self.rule_only else "below"

    def describe(self) -> str:
        """`12 pairs against 1, p 0.003`."""
        return f"{self.judge_only} pairs against {self.rule_only}, p {self.p_value:.2g}"


class JudgeCheck(BaseModel):
    """Figures of the judge check. Rates are over every checked pair; a pair with a failed
    verdict counts as failed, never as a tie or dropped."""

    judge_model: str
    criterion: str = "accuracy"
    tier: str = Field("mismatch", description="the report card tier these figures are of")
    pairs: int
    reference_higher: Rate = Field(description="discrimination: the right answer scored above the worse one")
    ties: Rate
    reversals: Rate = Field(description="the worse answer scored above the right one")
    failed: Rate
    reference_accuracy_mean: Optional[float] = Field(description="the right answers' mean first-criterion score")
    mismatched_accuracy_mean: Optional[float] = Field(description="the worse answers' mean first-criterion score")
    reference_expected_mean: Optional[float] = Field(None, description="the right answers' mean first-criterion expected "
                                                     "score (None where a checked verdict has none)")
    mismatched_expected_mean: Optional[float] = Field(None, description="the worse answers' mean first-criterion "
                                                      "expected score")
    reference_accuracy_ci: Optional[list[float]] = None
    mismatched_accuracy_ci: Optional[list[float]] = None
    threshold: float
    no_signal: bool = Field(description="integer discrimination below the threshold")
    reference_higher_tie_broken: Optional[Rate] = Field(
        None, description="discrimination with integer ties broken by expected scores (None without logprobs)")
    reference_higher_by_expected: Optional[Rate] = Field(
        None, description="discrimination by expected scores alone: the right answer's expected score strictly above "
        "the worse one's, whatever the integers say (None without logprobs)")
    expected_problem: Optional[str] = Field(None, description="why there is no tie-broken or expected figure")
    lowest_level: Optional[Rate] = Field(None, description="worse answers scored at the scale's lowest level")
    scale: Optional[list[int]] = Field(None, description="the first criterion's lowest and highest level")
    baselines: dict[str, Rate] = Field(default_factory=dict, description="per judge-free rule (`trust.rules`): the "
                                       "pairs it orders the right answer above the worse one (a tie is no pass)")
    margin_over_rules: Optional[float] = Field(None, description="integer discrimination minus the best rule's rate")
    paired: dict[str, PairedTest] = Field(default_factory=dict, description="per judge-free rule: the judge against it "
                                          "on the same pairs (exact McNemar); empty in checks stored before")
    candidates: Optional[int] = Field(None, description="a tier no rule may pass (`FILTERED_TIERS`): the sampled rows "
                                      "a worse answer could be built for (None: an unfiltered tier)")
    dropped: dict[str, int] = Field(default_factory=dict, description="a filtered tier: rows whose every candidate a "
                                    "rule ordered below the right answer, per rule that did (a row may count for several)")
    right_answers: Literal["reference", "reworded", "answers"] = Field(
        "reference", description="the right answers: the references, or (for a judge that sees the reference, which a "
        "copy would prove nothing about) the references reworded by the judge; `answers` where the rows have no "
        "references: each row's own answer (of the first model) against another row's answer")
    right_copies: int = Field(0, description="pairs whose right answer is the reference itself, its rewording having "
                              "failed, lost a fact or most of its words")
    decided_by: Literal["integer", "expected"] = Field(
        "integer", description="the figure the outcome and the flag read: integer scores (the table's lead), or, under "
        "a checklist rubric, whose table leads with the checklist's score, the expected scores alone")
    verdict: str = Field(description="the finding in plain words")
    details: list[JudgeCheckPair] = Field(default_factory=list)
    tiers: list["JudgeCheck"] = Field(default_factory=list, description="the report card's harder tiers")
    judge_calls: Optional[int] = Field(None, description="judge calls the check made (not served by the cache): each "
                                       "answer's verdict and, where the rubric reads expected scores before the analysis, "
                                       "its probe; rewordings of right answers not counted")
    judge_tokens: Optional[int] = Field(None, description="prompt + completion tokens of the calls not served by the cache")
    judge_seconds_per_verdict: Optional[float] = Field(None, description="the judge's wall time over the calls not "
                                                       "served by the cache")

    @model_validator(mode="before")
    @classmethod
    def _tie_broken_of_an_older_check(cls, data: Any) -> Any:
        # Checks stored before the names said which figure: `reference_higher_expected` held the tie-broken one.
        if isinstance(data, dict) and "reference_higher_expected" in data:
            data = {**data, "reference_higher_tie_broken": data["reference_higher_expected"]}
            del data["reference_higher_expected"]
        return data

    @computed_field  # type: ignore[prop-decorator]  # stored in the JSON report beside the figures it is read from
    @property
    def outcome(self) -> Literal["passes", "fails", "matched_by_rule", "below_rule", "unmeasured", "inconclusive"]:
        """The judge on this tier: passes (discrimination at or above the threshold and above every judge-free rule by
        the paired test), fails (under the threshold: blind to this kind of wrong answer), matched_by_rule (at or above
        the threshold, but not told apart from a rule by the paired test), below_rule (at or above the threshold, but a
        rule is above it by the paired test), unmeasured (no pair), inconclusive (under the threshold on pairs of the
        rows' own answers, which the judge scored in the scale's lower half: the answers may be as wrong as the other
        rows', rather than the judge blind). A check stored before the paired test compares the rates themselves."""
        rate = self.deciding.rate
        if rate is None:
            return "unmeasured"
        if rate < self.threshold:
            return "inconclusive" if self.own_answers_judged_wrong else "fails"
        if self.paired:
            standings = {test.standing for test in self.paired.values()}
            return "below_rule" if "below" in standings else "matched_by_rule" if "not_told_apart" in standings \
                else "passes"
        best = self.best_rule
        return "matched_by_rule" if best is not None and (self.baselines[best].rate or 0.0) >= rate else "passes"

    def rules_by_standing(self, standing: str) -> list[str]:
        """The rules the judge stands `standing` against (above, not_told_apart, below), by the paired test."""
        return [name for name, test in self.paired.items() if test.standing == standing]

    @property
    def own_answers_judged_wrong(self) -> bool:
        """Pairs of the rows' own answers (no references) whose own answers the judge scored, on average, in the lower
        half of the scale: a tie or a reversal then says nothing of the judge."""
        right = self.reference_accuracy_mean
        scale = self.scale or []
        return self.right_answers == "answers" and right is not None and bool(scale) and right < (scale[0] + scale[-1]) / 2

    @property
    def deciding(self) -> Rate:
        """The figure the outcome reads (`decided_by`)."""
        if self.decided_by == "expected" and self.reference_higher_by_expected is not None:
            return self.reference_higher_by_expected
        return self.reference_higher

    @computed_field  # type: ignore[prop-decorator]
    @property
    def rule_passes(self) -> bool:
        """A judge-free rule passes this tier above `RULE_PASS`: the tier tells what a word count tells as well."""
        best = self.best_rule
        return best is not None and (self.baselines[best].rate or 0.0) > RULE_PASS

    @property
    def best_rule(self) -> Optional[str]:
        """The judge-free rule that passes this tier most often."""
        scored = {name: r.rate for name, r in self.baselines.items() if r.rate is not None}
        return max(scored, key=lambda name: scored[name]) if scored else None

    def metadata(self) -> dict[str, Any]:
        """The figures as ZenML metadata (logged by the check step and by the summary)."""
        def figures(t: JudgeCheck) -> dict[str, Any]:
            return {"discrimination_rate": t.reference_higher.rate, "discrimination_ci": t.reference_higher.ci,
                    "discrimination_rate_tie_broken": t.reference_higher_tie_broken.rate if t.reference_higher_tie_broken
                    else None, "discrimination_rate_by_expected": t.reference_higher_by_expected.rate
                    if t.reference_higher_by_expected else None, "outcome": t.outcome, "rule_passes": t.rule_passes,
                    "pairs": t.pairs, "no_signal": t.no_signal,
                    "lowest_level_rate": t.lowest_level.rate if t.lowest_level else None,
                    "baselines": {name: r.rate for name, r in t.baselines.items()}, "margin_over_rules": t.margin_over_rules}

        return {
            "judge": self.judge_model, "verdict": self.verdict, **figures(self),
            "tie_rate": self.ties.rate, "reversal_rate": self.reversals.rate, "failed_rate": self.failed.rate,
            "threshold": self.threshold, "criterion": self.criterion, "right_answers": self.right_answers,
            "tiers": {t.tier: figures(t) for t in self.tiers},
            "judge_calls": self.judge_calls, "judge_tokens": self.judge_tokens,
            "judge_seconds_per_verdict": self.judge_seconds_per_verdict,
        }


class SimilarityCheck(BaseModel):
    """Does the metric know which reference belongs to which instruction? For every row, the
    instruction's similarity to its own reference against a mismatched row's (fixed derangement)."""

    embedding_model: str
    rows: int
    reference_higher: Rate = Field(description="rows whose own reference is the more similar one")
    reference_mean: Optional[float]
    mismatched_mean: Optional[float]


class TrustChecks(BaseModel):
    """The `trust_checks` artifact: how far the run's scores can be trusted."""

    judge: Optional[JudgeCheck] = None
    similarity: Optional[SimilarityCheck] = None
    notes: list[str] = Field(default_factory=list, description="checks that were skipped, and why")

