"""Figures of the evaluation summary, as PNG bytes for the HTML report (matplotlib, imported when drawn)."""

from __future__ import annotations

import io
from typing import Any, Optional

from llm_engineering.evaluation.report.trust_text import judge_check_title
from llm_engineering.evaluation.stored.summary import EvaluationSummary


def _pyplot() -> Any:
    import matplotlib

    # No display on servers and in steps: draw off-screen.
    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    return plt


def _png(figure: Any) -> bytes:
    from matplotlib import pyplot as plt

    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=90)
    plt.close(figure)
    return buffer.getvalue()


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


def _judge_check_panel(axis: Any, summary: EvaluationSummary) -> None:
    s = summary.judge_check
    assert s is not None  # trust_png draws this panel only for a run with a judge check
    tiers = [s, *s.tiers]
    for y, t in enumerate(tiers):
        _stacked_bar(axis, y, [("right answer higher", t.reference_higher.rate, "tab:green"),
                               ("tie", t.ties.rate, "tab:gray"), ("reversal", t.reversals.rate, "tab:red"),
                               ("failed", t.failed.rate, "black")], y == 0)
        if t.reference_higher_tie_broken is not None:
            axis.plot(t.reference_higher_tie_broken.rate, y, "k|", markersize=14,
                      label="ties broken by expected scores" if y == 0 else None)
        if t.best_rule is not None:  # what a rule without a judge passes: the judge's figure is worth its lead on it
            axis.plot(t.baselines[t.best_rule].rate, y, "D", color="tab:orange", markersize=5,
                      label="best rule without a judge" if y == 0 else None)
    axis.axvline(s.threshold, color="tab:blue", linestyle="--", label=f"threshold {s.threshold:.0%}")
    axis.set_yticks(range(len(tiers)), [t.tier for t in tiers], fontsize=7)
    axis.set_title(judge_check_title(s), color="tab:red" if s.no_signal else "black")
    axis.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=3)
    axis.set_xlim(0, 1)


def _pairwise_panel(axis: Any, summary: EvaluationSummary) -> None:
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
    axis.set_xlim(0, 1)


def _similarity_panel(axis: Any, summary: EvaluationSummary) -> None:
    scored = [(m, similarity) for m in summary.models if (similarity := m.similarity_mean) is not None]
    for y, (m, mean) in enumerate(scored):
        low, high = m.similarity_ci or [mean, mean]
        axis.errorbar(mean, y, xerr=[[mean - low], [high - mean]], fmt="o", capsize=4, color="tab:purple")
    axis.set_yticks(range(len(scored)), [_label(m.model_id) for m, _ in scored], fontsize=7)
    axis.set_ylim(-0.5, len(scored) - 0.5)
    axis.set_xlabel("mean cosine similarity (95% CI)")
    axis.set_xlim(0, 1)
    axis.set_title("Answer-reference similarity")


def trust_png(summary: EvaluationSummary) -> Optional[bytes]:
    """Judge check outcomes, pairwise outcomes and win rates, and mean reference similarity; None
    when the run has none of them."""
    panels = [draw for draw, present in ((_judge_check_panel, summary.judge_check),
                                         (_pairwise_panel, summary.pairwise),
                                         (_similarity_panel, any(m.similarity_mean is not None for m in summary.models)))
              if present]
    if not panels:
        return None
    plt = _pyplot()
    figure, axes = plt.subplots(1, len(panels), figsize=(4.6 * len(panels), 3.2), squeeze=False)
    for axis, draw in zip(axes[0], panels):
        draw(axis, summary)
    return _png(figure)


def distribution_png(summary: EvaluationSummary) -> bytes:
    """Bar charts of each criterion's score counts per model."""
    plt = _pyplot()
    figure, axes = plt.subplots(1, len(summary.criteria), figsize=(4.5 * len(summary.criteria), 3.2), sharey=True,
                                squeeze=False)
    width = 0.8 / max(1, len(summary.models))
    for axis, criterion in zip(axes[0], summary.criteria):
        levels = list(summary.models[0].criterion(criterion).counts) if summary.models else []
        for k, model in enumerate(summary.models):
            counts = model.criterion(criterion).counts
            axis.bar([i + k * width for i in range(len(levels))], [counts.get(level, 0) for level in levels],
                     width=width, label=model.model_id)
        axis.set_xticks([i + width * (len(summary.models) - 1) / 2 for i in range(len(levels))], levels)
        axis.set_title(f"{criterion} scores")
        axis.set_xlabel("score")
    axes[0][0].set_ylabel("answers")
    axes[0][-1].legend(fontsize=8)
    return _png(figure)


Figure = tuple[Optional[float], Optional[list[float]]]  # a mean or rate with its 95% interval


def _category_panels(summary: EvaluationSummary) -> list[tuple[str, Any]]:
    """(title, the figure of a model's category) of each panel: the first criterion, the first metric, the checks."""
    panels: list[tuple[str, Any]] = []
    if summary.criteria:
        first = summary.criteria[0]
        panels.append((f"{first} (judge)", lambda c: next(((k.mean, k.ci) for k in c.criteria if k.name == first),
                                                          (None, None))))
    if summary.metrics:
        metric = summary.metrics[0]
        panels.append((metric, lambda c: next(((m.mean, m.ci) for m in c.metrics if m.name == metric), (None, None))))
    if any(c.checks for s in summary.models for c in s.categories):
        panels.append(("answers passing every check",
                       lambda c: (c.checks.passed.rate, c.checks.passed.ci) if c.checks else (None, None)))
    return panels


def categories_png(summary: EvaluationSummary) -> Optional[bytes]:
    """Models by category, one panel per score (the first criterion, the first metric, the checks): each model's
    figure per category with its 95% interval; None without categories."""
    panels = _category_panels(summary)
    if not summary.categories or not panels:
        return None
    plt = _pyplot()
    figure, axes = plt.subplots(1, len(panels), figsize=(max(4.5, 1.1 * len(summary.categories) + 2) * len(panels), 3.4),
                                squeeze=False)
    width = 0.8 / max(1, len(summary.models))
    for axis, (title, figure_of) in zip(axes[0], panels):
        for k, model in enumerate(summary.models):
            by_category = {c.category: figure_of(c) for c in model.categories}
            for i, category in enumerate(summary.categories):
                value, ci = by_category.get(category, (None, None))
                if value is None:
                    continue
                low, high = ci or [value, value]
                axis.bar(i + k * width, value, width=width, color=f"C{k}", label=_label(model.model_id),
                         yerr=[[value - low], [high - value]], capsize=3)
        axis.set_xticks([i + width * (len(summary.models) - 1) / 2 for i in range(len(summary.categories))],
                        summary.categories, fontsize=7, rotation=20)
        axis.set_title(title, fontsize=9)
        if title != panels[0][0] or not summary.criteria:  # a metric or a rate: 0 to 1
            axis.set_ylim(0, 1.05)
    handles, labels = axes[0][0].get_legend_handles_labels()
    shown = dict(zip(labels, handles))  # one entry a model, whichever panel drew it first
    for axis in axes[0][1:]:
        for handle, label in zip(*axis.get_legend_handles_labels()):
            shown.setdefault(label, handle)
    axes[0][0].legend(shown.values(), shown.keys(), fontsize=7)
    return _png(figure)
