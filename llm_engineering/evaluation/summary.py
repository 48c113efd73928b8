"""Aggregate judge scores per model, compare models, and render the report (HTML and table).

Beside the scores, the report says how far they can be trusted: the judge check (with a
plain-words "no signal" flag), reference similarity, and pairwise comparisons.
"""

from __future__ import annotations

import base64
import html
import io
from datetime import datetime, timezone
from typing import Optional

from datasets import Dataset
from pydantic import BaseModel, Field

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.config import JudgeConfig
from llm_engineering.evaluation.generation import GenerationStats
from llm_engineering.evaluation.pairwise import PairwiseComparison, PairwiseReport
from llm_engineering.evaluation.rates import bootstrap_ci
from llm_engineering.evaluation.judge_check import JudgeCheck, TrustChecks
from llm_engineering.evaluation.similarity import SimilarityCheck


# USD per million tokens (input, output), list prices when written; override in the judge config.
KNOWN_PRICES = {"gpt-4o-mini": (0.15, 0.60), "gpt-4o": (2.50, 10.00), "gpt-4.1-mini": (0.40, 1.60)}

class JudgeUsage(BaseModel):
    """Judge requests of this scoring: new calls, cache hits, tokens and estimated cost."""

    calls: int
    cached: int
    prompt_tokens: int
    completion_tokens: int
    estimated_cost_usd: Optional[float] = None


class ModelScores(BaseModel):
    """One model's scores. Means are over scored rows; failed rows are counted, never dropped."""

    model_id: str
    rows: int
    scored: int
    failed: int
    failure_rate: float
    accuracy_mean: Optional[float]
    style_mean: Optional[float]
    accuracy_ci: Optional[list[float]] = Field(None, description="95% bootstrap interval of the mean")
    style_ci: Optional[list[float]] = None
    accuracy_counts: dict[str, int] = Field(description="score -> rows, over scored rows")
    style_counts: dict[str, int]
    mean_completion_tokens: float
    truncated: int = Field(description="answers cut by max_tokens (finish reason 'length')")
    tokens_per_second: Optional[float] = None
    generation_seconds: Optional[float] = None
    judge_usage: JudgeUsage
    similarity_mean: Optional[float] = Field(None, description="mean cosine similarity of answer and reference")
    similarity_ci: Optional[list[float]] = None
    similarity_rows: int = 0


class ModelComparison(BaseModel):
    """Mean score of `model_a` minus `model_b`, paired on the rows both have scored."""

    model_a: str
    model_b: str
    criterion: str
    paired_rows: int
    difference: Optional[float]
    ci: Optional[list[float]] = Field(None, description="95% bootstrap interval of the difference")


class EvaluationSummary(BaseModel):
    """The `evaluation_summary` artifact: per-model scores, comparisons and the ranking."""

    judge_model: str
    models: list[ModelScores]
    comparisons: list[ModelComparison] = Field(default_factory=list)
    ranking: list[str] = Field(description="model ids, best mean accuracy (then style) first")
    created_at: str
    judge_check: Optional[JudgeCheck] = Field(None, description="can the judge tell right answers from wrong?")
    similarity_check: Optional[SimilarityCheck] = None
    pairwise: list[PairwiseComparison] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list, description="checks that were skipped, and why")


def _mean(values: list[int]) -> Optional[float]:
    return round(sum(values) / len(values), 4) if values else None


def _counts(values: list[int]) -> dict[str, int]:
    return {str(score): values.count(score) for score in (1, 2, 3)}


def judge_usage(rows: list[dict], prices: Optional[tuple[float, float]] = None) -> JudgeUsage:
    fresh = [r for r in rows if r.get(col.JUDGE_RAW) is not None and not r.get(col.JUDGE_CACHED)]
    prompt = sum(r.get(col.JUDGE_PROMPT_TOKENS) or 0 for r in fresh)
    completion = sum(r.get(col.JUDGE_COMPLETION_TOKENS) or 0 for r in fresh)
    return JudgeUsage(
        calls=len(fresh),
        cached=sum(bool(r.get(col.JUDGE_CACHED)) for r in rows),
        prompt_tokens=prompt,
        completion_tokens=completion,
        estimated_cost_usd=round((prompt * prices[0] + completion * prices[1]) / 1e6, 6) if prices else None,
    )


