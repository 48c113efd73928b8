"""Judge check: can the judge tell a right answer from a wrong one at all?

For a fixed sample of rows the judge scores, with the scoring prompt, each row's reference
answer and, per tier of the report card (`check_tiers`), a worse answer: a mismatched reference
(another sampled row's, by a fixed derangement), the nearest other reference by embedding, the
reference truncated, the reference with its facts swapped. A judge worth trusting scores the
reference higher on the rubric's first criterion nearly always; one that does not on the
mismatch tier is flagged "no signal" in plain words, and each harder tier has its own verdict.
Where the judge gave logprobs, integer ties are broken by the expected scores, and both figures
are reported. The calls go through the scoring cache and retries.
"""

from __future__ import annotations

import logging
from typing import Any, Optional

import numpy as np

from datasets import Dataset
from pydantic import BaseModel, Field

from llm_engineering.evaluation.trust import tiers as check_tiers
from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.config import JudgeCheckConfig
from llm_engineering.evaluation.judging.judge import Judge
from llm_engineering.evaluation.judging.transport import ReplySchema, ask_judge
from llm_engineering.evaluation.judging.rubric import first_score_schema, judge_messages, verdict_checker
from llm_engineering.evaluation.judging.scoring import read_reply
from llm_engineering.evaluation.rates import Rate, mean, rate, sample_rows
from llm_engineering.evaluation.trust.similarity import SimilarityCheck

logger = logging.getLogger(__name__)


class JudgeCheckPair(BaseModel):
    """One checked row: the score (first criterion) the judge gave its reference and a mismatched reference."""

    id: str
    mismatched_id: str
    reference_accuracy: Optional[int] = Field(description="the first criterion's score (accuracy in the handbook)")
    mismatched_accuracy: Optional[int]
    reference_expected: Optional[float] = None
    mismatched_expected: Optional[float] = None
    error: Optional[str] = None

    @property
    def expected_order(self) -> Optional[int]:
        """+1 reference higher, -1 lower, 0 tie: by integer score, ties broken by expected score."""
        if self.reference_accuracy is None or self.mismatched_accuracy is None:
            return None
        if self.reference_accuracy != self.mismatched_accuracy:
            return 1 if self.reference_accuracy > self.mismatched_accuracy else -1
        if self.reference_expected is None or self.mismatched_expected is None:
            return None
        difference = self.reference_expected - self.mismatched_expected
        return (difference > 0) - (difference < 0)


class JudgeCheck(BaseModel):
    """Figures of the judge check. Rates are over every checked pair; a pair with a failed
    verdict counts as failed, never as a tie or dropped."""

    judge_model: str
    criterion: str = "accuracy"
    tier: str = Field("mismatch", description="the report card tier these figures are of")
    pairs: int
    reference_higher: Rate = Field(description="discrimination: reference scored above the mismatched answer")
    ties: Rate
    reversals: Rate = Field(description="mismatched answer scored above the reference")
    failed: Rate
    reference_accuracy_mean: Optional[float]
    mismatched_accuracy_mean: Optional[float]
    threshold: float
    no_signal: bool
    reference_higher_expected: Optional[Rate] = Field(
        None, description="discrimination with integer ties broken by expected scores (None without logprobs)")
    expected_problem: Optional[str] = Field(None, description="why there is no tie-broken figure")
    verdict: str = Field(description="the finding in plain words")
    details: list[JudgeCheckPair] = Field(default_factory=list)
    tiers: list["JudgeCheck"] = Field(default_factory=list, description="the report card's harder tiers")
    judge_calls: Optional[int] = Field(None, description="verdicts the check asked for (all tiers), cached ones included")
    judge_tokens: Optional[int] = Field(None, description="prompt + completion tokens of the calls not served by the cache")
    judge_seconds_per_verdict: Optional[float] = Field(None, description="the judge's wall time over the calls not "
                                                       "served by the cache")

    def metadata(self) -> dict[str, Any]:
        """The figures as ZenML metadata (logged by the check step and by the summary)."""
        return {
            "judge": self.judge_model, "pairs": self.pairs, "no_signal": self.no_signal, "verdict": self.verdict,
            "discrimination_rate": self.reference_higher.rate, "discrimination_ci": self.reference_higher.ci,
            "tie_rate": self.ties.rate, "reversal_rate": self.reversals.rate, "failed_rate": self.failed.rate,
            "threshold": self.threshold, "criterion": self.criterion,
            "discrimination_rate_expected": self.reference_higher_expected.rate if self.reference_higher_expected else None,
            "tiers": {t.tier: {"discrimination_rate": t.reference_higher.rate, "discrimination_ci": t.reference_higher.ci,
                               "discrimination_rate_expected": t.reference_higher_expected.rate
                               if t.reference_higher_expected else None, "pairs": t.pairs, "no_signal": t.no_signal}
                      for t in self.tiers},
            "judge_calls": self.judge_calls, "judge_tokens": self.judge_tokens,
            "judge_seconds_per_verdict": self.judge_seconds_per_verdict,
        }


