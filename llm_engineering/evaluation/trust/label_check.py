"""Asking the judge about exactly the labelled answers, so its verdicts can be set beside the human labels.

Pointwise labels are scored as the run's answers are (`scoring.score_answers`, the rubric's prompt with the
row's instruction and reference, found by the label's id); pairwise labels are compared as models' answers
are (`pairwise.pairwise_messages`, in both orders). Both go through `ask_judge`, with the judge cache, so a
repeated run asks nothing. The report itself is `label_agreement`'s.
"""

from __future__ import annotations

import logging

from dataclasses import replace

from datasets import Dataset

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.judging.judge import Judge
from llm_engineering.evaluation.trust.label_agreement import check_labels_fit, pairwise_report, pointwise_report
from llm_engineering.evaluation.stored.labels import LabelAgreement
from llm_engineering.evaluation.trust.labels import Labels, LabelsError
from llm_engineering.evaluation.judging.pairwise import ask_both_orders
from llm_engineering.evaluation.judging.scoring import score_answers

logger = logging.getLogger(__name__)
LABELLED = "labels"  # the model id of the labelled answers, as the scoring step sees them


def _row_of_each_label(rows: Dataset, labels: Labels) -> list[int]:
    """The run's row of each label, by id; labels naming ids the run lacks are an error naming them."""
    position = {str(row_id): k for k, row_id in enumerate(rows[col.ID])}
    unknown = list(dict.fromkeys(r.id for r in labels.rows if r.id not in position))
    if unknown:
        shown = ", ".join(map(repr, unknown[:10])) + (f" and {len(unknown) - 10} more" if len(unknown) > 10 else "")
        known = ", ".join(map(repr, list(position)[:5]))
        raise LabelsError(f"labels name {len(unknown)} id(s) that are not rows of this run: {shown}. Label rows of the "
                          f"run's test split (its ids: {known}...), or run on the rows they name (check --limit and "
                          f"--dataset)")
    return [position[r.id] for r in labels.rows]


def _pointwise(rows: Dataset, labels: Labels, at: list[int], judge: Judge) -> LabelAgreement:
    # One verdict scores every criterion: each labelled answer is judged once, however many criteria it has.
    labelled = labels.pointwise_rows
    answers = list(dict.fromkeys((at[i], r.answer) for i, r in enumerate(labelled)))
    ids, instructions = rows[col.ID], rows[col.INSTRUCTION]
    data = {col.ID: [str(ids[k]) for k, _ in answers], col.INSTRUCTION: [instructions[k] for k, _ in answers],
            col.ANSWER: [answer for _, answer in answers], col.MODEL_ID: [LABELLED] * len(answers)}
    for name in (col.REFERENCE, col.HISTORY):  # a turn of a conversation is judged after the conversation before it
        if name in rows.column_names:
            values = rows[name]
            data[name] = [values[k] for k, _ in answers]
    # The first judge only: labels measure one judge (a jury's members each have their own agreement).
    scored = score_answers(Dataset.from_dict(data), replace(judge, backends=(judge.backend,))).to_list()
    verdict = {key: row for key, row in zip(answers, scored)}
    picked = [verdict[(at[i], r.answer)] for i, r in enumerate(labelled)]
    problems = [v[col.EXPECTED_PROBLEM] for v in picked if v[col.EXPECTED_PROBLEM]]
    report = pointwise_report(
        labels, judge.rubric, judge.backend.judge_id, scores=[v[col.score(r.criterion)] for v, r in zip(picked, labelled)],
        expected=[v[col.expected(r.criterion)] for v, r in zip(picked, labelled)],
        errors=[v[col.JUDGE_ERROR] for v in picked], expected_problem=problems[0] if problems else None)
    fresh = [v for v in scored if not v[col.JUDGE_CACHED]]
    tokens = sum((v[col.JUDGE_PROMPT_TOKENS] or 0) + (v[col.JUDGE_COMPLETION_TOKENS] or 0) for v in fresh)
    return report.model_copy(update={"judge_calls": len(scored), "judge_tokens": tokens})


def _pairwise(rows: Dataset, labels: Labels, at: list[int], judge: Judge) -> LabelAgreement:
    references = rows[col.REFERENCE] if col.REFERENCE in rows.column_names else [None] * len(rows)
    instructions = rows[col.INSTRUCTION]
    winners, replies = ask_both_orders(judge, [(instructions[k], r.answer_a, r.answer_b, references[k])
                                               for k, r in zip(at, labels.pairwise_rows)])
    report = pairwise_report(labels, judge.rubric, judge.backend.judge_id, in_order=[w for w, _ in winners[0::2]],
                             swapped=[w for w, _ in winners[1::2]],
                             errors=[a[1] or b[1] for a, b in zip(winners[0::2], winners[1::2])])
    tokens = sum(r.prompt_tokens + r.completion_tokens for r in replies if not r.cached)
    return report.model_copy(update={"judge_calls": len(replies), "judge_tokens": tokens})


def judge_labels(rows: Dataset, labels: Labels, judge: Judge) -> LabelAgreement:
    """The judge's verdicts on exactly the labelled answers, beside the labels and the baselines.

    `rows` are the run's rows (any model's answers: they carry each id's instruction and reference).
    """
    check_labels_fit(labels, judge.rubric)
    at = _row_of_each_label(rows, labels)
    if labels.kind == "pointwise":
        report = _pointwise(rows, labels, at, judge)
    else:
        report = _pairwise(rows, labels, at, judge)
    for c in report.criteria:
        logger.info("Labels, %s: %s", c.criterion, c.verdict)
    if report.pairwise:
        logger.info("Labels: %s", report.pairwise.verdict)
    return report