def model_scores(
    evaluations: Dataset,
    stats: Optional[GenerationStats] = None,
    prices: Optional[tuple[float, float]] = None,
) -> ModelScores:
    """Scores of one model's `evaluations`: a row counts as scored only if both scores exist."""
    rows = evaluations.to_list()
    scored = [
        r for r in rows
        if r[col.JUDGE_ERROR] is None and r[col.ACCURACY_SCORE] is not None and r[col.STYLE_SCORE] is not None
    ]
    accuracy = [r[col.ACCURACY_SCORE] for r in scored]
    style = [r[col.STYLE_SCORE] for r in scored]
    model_ids = sorted({r[col.MODEL_ID] for r in rows})
    if len(model_ids) != 1:
        raise ValueError(f"evaluations must hold exactly one model, found {model_ids}")
    similarities = [r[col.REFERENCE_SIMILARITY] for r in rows if r.get(col.REFERENCE_SIMILARITY) is not None]
    return ModelScores(
        model_id=model_ids[0],
        rows=len(rows),
        scored=len(scored),
        failed=len(rows) - len(scored),
        failure_rate=round((len(rows) - len(scored)) / len(rows), 4) if rows else 0.0,
        accuracy_mean=_mean(accuracy),
        style_mean=_mean(style),
        accuracy_ci=bootstrap_ci(accuracy),
        style_ci=bootstrap_ci(style),
        accuracy_counts=_counts(accuracy),
        style_counts=_counts(style),
        mean_completion_tokens=round(
            sum(r[col.COMPLETION_TOKENS] for r in rows) / len(rows), 2
        ) if rows else 0.0,
        truncated=sum(r[col.FINISH_REASON] == "length" for r in rows),
        tokens_per_second=stats.tokens_per_second if stats else None,
        generation_seconds=stats.seconds if stats else None,
        judge_usage=judge_usage(rows, prices),
        similarity_mean=round(sum(similarities) / len(similarities), 4) if similarities else None,
        similarity_ci=bootstrap_ci(similarities),
        similarity_rows=len(similarities),
    )


def _scored_by_id(evaluations: Dataset, criterion: str) -> dict[str, int]:
    column = col.ACCURACY_SCORE if criterion == "accuracy" else col.STYLE_SCORE
    return {
        row[col.ID]: row[column] for row in evaluations.to_list()
        if row[col.JUDGE_ERROR] is None and row[column] is not None
    }


def compare_models(a: Dataset, b: Dataset, criterion: str) -> ModelComparison:
    """Paired difference of means on the ids both models have a valid verdict for."""
    scores_a, scores_b = _scored_by_id(a, criterion), _scored_by_id(b, criterion)
    common = sorted(scores_a.keys() & scores_b.keys())
    differences = [scores_a[i] - scores_b[i] for i in common]
    return ModelComparison(
        model_a=a[0][col.MODEL_ID], model_b=b[0][col.MODEL_ID], criterion=criterion,
        paired_rows=len(common), difference=_mean(differences), ci=bootstrap_ci(differences),
    )


def build_summary(
    evaluations: list[Dataset],
    stats: Optional[list[GenerationStats]] = None,
    prices: Optional[tuple[float, float]] = None,
    checks: Optional[TrustChecks] = None,
    pairwise: Optional[PairwiseReport] = None,
) -> EvaluationSummary:
    """Per-model scores, each model compared with the first (the baseline), the ranking, and the
    trust checks of the run."""
    by_model = {s.model_id: s for s in stats or []}
    scores = []
    for dataset in evaluations:
        model_id = dataset[0][col.MODEL_ID] if len(dataset) else "?"
        scores.append(model_scores(dataset, by_model.get(model_id), prices))
    comparisons = [
        compare_models(other, evaluations[0], criterion)
        for other in evaluations[1:] if len(other) and len(evaluations[0])
        for criterion in ("accuracy", "style")
    ]
    judges = sorted({j for dataset in evaluations for j in set(dataset[col.JUDGE_MODEL])})
    ranking = sorted(
        scores, key=lambda s: (-(s.accuracy_mean or 0.0), -(s.style_mean or 0.0), s.model_id)
    )
    return EvaluationSummary(
        judge_model=", ".join(judges),
        models=scores,
        comparisons=comparisons,
        ranking=[s.model_id for s in ranking],
        created_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        judge_check=checks.judge if checks else None,
        similarity_check=checks.similarity if checks else None,
        pairwise=pairwise.comparisons if pairwise else [],
        notes=checks.notes if checks else [],
    )