class TrustChecks(BaseModel):
    """The `trust_checks` artifact: how far the run's scores can be trusted."""

    judge: Optional[JudgeCheck] = None
    similarity: Optional[SimilarityCheck] = None
    notes: list[str] = Field(default_factory=list, description="checks that were skipped, and why")



WORSE_ANSWER = {
    "mismatch": "a mismatched answer",
    "same_topic": "the nearest other reference (same topic)",
    "truncated": "the reference cut to its first third",
    "corrupted": "the reference with its numbers and names swapped",
}


def judge_verdict_text(
    discrimination: Rate, threshold: float, no_signal: bool, tie_broken: bool = False, tier: str = "mismatch"
) -> str:
    if not discrimination.total:
        return "NO SIGNAL: the judge's discrimination could not be measured (no pair was checked)."
    interval = f", 95% CI {discrimination.ci[0]:.0%}-{discrimination.ci[1]:.0%}" if discrimination.ci else ""
    if tier != "mismatch":
        found = (f"the reference scored above {WORSE_ANSWER[tier]} in {discrimination.count} of {discrimination.total} "
                 f"pairs ({discrimination.rate:.0%}{interval})")
        return (f"{tier}: {found}, " + ("below" if no_signal else "at or above") + f" the {threshold:.0%} threshold"
                + (": the judge cannot tell these apart." if no_signal else "."))
    found = (f"it scored the reference answer above a mismatched answer in {discrimination.count} of "
             f"{discrimination.total} pairs ({discrimination.rate:.0%}{interval}"
             f"{', integer ties broken by expected scores' if tie_broken else ''})")
    if no_signal:
        return (f"NO SIGNAL: {found}, below the {threshold:.0%} threshold. Its scores do not tell right "
                f"answers from wrong ones, so this run's accuracy and style means say little: "
                f"use a stronger judge.")
    return f"The judge tells answers apart: {found}, at or above the {threshold:.0%} threshold."


def judge_check_from_pairs(
    judge_id: str, pairs: list[JudgeCheckPair], threshold: float, criterion: str = "accuracy",
    expected_problem: Optional[str] = None, tier: str = "mismatch",
) -> JudgeCheck:
    """Rates, intervals and the no-signal flag from the checked pairs (pure bookkeeping). With expected
    scores on every scored pair, the flag reads the tie-broken discrimination."""
    scored = [p for p in pairs if p.reference_accuracy is not None and p.mismatched_accuracy is not None]
    higher = sum(p.reference_accuracy > p.mismatched_accuracy for p in scored)
    lower = sum(p.reference_accuracy < p.mismatched_accuracy for p in scored)
    total = len(pairs)
    discrimination = rate(higher, total)
    orders = [p.expected_order for p in scored]
    tie_broken = rate(orders.count(1), total) if scored and None not in orders else None
    if scored and tie_broken is None and expected_problem is None:
        expected_problem = "some checked verdicts have no expected score"
    deciding = tie_broken or discrimination
    no_signal = deciding.rate is None or deciding.rate < threshold
    return JudgeCheck(
        judge_model=judge_id,
        criterion=criterion,
        pairs=total,
        reference_higher=discrimination,
        ties=rate(len(scored) - higher - lower, total),
        reversals=rate(lower, total),
        failed=rate(total - len(scored), total),
        reference_accuracy_mean=mean([p.reference_accuracy for p in scored]),
        mismatched_accuracy_mean=mean([p.mismatched_accuracy for p in scored]),
        threshold=threshold,
        no_signal=no_signal,
        reference_higher_expected=tie_broken,
        expected_problem=None if tie_broken else expected_problem,
        verdict=judge_verdict_text(deciding, threshold, no_signal, tie_broken is not None, tier),
        tier=tier,
        details=pairs,
    )


