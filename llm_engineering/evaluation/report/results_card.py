"""What a model's results card says (the dataset card of `<workspace>/<model>-results`), as facts `name -> text`.

The scores are the run's summary's (`summary.models`, built once by `report.summary`): the card, the report and the
summarize step's metadata give the same figures. `infrastructure.publishing` writes the facts as they are.
"""

from __future__ import annotations

from typing import Any, Optional

from llm_engineering.evaluation.report.ppi_text import corrected_text
from llm_engineering.evaluation.report.trust_text import (
    SIMILARITY_METRIC,
    pairwise_finding,
    pairwise_name,
    self_preference_warnings,
    similarity_check_finding,
)
from llm_engineering.evaluation.stored.judge_id import model_names
from llm_engineering.evaluation.stored.pairwise import PairwiseReport
from llm_engineering.evaluation.stored.summary import EvaluationSummary, ModelScores
from llm_engineering.evaluation.stored.trust import TrustChecks


def scores_of(summary: Optional[EvaluationSummary], model_id: str) -> Optional[ModelScores]:
    """The model's scores in the run's summary (None: no summary, or it holds no such model)."""
    return next((s for s in summary.models if s.model_id == model_id), None) if summary else None


def score_facts(scores: ModelScores, judge: str) -> dict[str, Any]:
    """The judge (`judge`: its id on the rows) and the model's scores: each criterion's mean with its interval (and
    expected mean), the means corrected by human labels (PPI++) where the run has them, a self-preference warning, the
    metrics and checks without a judge, the reference similarity."""
    facts: dict[str, Any] = {"judge": judge}
    facts["scores"] = ", ".join(
        f"{c.name} {c.mean} (95% CI {c.ci})" + (f", expected {c.expected_mean} (95% CI {c.expected_ci})"
                                              if c.expected_mean is not None else "")
        for c in scores.criteria
    ) + f"; {scores.scored} scored, {scores.failed} failed"
    facts["scores corrected by human labels (PPI++)"] = ", ".join(
        f"{c.name} {corrected_text(c.ppi)} ({c.ppi.labelled} labelled rows, {c.ppi.unlabelled} other judged rows)"
        for c in scores.criteria if c.ppi is not None) or None
    facts["warning"] = " ".join(self_preference_warnings(model_names(judge), [scores.model_id], None)) or None
    measured = [m for m in scores.metrics if m.name != "similarity" and m.rows]
    if measured:
        facts["metrics without a judge"] = "; ".join(f"{m.name} {m.mean} (95% CI {m.ci}; {m.rows} of {m.answers} rows)"
                                                     for m in measured)
    if scores.checks is not None:
        facts["checks"] = (f"answers passing every check {scores.checks.passed.describe()}; checks passed "
                           f"{scores.checks.items.describe()}")
    if scores.similarity_mean is not None:
        facts["reference similarity"] = (f"{scores.similarity_mean} (95% CI {scores.similarity_ci}; "
                                         f"{SIMILARITY_METRIC}, {scores.similarity_rows} rows)")
    return facts


def trust_facts(model_id: str, checks: Optional[TrustChecks] = None,
                pairwise: Optional[PairwiseReport] = None) -> dict[str, Any]:
    """How far the scores can be trusted: the judge check, the similarity metric's check, and the pairwise
    comparisons this model took part in."""
    facts: dict[str, Any] = {}
    if checks is not None and checks.judge is not None:
        facts["judge check"] = checks.judge.verdict
        for tier in checks.judge.tiers:
            facts[f"judge check, {tier.tier}"] = tier.verdict
    if checks is not None and checks.similarity is not None:
        facts["similarity metric check"] = similarity_check_finding(checks.similarity)
    for c in pairwise.comparisons if pairwise is not None else []:
        if model_id in (c.model_a, c.model_b):
            facts[f"pairwise {pairwise_name(c)}"] = pairwise_finding(c)
            if c.ppi is not None:
                facts[f"pairwise {pairwise_name(c)}, win rate corrected by human labels (PPI++)"] = (
                    f"{corrected_text(c.ppi)} ({c.ppi.labelled} labelled pairs, {c.ppi.unlabelled} other judged pairs)")
    return facts