def _fmt(value: Optional[float], digits: int = 2) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


TABLE_HEADER = ["model", "accuracy (95% CI)", "style (95% CI)", "similarity (95% CI)", "scored", "failed",
                "output tok/s", "judge calls", "judge cost $"]


def _with_ci(mean: Optional[float], ci: Optional[list[float]]) -> str:
    return _fmt(mean) + (f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "")


def table_rows(summary: EvaluationSummary) -> list[list[str]]:
    """Rows for the CLI table and the HTML report, in ranking order."""
    by_id = {s.model_id: s for s in summary.models}
    return [
        [
            s.model_id,
            _with_ci(s.accuracy_mean, s.accuracy_ci),
            _with_ci(s.style_mean, s.style_ci),
            _with_ci(s.similarity_mean, s.similarity_ci),
            f"{s.scored}/{s.rows}",
            str(s.failed),
            _fmt(s.tokens_per_second, 1),
            f"{s.judge_usage.calls} (+{s.judge_usage.cached} cached)",
            _fmt(s.judge_usage.estimated_cost_usd, 4),
        ]
        for s in (by_id[model_id] for model_id in summary.ranking)
    ]


def comparison_rows(summary: EvaluationSummary) -> list[list[str]]:
    return [
        [f"{c.model_a} - {c.model_b}", c.criterion, _with_ci(c.difference, c.ci), str(c.paired_rows)]
        for c in summary.comparisons
    ]


def _rate_with_ci(value: Optional[float], ci: Optional[list[float]]) -> str:
    return "n/a" if value is None else f"{value:.0%}" + (f" [{ci[0]:.0%}, {ci[1]:.0%}]" if ci else "")


JUDGE_CHECK_HEADER = ["judge", "pairs", "reference higher", "ties", "reversals", "failed",
                 "mean accuracy: reference / mismatched", "threshold"]
PAIRWISE_HEADER = ["model A vs model B", "win rate of A (95% CI)", "A wins", "ties", "A loses", "failed",
                   "orders disagree", "first position chosen"]


def judge_check_rows(summary: EvaluationSummary) -> list[list[str]]:
    s = summary.judge_check
    if s is None:
        return []
    return [[s.judge_model, str(s.pairs), s.reference_higher.describe(), s.ties.describe(), s.reversals.describe(),
             s.failed.describe(), f"{_fmt(s.reference_accuracy_mean)} / {_fmt(s.mismatched_accuracy_mean)}",
             f"{s.threshold:.0%}"]]


def pairwise_rows(summary: EvaluationSummary) -> list[list[str]]:
    return [
        [f"{p.model_a} vs {p.model_b}", _rate_with_ci(p.win_rate, p.win_rate_ci), p.wins.describe(),
         p.ties.describe(), p.losses.describe(), p.failed.describe(), p.order_disagreement.describe(),
         p.position_a_preferred.describe()]
        for p in summary.pairwise
    ]


def trust_lines(summary: EvaluationSummary) -> list[str]:
    """How far the scores can be trusted, in plain words (CLI, logs)."""
    lines = []
    if summary.judge_check:
        s = summary.judge_check
        lines.append(f"Judge check ({s.judge_model}): {s.verdict}")
        lines.append(f"  {s.pairs} pairs: reference higher {s.reference_higher.describe()}, ties "
                     f"{s.ties.describe()}, reversals {s.reversals.describe()}, failed {s.failed.describe()}")
    if summary.similarity_check:
        c = summary.similarity_check
        lines.append(f"Similarity metric check ({c.embedding_model}): an instruction is closer to its own reference "
                     f"than to a mismatched one in {c.reference_higher.describe()} of rows "
                     f"(mean cosine {_fmt(c.reference_mean)} vs {_fmt(c.mismatched_mean)})")
    for p in summary.pairwise:
        lines.append(f"Pairwise {p.model_a} vs {p.model_b} (each pair judged in both orders): win rate "
                     f"{_rate_with_ci(p.win_rate, p.win_rate_ci)}; wins {p.wins.describe()}, ties "
                     f"{p.ties.describe()}, losses {p.losses.describe()}, failed {p.failed.describe()}; "
                     f"the two orders disagreed in {p.order_disagreement.describe()}")
    return lines + [f"Note: {note}" for note in summary.notes]


