"""Asking the judge about exactly the labelled answers, so its verdicts can be set beside the human labels.

Pointwise labels are scored as the run's answers are (`scoring.score_answers`, the rubric's prompt with the
row's instruction and reference, found by the label's id); pairwise labels are compared as models' answers
are (`pairwise.pairwise_messages`, in both orders). A labelled answer to a turn of a conversation is judged after
the conversation before it: its own model's earlier answers, found by its id and exact text among every model's rows
(the first model's conversation for an answer no model gave). Both go through `ask_judge`, with the judge cache, so a
repeated run asks nothing. The report itself is `label_agreement`'s.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace

from datasets import Dataset

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.judging.conversation import History, turn_pair
from llm_engineering.evaluation.judging.judge import Judge
from llm_engineering.evaluation.judging.pairwise import ask_both_orders
from llm_engineering.evaluation.judging.scoring import calls_per_answer, score_answers
from llm_engineering.evaluation.stored.labels import LabelAgreement
from llm_engineering.evaluation.trust.label_agreement import check_labels_fit, pairwise_report, pointwise_report
from llm_engineering.evaluation.trust.labels import Labels, LabelsError

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


class _Histories:
    """The conversation before each answer of every model's rows, by (id, exact answer)."""

    def __init__(self, rows: Dataset, every_model: Sequence[Dataset]):
        self.first = rows[col.HISTORY] if col.HISTORY in rows.column_names else [None] * len(rows)
        self.by_answer: dict[tuple[str, str], History] = {}
        for dataset in [rows, *every_model]:
            if col.HISTORY in dataset.column_names:
                for row_id, answer, history in zip(dataset[col.ID], dataset[col.ANSWER], dataset[col.HISTORY]):
                    self.by_answer.setdefault((str(row_id), answer or ""), history)

    def of(self, k: int, row_id: str, answer: str) -> History:
        """The conversation before `answer` to row `k` (id `row_id`)."""
        return self.by_answer.get((row_id, answer), self.first[k])


def _pointwise(rows: Dataset, labels: Labels, at: list[int], judge: Judge, histories: _Histories) -> LabelAgreement:
    # One verdict scores every criterion: each labelled answer is judged once, however many criteria it has.
    labelled = labels.pointwise_rows
    answers = list(dict.fromkeys((at[i], r.answer) for i, r in enumerate(labelled)))
    ids, instructions = rows[col.ID], rows[col.INSTRUCTION]
    data = {col.ID: [str(ids[k]) for k, _ in answers], col.INSTRUCTION: [instructions[k] for k, _ in answers],
            col.ANSWER: [answer for _, answer in answers], col.MODEL_ID: [LABELLED] * len(answers)}
    if col.REFERENCE in rows.column_names:
        references = rows[col.REFERENCE]
        data[col.REFERENCE] = [references[k] for k, _ in answers]
    if col.HISTORY in rows.column_names:  # a turn of a conversation is judged after the conversation before it
        data[col.HISTORY] = [histories.of(k, str(ids[k]), answer) for k, answer in answers]
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
    return report.model_copy(update={"judge_calls": len(scored) * calls_per_answer(judge.rubric), "judge_tokens": tokens})


def _pairwise(rows: Dataset, labels: Labels, at: list[int], judge: Judge, histories: _Histories) -> LabelAgreement:
    references = rows[col.REFERENCE] if col.REFERENCE in rows.column_names else [None] * len(rows)
    instructions = rows[col.INSTRUCTION]
    pairs = [(*turn_pair(instructions[k], r.answer_a, r.answer_b, histories.of(k, r.id, r.answer_a),
                         histories.of(k, r.id, r.answer_b)), references[k]) for k, r in zip(at, labels.pairwise_rows)]
    winners, replies = ask_both_orders(judge, pairs)
    report = pairwise_report(labels, judge.rubric, judge.backend.judge_id, in_order=[w for w, _ in winners[0::2]],
                             swapped=[w for w, _ in winners[1::2]],
                             errors=[a[1] or b[1] for a, b in zip(winners[0::2], winners[1::2])])
    tokens = sum(r.prompt_tokens + r.completion_tokens for r in replies if not r.cached)
    return report.model_copy(update={"judge_calls": len(replies), "judge_tokens": tokens})


def judge_labels(rows: Dataset, labels: Labels, judge: Judge, *, every_model: Sequence[Dataset] = ()) -> LabelAgreement:
    """The judge's verdicts on exactly the labelled answers, beside the labels and the baselines.

    `rows` are the run's rows (any model's answers: they carry each id's instruction and reference); `every_model`,
    every model's rows, whose conversations before their answers are those of the labelled answers they gave.
    """
    check_labels_fit(labels, judge.rubric)
    at = _row_of_each_label(rows, labels)
    histories = _Histories(rows, every_model)
    if labels.kind == "pointwise":
        report = _pointwise(rows, labels, at, judge, histories)
    else:
        report = _pairwise(rows, labels, at, judge, histories)
    for c in report.criteria:
        logger.info("Labels, %s: %s", c.criterion, c.verdict)
    if report.pairwise:
        logger.info("Labels: %s", report.pairwise.verdict)
    return report