def _worse_answers(
    tier: str, sample: list[int], references: list[str], seed: int, embeddings: Optional[np.ndarray]
) -> dict[int, tuple[str, str]]:
    """Sampled row -> (the worse answer of `tier`, the id-like label of where it came from)."""
    if tier == "mismatch":
        return {i: (references[m], str(m)) for i, m in zip(sample, check_tiers.mismatched(sample, seed))}
    if tier == "same_topic":
        return {i: (references[m], str(m)) for i, m in zip(sample, check_tiers.nearest_other(embeddings, sample))}
    if tier == "truncated":
        return {i: (check_tiers.truncated(references[i]), "truncated") for i in sample}
    others = {i: [r for j, r in enumerate(references) if j != i] for i in sample}
    worse = {i: check_tiers.corrupted(references[i], others[i], seed + i) for i in sample}
    return {i: (text, "corrupted") for i, text in worse.items() if text is not None}


def run_judge_check(
    dataset: Dataset, judge: Judge, config: JudgeCheckConfig, embedder: Any = None, whole_verdicts: bool = False,
) -> JudgeCheck:
    """Score `config.rows` sampled references and, per tier, their worse answers with the judge's first backend;
    see the module doc.

    The figures are the mismatch tier's, with the other tiers under `tiers`. `same_topic` needs an
    `embedder` (sentence embeddings of the references). `whole_verdicts`: ask a score-first rubric's judge
    for whole verdicts too (to compare; the figures are the same).
    """
    if col.REFERENCE not in dataset.column_names:
        raise ValueError(f"the judge check needs a {col.REFERENCE!r} column; the rows have {dataset.column_names}")
    rubric, seed = judge.rubric, config.seed
    sample = sample_rows(len(dataset), config.rows, seed)
    tiers = ["mismatch", *[tier for tier in config.tiers if tier != "mismatch"]]  # the mismatch tier decides the flag
    instructions, references, ids = dataset[col.INSTRUCTION], dataset[col.REFERENCE], dataset[col.ID]
    embeddings = embedder.encode(references) if "same_topic" in tiers and embedder is not None else None
    worse = {tier: _worse_answers(tier, sample, references, seed, embeddings) for tier in tiers
             if tier != "same_topic" or embeddings is not None}
    # A reference-guided judge sees the row's reference as the reference, and the answer is either it or a
    # worse one: the check then shows that the judge reads the reference.
    conversations = [judge_messages(rubric, instructions[i], references[i], references[i]) for i in sample]
    for answers in worse.values():
        conversations += [judge_messages(rubric, instructions[i], text, references[i]) for i, (text, _) in answers.items()]
    # The check reads one score per verdict: a score-first rubric's judge is asked for that score alone
    # (the same score, see `first_score_schema`), which spares it the analyses, most of a verdict's tokens.
    first_only = rubric.score_first and not whole_verdicts
    reply_schema = ReplySchema("first_score", first_score_schema(rubric)) if first_only else None
    replies = ask_judge(judge.backend, conversations, judge.cache, verdict_checker(rubric, first_only), reply_schema)
    readings = [read_reply(rubric, reply, first_only) for reply in replies]
    criterion = rubric.names[0]

    def score(index: int) -> tuple[Optional[int], Optional[float], Optional[str]]:
        reading = readings[index]
        if reading.verdict.criteria is None:
            return None, None, reading.verdict.error
        distribution = reading.distributions.get(criterion)
        return reading.verdict.criteria[criterion].score, distribution.expected if distribution else None, None

    problem = next((r.expected_problem for r in readings if r.expected_problem), None)
    checks, offset = {}, len(sample)
    for tier, answers in worse.items():
        pairs = []
        for k, (i, (_, source)) in enumerate(answers.items()):
            (ref, ref_expected, ref_error), (mis, mis_expected, mis_error) = score(sample.index(i)), score(offset + k)
            pairs.append(JudgeCheckPair(id=str(ids[i]), mismatched_id=str(ids[int(source)]) if source.isdigit() else source,
                                        reference_accuracy=ref, mismatched_accuracy=mis, reference_expected=ref_expected,
                                        mismatched_expected=mis_expected, error=ref_error or mis_error))
        offset += len(answers)
        checks[tier] = judge_check_from_pairs(judge.backend.judge_id, pairs, config.threshold, criterion, problem, tier)
    check = checks.pop("mismatch")
    fresh = [r for r in replies if not r.cached]
    check = check.model_copy(update={
        "tiers": list(checks.values()), "judge_calls": len(replies),
        "judge_tokens": sum(r.prompt_tokens + r.completion_tokens for r in fresh),
        "judge_seconds_per_verdict": sum(r.seconds for r in fresh) / len(fresh) if fresh else None,
    })
    logger.info("Judge check: %s", check.verdict)
    for tier in check.tiers:
        logger.info("Judge check, %s", tier.verdict)
    return check
