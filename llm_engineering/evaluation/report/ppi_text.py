"""The prediction-powered means in words and table rows: each labelled criterion's mean corrected by the labels."""

from __future__ import annotations

from llm_engineering.evaluation.rates import fmt, with_ci
from llm_engineering.evaluation.stored.summary import EvaluationSummary

PPI_TITLE = ("Corrected by human labels (PPI++: every judged row, the judge's bias measured on the labelled ones; the "
             "intervals hold when the labelled rows are a random sample of the model's rows)")
PPI_HEADER = ["model", "criterion", "corrected mean (95% CI)", "labelled rows", "other judged rows", "judge alone",
              "labels alone (95% CI)", "judge's bias on the labelled rows", "weight of the judge (lambda)"]


def ppi_rows(summary: EvaluationSummary) -> list[list[str]]:
    """One row per model and labelled criterion (`PPI_HEADER`); none without pointwise labels of its answers."""
    rows = []
    for s in summary.models:
        for c in s.criteria:
            if (p := c.ppi) is None:
                continue
            corrected = with_ci(p.mean, p.ci) if p.mean is not None else f"none: {p.problem}"
            bias = f"{p.bias:+.2f}" if p.bias is not None else "n/a"
            rows.append([s.model_id, c.name, corrected, str(p.labelled), str(p.unlabelled), fmt(p.judge_only.mean),
                         with_ci(p.labels_only.mean, p.labels_only.ci), bias, fmt(p.power_tuning)])
    return rows


def ppi_lines(summary: EvaluationSummary) -> list[str]:
    """`ppi_rows` in words, under `PPI_TITLE`."""
    lines = []
    for model, criterion, corrected, labelled, rest, judge, labels, bias, lam in ppi_rows(summary):
        if corrected.startswith("none: "):
            lines.append(f"  {model} {criterion}: no corrected mean ({corrected.removeprefix('none: ')})")
            continue
        lines.append(f"  {model} {criterion}: {corrected} from {labelled} labelled and {rest} other judged rows; the "
                     f"judge alone {judge}, the labels alone {labels}; the judge's bias {bias} on the labelled rows "
                     f"(its weight {lam})")
    return [f"{PPI_TITLE}:", *lines] if lines else []