def _stacked_bar(axis, y: float, parts: list[tuple[str, Optional[float], str]], label_parts: bool) -> None:
    left = 0.0
    for name, value, colour in parts:
        value = value or 0.0
        axis.barh(y, value, left=left, color=colour, label=name if label_parts else None)
        left += value


def _label(model_id: str) -> str:
    """A model id short enough for a plot axis: the last path part, its settings on a line of their own."""
    name, at, settings = model_id.rpartition("@") if "=" in model_id.rpartition("@")[2] else (model_id, "", "")
    return name.rstrip("/").split("/")[-1] + (f"\n@{settings}" if at else "")


def trust_png(summary: EvaluationSummary) -> Optional[bytes]:
    """Judge check outcomes, pairwise outcomes and win rates, and mean reference similarity."""
    panels = [name for name, present in (("judge_check", summary.judge_check), ("pairwise", summary.pairwise),
                                          ("similarity", any(m.similarity_mean is not None for m in summary.models)))
              if present]
    if not panels:
        return None
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    figure, axes = plt.subplots(1, len(panels), figsize=(4.6 * len(panels), 3.2), squeeze=False)
    for axis, panel in zip(axes[0], panels):
        if panel == "judge_check":
            s = summary.judge_check
            _stacked_bar(axis, 0, [("reference higher", s.reference_higher.rate, "tab:green"),
                                   ("tie", s.ties.rate, "tab:gray"), ("reversal", s.reversals.rate, "tab:red"),
                                   ("failed", s.failed.rate, "black")], True)
            axis.axvline(s.threshold, color="tab:blue", linestyle="--", label=f"threshold {s.threshold:.0%}")
            axis.set_yticks([0], ["judge"])
            axis.set_title("Judge check" + (" - NO SIGNAL" if s.no_signal else ""),
                           color="tab:red" if s.no_signal else "black")
            axis.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=3)
        elif panel == "pairwise":
            for y, p in enumerate(summary.pairwise):
                _stacked_bar(axis, y, [("wins", p.wins.rate, "tab:green"), ("ties", p.ties.rate, "tab:gray"),
                                       ("losses", p.losses.rate, "tab:red"), ("failed", p.failed.rate, "black")], y == 0)
                if p.win_rate is not None:
                    low, high = p.win_rate_ci or [p.win_rate, p.win_rate]
                    axis.errorbar(p.win_rate, y, xerr=[[p.win_rate - low], [high - p.win_rate]], fmt="o",
                                  color="tab:blue", capsize=4, label="win rate (95% CI)" if y == 0 else None)
            axis.set_yticks(range(len(summary.pairwise)),
                            [f"{_label(p.model_a)}\nvs {_label(p.model_b)}" for p in summary.pairwise], fontsize=7)
            axis.set_title("Pairwise, both orders")
            axis.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=3)
        else:
            scored = [m for m in summary.models if m.similarity_mean is not None]
            for y, m in enumerate(scored):
                low, high = m.similarity_ci or [m.similarity_mean, m.similarity_mean]
                axis.errorbar(m.similarity_mean, y, xerr=[[m.similarity_mean - low], [high - m.similarity_mean]],
                              fmt="o", capsize=4, color="tab:purple")
            axis.set_yticks(range(len(scored)), [_label(m.model_id) for m in scored], fontsize=7)
            axis.set_ylim(-0.5, len(scored) - 0.5)
            axis.set_xlabel("mean cosine similarity (95% CI)")
            axis.set_xlim(0, 1)
            axis.set_title("Answer-reference similarity")
        if panel != "similarity":
            axis.set_xlim(0, 1)
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=90)
    plt.close(figure)
    return buffer.getvalue()


