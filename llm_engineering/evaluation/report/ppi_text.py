"""The prediction-powered figures in words and table rows: each labelled criterion's mean, each comparison of two
models and each pairwise win rate, corrected by the labels."""

from __future__ import annotations

from typing import Optional

from llm_engineering.evaluation.rates import fmt, with_ci
from llm_engineering.evaluation.report.trust_text import pairwise_name
from llm_engineering.evaluation.stored.ppi import PPIEstimate
from llm_engineering.evaluation.stored.summary import EvaluationSummary

PPI_TITLE = ("Corrected by human labels (PPI++: every judged row, the judge's bias measured on the labelled ones; the "
             "intervals hold when the labelled rows are a random sample of the rows: the report's 'Label at random')")
PPI_HEADER = ["model or comparison", "figure", "corrected (95% CI)", "labelled rows", "other judged rows",
              "judge alone", "labels alone (95% CI)", "judge's bias on the labelled rows", "weight of the judge (lambda)"]
NOT_RANDOM = "the interval does not hold: some labels were not chosen at random ('Label next' or by hand)"


def corrected_text(p: PPIEstimate) -> str:
    """The corrected figure with its interval, or why there is none; with a warning when the interval does not hold."""
    if p.mean is None:
        return f"none: {p.problem}"
    return with_ci(p.mean, p.ci) + (f" ({NOT_RANDOM})" if p.random_sample is False else "")


def _row(name: str, figure: str, p: PPIEstimate) -> list[str]:
    bias = f"{p.bias:+.2f}" if p.bias is not None else "n/a"
    return [name, figure, corrected_text(p), str(p.labelled), str(p.unlabelled), fmt(p.judge_only.mean),
            with_ci(p.labels_only.mean, p.labels_only.ci), bias, fmt(p.power_tuning)]


def ppi_rows(summary: EvaluationSummary) -> list[list[str]]:
    """One row (`PPI_HEADER`) per model and labelled criterion, per comparison of two models whose answers to some rows
    are both labelled (the difference of means), and per pairwise comparison with labelled pairs (the first model's
    win rate); none without labels of the run's answers."""
    found: list[tuple[str, str, Optional[PPIEstimate]]] = [
        (s.model_id, c.name, c.ppi) for s in summary.models for c in s.criteria]
    found += [(f"{c.model_a} - {c.model_b}", f"{c.criterion} difference", c.ppi) for c in summary.comparisons]
    found += [(pairwise_name(p), "win rate", p.ppi) for p in summary.pairwise]
    return [_row(name, figure, p) for name, figure, p in found if p is not None]


def ppi_lines(summary: EvaluationSummary) -> list[str]:
    """`ppi_rows` in words, under `PPI_TITLE`."""
    lines = []
    for name, figure, corrected, labelled, rest, judge, labels, bias, lam in ppi_rows(summary):
        if corrected.startswith("none: "):
            lines.append(f"  {name} {figure}: no corrected figure ({corrected.removeprefix('none: ')})")
            continue
        lines.append(f"  {name} {figure}: {corrected} from {labelled} labelled and {rest} other judged rows; the "
                     f"judge alone {judge}, the labels alone {labels}; the judge's bias {bias} on the labelled rows "
                     f"(its weight {lam})")
    return [f"{PPI_TITLE}:", *lines] if lines else []
