"""The `evaluation_summary` artifact: judge scores per model, comparisons, the run's trust checks, the rows a person reads."""

from __future__ import annotations

from typing import Any, Optional

from pydantic import BaseModel, Field, model_validator

from llm_engineering.evaluation.stored.checklist import ChecklistFigures
from llm_engineering.evaluation.stored.figures import FailureCause, JuryAgreement, LengthCorrelation
from llm_engineering.evaluation.stored.labels import LabelAgreement
from llm_engineering.evaluation.stored.metrics import CheckScores, CheckVerdict, MetricScores
from llm_engineering.evaluation.stored.pairwise import PairwiseComparison
from llm_engineering.evaluation.stored.ppi import PPIEstimate
from llm_engineering.evaluation.stored.trust import JudgeCheck, SimilarityCheck


class AnswerView(BaseModel):
    """One model's answer to one item, with the judge's verdict (None: not scored)."""

    model_id: str
    sample: int = 0
    answer: str
    scores: dict[str, Optional[int]]
    expected: dict[str, Optional[float]] = Field(default_factory=dict)
    analyses: dict[str, str] = Field(default_factory=dict)
    similarity: Optional[float] = None
    error: Optional[str] = Field(None, description="why the row has no valid verdict")
    finish_reason: Optional[str] = None
    history: list[dict[str, str]] = Field(default_factory=list, description="a turn of a conversation: the "
                                          "conversation before its user message, with this model's own earlier answers")
    confidence: Optional[float] = Field(None, description="the judge's probability of the integer score it gave, the "
                                        "lowest over the criteria, from the distribution its expected score comes from "
                                        "(the probe before the analysis under the default rubric: `judge_confidence`); "
                                        "None: a judge without logprobs, or a jury")
    escalated: bool = Field(False, description="judged again by the second judge (judge.escalate_to)")
    metrics: dict[str, Optional[float]] = Field(default_factory=dict, description="each judge-free metric's value")
    checks: list[CheckVerdict] = Field(default_factory=list, description="each check of the answer and its verdict")

    @property
    def failed(self) -> bool:
        return self.error is not None or any(score is None for score in self.scores.values())


class ItemView(BaseModel):
    id: str
    instruction: str
    reference: str
    answers: list[AnswerView]
    turn: int = Field(1, description="which turn of its conversation the item is (1: a one-turn row, or a first turn)")
    category: Optional[str] = Field(None, description="the row's category (the dataset's category column)")

    def worst(self) -> float:
        """The lowest total score over the item's answers; a failed answer is the worst of all (-1)."""
        return min((-1.0 if a.failed else float(sum(s for s in a.scores.values() if s is not None)) for a in self.answers),
                   default=-1.0)


class JudgeUsage(BaseModel):
    """Judge requests of this scoring: answers judged afresh and the calls that took, cache hits, tokens and cost."""

    calls: int = Field(description="judge calls made (not served by the cache): each answer's verdict, and its probe "
                       "where the rubric reads expected scores before the analysis")
    answers: Optional[int] = Field(None, description="answers judged afresh (None: a summary stored before this was "
                                   "counted, whose `calls` counted answers)")
    cached: int
    prompt_tokens: int
    completion_tokens: int
    estimated_cost_usd: Optional[float] = None
    seconds: Optional[float] = Field(None, description="the judge's wall time for the new calls (None: scored before "
                                     "it was recorded)")
    seconds_per_verdict: Optional[float] = Field(None, description="seconds over answers judged afresh: what one more "
                                                 "answer costs (its verdict and its probe, where there is one)")


class JudgeScores(BaseModel):
    """One jury member's figures on one criterion."""

    judge: str
    scored: int
    mean: Optional[float]
    expected_mean: Optional[float] = None


class Reduced(BaseModel):
    """A reducer's figure: the mean over rows of each row's reduced scores, with its 95% interval over rows."""

    value: Optional[float]
    ci: Optional[list[float]] = None


