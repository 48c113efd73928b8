"""Judge check: can the judge tell a right answer from a wrong one at all?

For a fixed sample of rows the judge scores, with the scoring prompt, each row's reference
answer and a mismatched reference (another sampled row's, by a fixed derangement). A judge
worth trusting scores the reference higher on accuracy nearly always; one that does not is
flagged "no signal" in plain words. The calls go through the scoring cache and retries.
"""

from __future__ import annotations

import logging
from typing import Any, Optional

from datasets import Dataset
from pydantic import BaseModel, Field

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.judge_cache import JudgeCache
from llm_engineering.evaluation.judge_transport import JudgeBackend, ask_judge
from llm_engineering.evaluation.rubric import is_valid_verdict, judge_messages, parse_verdict
from llm_engineering.evaluation.rates import Rate, derangement, rate, sample_rows
from llm_engineering.evaluation.similarity import SimilarityCheck

logger = logging.getLogger(__name__)


class JudgeCheckPair(BaseModel):
    """One checked row: the accuracy the judge gave its reference and a mismatched reference."""

    id: str
    mismatched_id: str
    reference_accuracy: Optional[int]
    mismatched_accuracy: Optional[int]
    error: Optional[str] = None


class JudgeCheck(BaseModel):
    """Figures of the judge check. Rates are over every checked pair; a pair with a failed
    verdict counts as failed, never as a tie or dropped."""

    judge_model: str
    pairs: int
    reference_higher: Rate = Field(description="discrimination: reference scored above the mismatched answer")
    ties: Rate
    reversals: Rate = Field(description="mismatched answer scored above the reference")
    failed: Rate
    reference_accuracy_mean: Optional[float]
    mismatched_accuracy_mean: Optional[float]
    threshold: float
    no_signal: bool
    verdict: str = Field(description="the finding in plain words")
    details: list[JudgeCheckPair] = Field(default_factory=list)

    def metadata(self) -> dict[str, Any]:
        """The figures as ZenML metadata (logged by the check step and by the summary)."""
        return {
            "judge": self.judge_model, "pairs": self.pairs, "no_signal": self.no_signal, "verdict": self.verdict,
            "discrimination_rate": self.reference_higher.rate, "discrimination_ci": self.reference_higher.ci,
            "tie_rate": self.ties.rate, "reversal_rate": self.reversals.rate, "failed_rate": self.failed.rate,
            "threshold": self.threshold,
        }


class TrustChecks(BaseModel):
    """The `trust_checks` artifact: how far the run's scores can be trusted."""

    judge: Optional[JudgeCheck] = None
    similarity: Optional[SimilarityCheck] = None
    notes: list[str] = Field(default_factory=list, description="checks that were skipped, and why")


def _mean(values: list[int]) -> Optional[float]:
    return round(sum(values) / len(values), 4) if values else None


def judge_verdict_text(discrimination: Rate, threshold: float, no_signal: bool) -> str:
    if not discrimination.total:
        return "NO SIGNAL: the judge's discrimination could not be measured (no pair was checked)."
    interval = f", 95% CI {discrimination.ci[0]:.0%}-{discrimination.ci[1]:.0%}" if discrimination.ci else ""
    found = (f"it scored the reference answer above a mismatched answer in {discrimination.count} of "
             f"{discrimination.total} pairs ({discrimination.rate:.0%}{interval})")
    if no_signal:
        return (f"NO SIGNAL: {found}, below the {threshold:.0%} threshold. Its scores do not tell right "
                f"answers from wrong ones, so this run's accuracy and style means say little: "
                f"use a stronger judge.")
    return f"The judge tells answers apart: {found}, at or above the {threshold:.0%} threshold."


def judge_check_from_pairs(judge_id: str, pairs: list[JudgeCheckPair], threshold: float) -> JudgeCheck:
    """Rates, intervals and the no-signal flag from the checked pairs (pure bookkeeping)."""
    scored = [p for p in pairs if p.reference_accuracy is not None and p.mismatched_accuracy is not None]
    higher = sum(p.reference_accuracy > p.mismatched_accuracy for p in scored)
    lower = sum(p.reference_accuracy < p.mismatched_accuracy for p in scored)
    total = len(pairs)
    discrimination = rate(higher, total)
    no_signal = discrimination.rate is None or discrimination.rate < threshold
    return JudgeCheck(
        judge_model=judge_id,
        pairs=total,
        reference_higher=discrimination,
        ties=rate(len(scored) - higher - lower, total),
        reversals=rate(lower, total),
        failed=rate(total - len(scored), total),
        reference_accuracy_mean=_mean([p.reference_accuracy for p in scored]),
        mismatched_accuracy_mean=_mean([p.mismatched_accuracy for p in scored]),
        threshold=threshold,
        no_signal=no_signal,
        verdict=judge_verdict_text(discrimination, threshold, no_signal),
        details=pairs,
    )


def run_judge_check(
    dataset: Dataset,
    judge: JudgeBackend,
    cache: Optional[JudgeCache],
    rows: int,
    threshold: float,
    seed: int = 0,
) -> JudgeCheck:
    """Score `rows` sampled references and mismatched references with `judge`; see the module doc."""
    if col.REFERENCE not in dataset.column_names:
        raise ValueError(f"the judge check needs a {col.REFERENCE!r} column; the rows have {dataset.column_names}")
    sample = sample_rows(len(dataset), rows, seed)
    mismatched = [sample[j] for j in derangement(len(sample), seed)]
    instructions, references, ids = dataset[col.INSTRUCTION], dataset[col.REFERENCE], dataset[col.ID]
    conversations = [judge_messages(instructions[i], references[i]) for i in sample]
    conversations += [judge_messages(instructions[i], references[m]) for i, m in zip(sample, mismatched)]
    replies = ask_judge(judge, conversations, cache, is_valid_verdict)

    def accuracy(index: int) -> tuple[Optional[int], Optional[str]]:
        reply = replies[index]
        if reply.text is None:
            return None, reply.error
        parsed = parse_verdict(reply.text)
        return (parsed.verdict.accuracy.score if parsed.verdict else None), parsed.error

    pairs = []
    for k, (i, m) in enumerate(zip(sample, mismatched)):
        (ref, ref_error), (mis, mis_error) = accuracy(k), accuracy(len(sample) + k)
        pairs.append(JudgeCheckPair(id=str(ids[i]), mismatched_id=str(ids[m]), reference_accuracy=ref,
                                mismatched_accuracy=mis, error=ref_error or mis_error))
    check = judge_check_from_pairs(judge.judge_id, pairs, threshold)
    logger.info("Judge check: %s", check.verdict)
    return check
