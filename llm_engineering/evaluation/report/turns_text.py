"""Conversations in the report: each turn's scores per model, and each turn's pairwise win rate."""

from __future__ import annotations

from llm_engineering.evaluation.rates import bootstrap_ci, rate_with_ci
from llm_engineering.evaluation.report.text import criterion_cell
from llm_engineering.evaluation.report.trust_text import pairwise_name
from llm_engineering.evaluation.stored.summary import EvaluationSummary

TURNS_TITLE = "Per turn of the conversations"
TURNS_METHOD = ("Each turn's answers judged with the conversation before them (the model's own earlier answers in it); "
                "the table above is over every turn. Later turns build on the model's earlier answers, so a model's "
                "later turns carry its earlier mistakes.")
PAIRWISE_TURNS_HEADER = ["model A vs model B", "turn", "win rate of A (95% CI)", "pairs judged"]


def turn_header(summary: EvaluationSummary) -> list[str]:
    return ["model", "turn", "scored"] + [f"{name} (95% CI)" for name in summary.criteria]


def turn_rows(summary: EvaluationSummary) -> list[list[str]]:
    """Per model (in ranking order) and turn: the answers scored and each criterion's mean (none without turns)."""
    by_id = {s.model_id: s for s in summary.models}
    return [[model_id, str(t.turn), f"{t.scored}/{t.rows}", *(criterion_cell(c) for c in t.criteria)]
            for model_id in summary.ranking for t in by_id[model_id].turns]


def pairwise_turn_rows(summary: EvaluationSummary) -> list[list[str]]:
    """Per pairwise comparison and turn, where pairs answer several turns: the first model's win rate."""
    rows = []
    for p in summary.pairwise:
        turns = sorted({r.turn for r in p.details})
        for turn in turns if len(turns) > 1 else []:
            points = [r.points for r in p.details if r.turn == turn and r.points is not None]
            win_rate = round(sum(points) / len(points), 4) if points else None
            rows.append([pairwise_name(p), str(turn), rate_with_ci(win_rate, bootstrap_ci(points)), str(len(points))])
    return rows