class CriterionScores(BaseModel):
    """One criterion's figures for one model: the integer mean, the probability-weighted (expected) mean
    where the judge gave logprobs, and how the score follows answer length."""

    name: str
    mean: Optional[float]
    ci: Optional[list[float]] = Field(None, description="95% bootstrap interval of the mean")
    counts: dict[str, int] = Field(description="score -> rows, over scored rows")
    expected_mean: Optional[float] = None
    expected_ci: Optional[list[float]] = None
    expected_rows: int = Field(0, description="scored rows with an expected score")
    expected_problem: Optional[str] = Field(None, description="why scored rows lack an expected score")
    judges: list[JudgeScores] = Field(default_factory=list, description="with a jury: each judge's figures")
    length: Optional[LengthCorrelation] = Field(
        None, description="Spearman correlation of the integer score (the table's) with answer length")
    length_expected: Optional[LengthCorrelation] = Field(
        None, description="the same of the expected score, where every scored row has one")
    detectable: Optional[float] = Field(
        None, description="the smallest change of the integer mean a paired comparison of these rows detects (80% "
                          "power, 5%), runs uncorrelated per row: an upper bound")
    rows_for_tenth: Optional[int] = Field(None, description="paired rows a change of 0.1 would need, likewise")
    # With several answers per prompt (sampling.n): `mean` is the mean over rows of each row's mean and `ci` the
    # two-level bootstrap's (rows, then samples within a row); the figures below say how far samples differ.
    rows_ci: Optional[list[float]] = Field(None, description="with samples: the interval over rows of row means, "
                                           "without drawing samples within a row (for comparison with `ci`)")
    sample_share: Optional[float] = Field(None, description="with samples: the share of the score's variance between "
                                          "a row's samples (1 - intraclass correlation)")
    row_spread: Optional[float] = Field(None, description="with samples: the mean standard deviation of a row's scores")
    pass_score: Optional[float] = Field(None, description="with samples: the score at or above which an answer passes")
    reducers: dict[str, Reduced] = Field(default_factory=dict, description="with samples: mean, max, majority, "
                                         "pass@1 and pass@k of a row's scores, averaged over rows")
    ppi: Optional[PPIEstimate] = Field(None, description="with human labels (--labels): the mean corrected by them "
                                       "(PPI++), beside the labels' own and the judge's")
    unscored: int = Field(0, description="rows with a verdict but no score on this criterion (a checklist rubric's other "
                          "criteria, whose reply failed: the row keeps its checklist score)")
    unscored_problem: Optional[str] = Field(None, description="the most frequent reason of those rows")


class TurnScores(BaseModel):
    """One turn's figures for one model, over the answers to that turn of every conversation."""

    turn: int
    rows: int
    scored: int
    criteria: list[CriterionScores]


class CategoryScores(BaseModel):
    """One category's figures for one model: its judge criteria, metrics and checks, over its answers."""

    category: str = Field(description="the rows' category; rows without one: '(none)'")
    rows: int
    scored: int
    criteria: list[CriterionScores]
    metrics: list[MetricScores] = Field(default_factory=list)
    checks: Optional[CheckScores] = None


class ModelScores(BaseModel):
    """One model's scores. Means are over scored rows; failed rows are counted, never dropped."""

    model_id: str
    rows: int = Field(description="answers: the test split's rows times `samples`")
    samples: int = Field(1, description="answers per prompt (sampling.n)")
    scored: int
    failed: int
    failure_rate: float
    failures: list[FailureCause] = Field(default_factory=list, description="the failed rows by cause (HTTP status, "
                                         "timeout, invalid JSON...), one example each (empty: stored before this)")
    criteria: list[CriterionScores]
    mean_completion_tokens: float
    truncated: int = Field(description="answers cut by max_tokens (finish reason 'length')")
    tokens_per_second: Optional[float] = None
    generation_seconds: Optional[float] = None
    judge_usage: JudgeUsage
    similarity_mean: Optional[float] = Field(None, description="mean cosine similarity of answer and reference")
    similarity_ci: Optional[list[float]] = None
    similarity_rows: int = 0
    reference_rows: Optional[int] = Field(None, description="answers whose row has a reference answer (the others were "
                                          "judged on instruction and answer alone; None: stored before this was counted)")
    escalated: int = Field(0, description="judge.escalate_to: rows whose verdict is the second judge's")
    escalation_failed: int = Field(0, description="rows under the threshold the second judge could not score: they "
                                   "keep the first judge's verdict")
    escalation_error: Optional[str] = Field(None, description="the first of those rows' errors")
    turns: list[TurnScores] = Field(default_factory=list, description="conversations: each turn's figures (the model's "
                                    "own figures above are over every turn); empty for one-turn rows")
    checklist: Optional[ChecklistFigures] = Field(None, description="under a checklist rubric: unread items and the rows "
                                                  "of each item source")
    metrics: list[MetricScores] = Field(default_factory=list, description="each judge-free metric measured (similarity "
                                        "too), in the order the run names them")
    checks: Optional[CheckScores] = Field(None, description="the checks' pass rates; None where no answer has a check")
    categories: list[CategoryScores] = Field(default_factory=list, description="per category of the rows (the "
                                             "dataset's category column); empty without one")

    @model_validator(mode="before")
    @classmethod
    def _read_handbook_fields(cls, data: Any) -> Any:
        # Summaries stored before rubrics had accuracy_* and style_* fields: read them as criteria.
        if isinstance(data, dict) and "criteria" not in data and "accuracy_mean" in data:
            data = dict(data)
            data["criteria"] = [
                {"name": name, "mean": data.pop(f"{name}_mean", None), "ci": data.pop(f"{name}_ci", None),
                 "counts": data.pop(f"{name}_counts", {})} for name in ("accuracy", "style")
            ]
        return data

    def criterion(self, name: str) -> CriterionScores:
        return next(c for c in self.criteria if c.name == name)

    def metric(self, name: str) -> Optional[MetricScores]:
        return next((m for m in self.metrics if m.name == name), None)


