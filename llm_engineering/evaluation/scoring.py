"""Scoring a dataset of answers: the judge's verdict columns added to every row.

Errors stay on their rows (a failed verdict is counted, never dropped or scored), and with
`only_failed` a previous scoring is completed instead of redone.
"""

from __future__ import annotations

import logging
from typing import Any, Optional

from datasets import Dataset, Value

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.judge_cache import JudgeCache
from llm_engineering.evaluation.judge_transport import JudgeBackend, JudgeReply, ask_judge
from llm_engineering.evaluation.rubric import ParsedVerdict, is_valid_verdict, judge_messages, parse_verdict

logger = logging.getLogger(__name__)


def _valid_rows(dataset: Dataset) -> set[int]:
    if col.JUDGE_ERROR not in dataset.column_names:
        return set()
    return {
        i for i, (error, accuracy, style) in enumerate(
            zip(dataset[col.JUDGE_ERROR], dataset[col.ACCURACY_SCORE], dataset[col.STYLE_SCORE])
        )
        if error is None and accuracy is not None and style is not None
    }


# Explicit types, so a column that is all None (every reply failed) keeps its type.
JUDGE_COLUMNS = {
    col.JUDGE_MODEL: "string",
    col.ACCURACY_SCORE: "int32",
    col.ACCURACY_ANALYSIS: "string",
    col.STYLE_SCORE: "int32",
    col.STYLE_ANALYSIS: "string",
    col.JUDGE_ERROR: "string",
    col.JUDGE_RAW: "string",
    col.JUDGE_PROMPT_TOKENS: "int32",
    col.JUDGE_COMPLETION_TOKENS: "int32",
    col.JUDGE_CACHED: "bool",
}


def _judge_row(judge_id: str, reply: JudgeReply) -> dict[str, Any]:
    parsed = parse_verdict(reply.text) if reply.text is not None else ParsedVerdict(None, reply.error)
    verdict = parsed.verdict
    return {
        col.JUDGE_MODEL: judge_id,
        col.ACCURACY_SCORE: verdict.accuracy.score if verdict else None,
        col.ACCURACY_ANALYSIS: verdict.accuracy.analysis if verdict else None,
        col.STYLE_SCORE: verdict.style.score if verdict else None,
        col.STYLE_ANALYSIS: verdict.style.analysis if verdict else None,
        col.JUDGE_ERROR: parsed.error,
        col.JUDGE_RAW: reply.text,
        col.JUDGE_PROMPT_TOKENS: reply.prompt_tokens,
        col.JUDGE_COMPLETION_TOKENS: reply.completion_tokens,
        col.JUDGE_CACHED: reply.cached,
    }


def score_answers(
    dataset: Dataset,
    judge: JudgeBackend,
    cache: Optional[JudgeCache] = None,
    only_failed: bool = False,
) -> Dataset:
    """Add the judge's verdict columns to every answer; errors stay on their rows.

    With `only_failed`, rows of a previous scoring that hold a valid verdict are kept as they
    are and only the others are judged. With a cache, a reply already given for the same
    prompt, judge and sampling parameters is reused, and each new valid reply is stored at
    once, so an interrupted run resumes where it stopped.
    """
    keep = _valid_rows(dataset) if only_failed else set()
    previous = dataset.to_list() if keep else []
    # A row that was never generated has nothing to judge: it stays a row error, not a score of 1.
    reasons = dataset[col.FINISH_REASON] if col.FINISH_REASON in dataset.column_names else [None] * len(dataset)
    not_generated = {i for i, reason in enumerate(reasons) if reason == col.PROMPT_TOO_LONG}
    todo = [i for i in range(len(dataset)) if i not in keep and i not in not_generated]
    logger.info("Judging %d answers with %s: %d kept, %d not generated", len(dataset), judge.judge_id, len(keep),
                len(not_generated))
    asked = ask_judge(
        judge, [judge_messages(dataset[i][col.INSTRUCTION], dataset[i][col.ANSWER]) for i in todo],
        cache, is_valid_verdict,
    )
    replies = dict(zip(todo, asked))
    unanswered = JudgeReply(None, "not judged: the prompt is longer than engine.max_model_len, so no answer was generated")
    rows = [
        {name: previous[i].get(name) for name in JUDGE_COLUMNS} if i in keep
        else _judge_row(judge.judge_id, unanswered) if i in not_generated
        else _judge_row(judge.judge_id, replies[i])
        for i in range(len(dataset))
    ]
    failures = sum(row[col.JUDGE_ERROR] is not None for row in rows)
    if failures:
        logger.warning("%d of %d answers have no valid verdict; kept as row errors", failures, len(rows))
    evaluations = dataset.remove_columns([c for c in JUDGE_COLUMNS if c in dataset.column_names])
    for name, dtype in JUDGE_COLUMNS.items():
        evaluations = evaluations.add_column(name, [row[name] for row in rows], feature=Value(dtype))
    return evaluations