def distribution_png(summary: EvaluationSummary) -> bytes:
    """Bar charts of accuracy and style score counts per model."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    figure, axes = plt.subplots(1, 2, figsize=(9, 3.2), sharey=True)
    width = 0.8 / max(1, len(summary.models))
    for axis, criterion in zip(axes, ("accuracy", "style")):
        for k, model in enumerate(summary.models):
            counts = getattr(model, f"{criterion}_counts")
            axis.bar([s + k * width for s in (1, 2, 3)], [counts[str(s)] for s in (1, 2, 3)],
                     width=width, label=model.model_id)
        axis.set_xticks([s + width * (len(summary.models) - 1) / 2 for s in (1, 2, 3)], ["1", "2", "3"])
        axis.set_title(f"{criterion} scores")
        axis.set_xlabel("score")
    axes[0].set_ylabel("answers")
    axes[1].legend(fontsize=8)
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=90)
    plt.close(figure)
    return buffer.getvalue()


def _html_table(header: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _trust_html(summary: EvaluationSummary) -> str:
    parts = []
    judge_check = summary.judge_check
    if judge_check:
        style = "background:#fdd;border:2px solid #c00" if judge_check.no_signal else "background:#efe;border:1px solid #393"
        parts.append(f"<h3>Judge check</h3><p style='{style};padding:8px'>{html.escape(judge_check.verdict)}</p>"
                     + _html_table(JUDGE_CHECK_HEADER, judge_check_rows(summary))
                     + "<p>The judge scored each sampled row's reference answer and another row's reference "
                     "(a fixed derangement) with the scoring prompt; rates are over all pairs, with 95% Wilson "
                     "intervals.</p>")
    check = summary.similarity_check
    if check:
        parts.append(f"<h3>Reference similarity</h3><p>Cosine similarity of answer and reference embeddings "
                     f"({html.escape(check.embedding_model)}), no judge needed; shown per model in the table "
                     f"above. The metric itself: an instruction is closer to its own reference than to a "
                     f"mismatched one in {html.escape(check.reference_higher.describe())} of rows (mean cosine "
                     f"{_fmt(check.reference_mean)} vs {_fmt(check.mismatched_mean)}).</p>")
    if summary.pairwise:
        parts.append("<h3>Pairwise comparison (each pair judged twice, positions swapped)</h3>"
                     + _html_table(PAIRWISE_HEADER, pairwise_rows(summary))
                     + "<p>Win rate: model A's mean points over judged pairs (win 1, tie 0.5, loss 0; the two "
                     "orders averaged), with a 95% bootstrap interval.</p>")
    parts += [f"<p>Note: {html.escape(note)}</p>" for note in summary.notes]
    plot = trust_png(summary)
    if plot:
        parts.append(f"<img alt='trust checks' src='data:image/png;base64,{base64.b64encode(plot).decode()}'>")
    return "".join(parts)


def render_html(summary: EvaluationSummary) -> str:
    """A self-contained HTML report (the dashboard visualization of `evaluation_summary`)."""
    plot = base64.b64encode(distribution_png(summary)).decode()
    comparisons = (
        "<h3>Model comparisons (paired on rows both scored)</h3>"
        + _html_table(["difference", "criterion", "mean (95% CI)", "paired rows"], comparison_rows(summary))
        if summary.comparisons else ""
    )
    return (
        "<html><head><meta charset='utf-8'><title>Evaluation summary</title>"
        "<style>body{font-family:sans-serif}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:4px 8px}</style></head><body>"
        f"<h2>Evaluation summary</h2><p>Judge: {html.escape(summary.judge_model)} &middot; "
        f"{html.escape(summary.created_at)}</p>"
        + _html_table(TABLE_HEADER, table_rows(summary))
        + "<p>Means are over scored rows (scores 1-3), with 95% bootstrap intervals; rows whose "
        "verdict failed are counted as failed, never averaged.</p>"
        + comparisons
        + _trust_html(summary)
        + f"<h3>Score distributions</h3><img alt='score distributions' src='data:image/png;base64,{plot}'>"
        + "</body></html>"
    )


def judge_prices(judge: JudgeConfig) -> Optional[tuple[float, float]]:
    """(input, output) USD per million tokens: from the config, else list prices of OpenAI models."""
    if judge.price_per_million_input is not None or judge.price_per_million_output is not None:
        return (judge.price_per_million_input or 0.0, judge.price_per_million_output or 0.0)
    if judge.backend == "openai" and judge.base_url is None:
        return KNOWN_PRICES.get(judge.model)
    return None