class ModelComparison(BaseModel):
    """Mean score of `model_a` minus `model_b`, paired on the rows both have scored."""

    model_a: str
    model_b: str
    criterion: str
    paired_rows: int
    difference: Optional[float]
    ci: Optional[list[float]] = Field(None, description="95% bootstrap interval of the difference")
    ppi: Optional[PPIEstimate] = Field(None, description="with pointwise labels of both models' answers to some rows "
                                       "(--labels): the difference corrected by them (PPI++)")


RUBRIC_OF_OLD_RUNS = "handbook"  # the only rubric of runs stored before the summary named its rubric


class EvaluationSummary(BaseModel):
    """The `evaluation_summary` artifact: per-model scores, comparisons and the ranking."""

    judge_model: str = Field(description="the judges' ids as one line, as the rows' judge_model column writes them")
    judges: list[str] = Field(default_factory=list, description="the id of each judge that scored, in order (one, or "
                              "a jury's members); a summary stored before this field: read from jury or judge_model")
    run: str = Field("", description="the pipeline run that made it (a run whose summarize step was cached reports "
                                      "under its own name: `run_report`); the report's labels name it")
    headline: str = Field("", description="the first line: whether the judge's scores mean anything")
    rubric: str = Field(RUBRIC_OF_OLD_RUNS, description="the rubric's name (a summary stored without one: handbook)")
    criteria: list[str] = Field(default_factory=lambda: ["accuracy", "style"])
    checklist: Optional[str] = Field(None, description="the criterion a checklist grades (its table figure is the "
                                     "checklist's score, its expected mean; the integer mean is of its rounded levels)")
    scales: dict[str, dict[int, str]] = Field(default_factory=dict, description="each criterion's levels and meanings")
    models: list[ModelScores]
    comparisons: list[ModelComparison] = Field(default_factory=list)
    metrics: list[str] = Field(default_factory=list, description="the judge-free metrics measured, in order")
    metric_comparisons: list[ModelComparison] = Field(default_factory=list, description="each model against the first "
                                                      "on each metric and on the checks (`checks`: passing every one)")
    categories: list[str] = Field(default_factory=list, description="the rows' categories, in order of first row")
    ranking: list[str] = Field(description="model ids, best mean of the first criterion (then the next...) first")
    created_at: str
    judge_check: Optional[JudgeCheck] = Field(None, description="can the judge tell right answers from wrong?")
    similarity_check: Optional[SimilarityCheck] = None
    pairwise: list[PairwiseComparison] = Field(default_factory=list)
    jury: list[str] = Field(default_factory=list, description="the jury's judges, when several judges scored")
    jury_aggregate: Optional[str] = None
    agreement: list[JuryAgreement] = Field(default_factory=list)
    labels: Optional[LabelAgreement] = Field(None, description="the first judge's agreement with human labels (--labels)")
    warnings: list[str] = Field(default_factory=list, description="biases the reader must know (self-preference)")
    notes: list[str] = Field(default_factory=list, description="checks that were skipped, and why")
    items: list[ItemView] = Field(default_factory=list, description="the rows a person reads (the report's row browser)")
    items_total: int = Field(0, description="test items in the run (more than `items` when only the worst are kept)")

    @model_validator(mode="before")
    @classmethod
    def _judges_of_an_older_summary(cls, data: Any) -> Any:
        if isinstance(data, dict) and "judges" not in data:
            data = {**data, "judges": data.get("jury") or ([data["judge_model"]] if data.get("judge_model") else [])}
        return data

