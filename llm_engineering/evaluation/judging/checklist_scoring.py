"""Scoring under a checklist rubric (`judging.checklist`): the checklist criterion from its items, one one-token reply
per item; the rubric's other criteria (style) from one short reply that holds their scores alone, asked with the
rubric's own prompt (its system prompt and template, each score first: what the default rubric's probe asks), each
level the score the judge wrote, its expected score beside it. Each answer's `Reading` is what a verdict's would be, so
the rows, the report and the checks read it alike; the items and their probabilities go to the row too
(`<criterion>_items`).

Asked with a prompt of its own (the items' opening with the scales after the answer), the 1.5B judge wrote style 2 for
every one of 16 answers, its probabilities' most likely level too (expected 1.81-2.11); asked with the rubric's prompt,
it wrote 2 or 3 (11 and 5; expected 2.16-2.67). That prompt shares no prefix with the items' (one prompt in items + 1).

A failed reading of the other criteria keeps the checklist's verdict: those criteria are left without a score, each
with why (`Reading.criterion_errors`), and the row keeps its checklist score.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Optional, Sequence

from datasets import Dataset

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.judging.before_analysis import Asked, probe_scores, written_scores
from llm_engineering.evaluation.judging.checklist import (
    YES_NO,
    ChecklistScore,
    checklist_score,
    grade_messages,
    yes_no_schema,
    yes_probability,
)
from llm_engineering.evaluation.judging.conversation import conversation_text
from llm_engineering.evaluation.judging.judge import Judge
from llm_engineering.evaluation.judging.rubric import Rubric
from llm_engineering.evaluation.judging.score_probs import ScoreDistribution
from llm_engineering.evaluation.judging.transport import JudgeBackend, JudgeReply, ask_judge, choice_of
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
    replies = ask_judge(backend, prompts, cache=judge.cache, is_valid=lambda text: choice_of(text, YES_NO) is not None,
                        reply_schema=yes_no_schema())
    out, at = [], 0
    for items in checklists:
        own = replies[at:at + len(items)]
        at += len(items)
        out.append((checklist_score(items, [yes_probability(reply) for reply in own], values), list(own)))
    return out


@dataclass(frozen=True)
class ChecklistReading:
    """One answer's reading under a checklist rubric: its verdict (the checklist criterion's level with the items in
    words as its analysis, and the other criteria's written scores), the distributions, the calls' merged bookkeeping,
    the checklist score, and why each criterion left without a score has none."""

    verdict: ParsedVerdict
    distributions: dict[str, ScoreDistribution]
    reply: JudgeReply
    score: ChecklistScore
    criterion_errors: dict[str, str] = field(default_factory=dict)


def _other_verdicts(others: Rubric, reply: JudgeReply, distributions: dict[str, ScoreDistribution]
                    ) -> tuple[dict[str, CriterionVerdict], dict[str, ScoreDistribution], dict[str, str]]:
    """The other criteria's verdicts from the scores their reply wrote, their distributions (those of the criteria
    scored), and why each other criterion has no score."""
    written = written_scores(others, len(others.criteria), reply.text) or {}
    verdicts, kept, errors = {}, {}, {}
    for name in others.names:
        if name in written:
            verdicts[name] = CriterionVerdict(written[name], "")
            kept[name] = distributions[name]
        else:
            problem = distributions[name].problem if name in distributions else None
            errors[name] = f"no {name} score: {problem or reply.error or 'no reply'}"
    return verdicts, kept, errors


def checklist_readings(judge: Judge, backend: JudgeBackend, asked: Sequence[Asked], checklists: Sequence[Sequence[str]],
                       first_only: bool = False) -> list[ChecklistReading]:
    """Each answer's reading (`ChecklistReading`): the checklist criterion from its items; the other criteria's scores
    unless `first_only`."""
    rubric = judge.rubric
    assert rubric.checklist is not None
    criterion = rubric.checklist.criterion
    graded = grade_checklists(judge, backend, asked, checklists)
    others = None if first_only else _others(rubric)
    probed: list[tuple[dict[str, ScoreDistribution], Optional[JudgeReply]]] = [({}, None)] * len(asked)
    if others is not None:  # the rubric's own prompt, each score first (`before_analysis.probe_messages`)
        probed = list(probe_scores(backend, others, len(others.criteria), asked, cache=judge.cache))
    out = []
    for (score, replies), (distributions, reply) in zip(graded, probed):
        checklist = ScoreDistribution(score.probabilities, score.expected, score.problem)
        calls = replies + ([reply] if reply is not None else [])
        if score.level is None:
            out.append(ChecklistReading(ParsedVerdict(None, score.problem), {criterion: checklist}, _merged(calls), score))
            continue
        verdicts = {criterion: CriterionVerdict(score.level, score.analysis())}
        kept: dict[str, ScoreDistribution] = {}
        errors: dict[str, str] = {}
        if others is not None and reply is not None:
            more, kept, errors = _other_verdicts(others, reply, distributions)
            verdicts |= more
        out.append(ChecklistReading(ParsedVerdict(verdicts, None), {criterion: checklist, **kept}, _merged(calls), score,
                                    errors))
    return out


def row_checklists(dataset: Dataset, indices: Sequence[int]) -> list[list[str]]:
    """The items of each row at `indices` (the dataset's `checklist` column), [] where a row or the dataset has none."""
    items = dataset[col.CHECKLIST] if col.CHECKLIST in dataset.column_names else [None] * len(dataset)
    return [items[i] or [] for i in indices]
