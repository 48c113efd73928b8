"""Scoring under a checklist rubric (`judging.checklist`): the checklist criterion from its items, one one-token reply
per item; the rubric's other criteria (style) from one short reply that holds their scores alone, with their
probabilities. Each answer's `Reading` is what a verdict's would be, so the rows, the report and the checks read it
alike; the items and their probabilities go to the row too (`<criterion>_items`).
"""

from __future__ import annotations

import json
from typing import Optional, Sequence

from datasets import Dataset

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.judging.before_analysis import Asked, probe_scores
from llm_engineering.evaluation.judging.checklist import (
    YES_NO, ChecklistScore, checklist_score, grade_messages, scores_messages, yes_no_schema, yes_probability,
)
from llm_engineering.evaluation.judging.conversation import conversation_text
from llm_engineering.evaluation.judging.judge import Judge
from llm_engineering.evaluation.judging.rubric import Rubric
from llm_engineering.evaluation.judging.score_probs import ScoreDistribution
from llm_engineering.evaluation.judging.transport import JudgeBackend, JudgeReply, ask_judge
from llm_engineering.evaluation.judging.verdict import CriterionVerdict, ParsedVerdict


def _others(rubric: Rubric) -> Optional[Rubric]:
    """The rubric of the criteria besides the checklist's, each score first (None: it has none)."""
    assert rubric.checklist is not None
    rest = [c for c in rubric.criteria if c.name != rubric.checklist.criterion]
    return rubric.model_copy(update={"criteria": rest, "checklist": None, "score_first": True}) if rest else None


def _asked_text(asked: Asked) -> str:
    """What the judge reads as the instruction: a turn of a conversation with the conversation before it."""
    instruction, _, _, history = asked
    return conversation_text(history, instruction) if history else instruction


def _merged(replies: Sequence[JudgeReply]) -> JudgeReply:
    """One reply's bookkeeping for all the calls of one answer: tokens, seconds and calls summed."""
    texts = [r.text for r in replies]
    errors = [r.error for r in replies if r.error]
    return JudgeReply(text=json.dumps(texts), error=errors[0] if errors and None in texts else None,
                      prompt_tokens=sum(r.prompt_tokens for r in replies),
                      completion_tokens=sum(r.completion_tokens for r in replies),
                      cached=all(r.cached for r in replies), seconds=sum(r.seconds for r in replies),
                      calls=sum(r.calls for r in replies), logprobs=[], logprobs_problem=None)


def grade_checklists(judge: Judge, backend: JudgeBackend, asked: Sequence[Asked],
                     checklists: Sequence[Sequence[str]]) -> list[tuple[ChecklistScore, list[JudgeReply]]]:
    """Each answer's checklist score, from one one-token reply per item (asked all at once, each answer's items
    together), and those replies."""
    criterion = judge.rubric.checklist.criterion if judge.rubric.checklist else judge.rubric.names[0]
    values = judge.rubric.criterion(criterion).values
    prompts = [grade_messages(_asked_text(a), a[1], item) for a, items in zip(asked, checklists) for item in items]
    replies = ask_judge(backend, prompts, cache=judge.cache, is_valid=lambda text: text.strip() in YES_NO,
                        reply_schema=yes_no_schema())
    out, at = [], 0
    for items in checklists:
        own = replies[at:at + len(items)]
        at += len(items)
        read = [yes_probability(reply) for reply in own]
        out.append((checklist_score(items, [p for p, _ in read], values, [why for _, why in read]), list(own)))
    return out


def checklist_readings(judge: Judge, backend: JudgeBackend, asked: Sequence[Asked], checklists: Sequence[Sequence[str]],
                       first_only: bool = False) -> list[tuple[ParsedVerdict, dict[str, ScoreDistribution], JudgeReply,
                                                               ChecklistScore]]:
    """Per answer: its verdict (the checklist criterion's level, with the items in words as its analysis; the other
    criteria's scores unless `first_only`), the distributions (the checklist's expected score; the others' from their
    reply), the calls' merged bookkeeping, and the checklist score itself."""
    rubric = judge.rubric
    assert rubric.checklist is not None
    criterion = rubric.checklist.criterion
    graded = grade_checklists(judge, backend, asked, checklists)
    others = None if first_only else _others(rubric)
    probed: list[tuple[dict[str, ScoreDistribution], Optional[JudgeReply]]] = [({}, None)] * len(asked)
    if others is not None:  # asked with the items' opening, so the prefix cache serves it
        probed = list(probe_scores(backend, others, len(others.criteria), asked, cache=judge.cache,
                                   messages=[scores_messages(others, _asked_text(a), a[1]) for a in asked]))
    out = []
    for (score, replies), (distributions, reply) in zip(graded, probed):
        verdicts: dict[str, CriterionVerdict] = {}
        error = score.problem
        if score.level is not None:
            verdicts[criterion] = CriterionVerdict(score.level, score.analysis())
        for name, distribution in distributions.items():
            if distribution.probabilities is None:
                error = error or f"{name}: {distribution.problem}"
                continue
            level = others.criterion(name).values[max(range(len(distribution.probabilities)),  # type: ignore[union-attr]
                                                      key=distribution.probabilities.__getitem__)]
            verdicts[name] = CriterionVerdict(level, "")
        calls = replies + ([reply] if reply is not None else [])
        complete = error is None and len(verdicts) == (1 if first_only else len(rubric.criteria))
        parsed = ParsedVerdict(verdicts if complete else None, None if complete else error or "no verdict")
        checklist = ScoreDistribution(None, score.expected, score.problem)
        out.append((parsed, {criterion: checklist, **distributions}, _merged(calls), score))
    return out


def row_checklists(dataset: Dataset, indices: Sequence[int]) -> list[list[str]]:
    """The items of each row at `indices` (the dataset's `checklist` column), [] where a row or the dataset has none."""
    items = dataset[col.CHECKLIST] if col.CHECKLIST in dataset.column_names else [None] * len(dataset)
    return [items[i] or [] for i in indices]
