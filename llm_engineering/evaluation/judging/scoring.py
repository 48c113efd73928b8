"""Scoring a dataset of answers: the judge's verdict columns, per criterion of the rubric, on every row.

Each judge's reply is read (`Reading`: parsed, with its score distributions) and becomes the row's verdict record
(`verdict_record.VerdictRecord`, which lays out the columns it is stored in).

Errors stay on their rows (a failed verdict is counted, never dropped or scored), and with
`only_failed` a previous scoring is completed instead of redone. With a jury, every judge is
asked on its own (its own cache entries) and the row holds the aggregate and each judge's score.
"""

from __future__ import annotations

import json
import logging
import math
from dataclasses import dataclass, field, replace
from typing import Literal, Optional, Sequence

from datasets import Dataset

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.judging.agreement import jury_aggregate
from llm_engineering.evaluation.judging.before_analysis import Asked, probe_scores
from llm_engineering.evaluation.judging.checklist import ChecklistScore
from llm_engineering.evaluation.judging.checklist_scoring import checklist_readings, row_checklists
from llm_engineering.evaluation.judging.judge import Judge
from llm_engineering.evaluation.judging.rubric import Rubric, judge_messages
from llm_engineering.evaluation.judging.score_probs import ScoreDistribution, score_distribution
from llm_engineering.evaluation.judging.transport import JudgeBackend, JudgeReply, ReplySchema, ask_judge
from llm_engineering.evaluation.judging.verdict import ParsedVerdict, first_score_schema, parse_verdict, verdict_checker
from llm_engineering.evaluation.judging.verdict_record import CriterionRecord, VerdictRecord, with_verdicts
from llm_engineering.evaluation.stored.judge_id import jury_id

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Reading:
    """One judge's reply to one row, parsed, with the score distribution of each criterion."""

    reply: JudgeReply
    verdict: ParsedVerdict
    distributions: dict[str, ScoreDistribution]
    checklist: Optional[ChecklistScore] = None  # under a checklist rubric: its items and their probabilities
    # under a checklist rubric: why each other criterion has no score while the checklist's verdict stands
    criterion_errors: dict[str, str] = field(default_factory=dict)

    @property
    def expected_problem(self) -> Optional[str]:
        if self.verdict.criteria is None:
            return None
        if self.reply.logprobs is None:
            return self.reply.logprobs_problem or "the judge backend returned no token logprobs"
        return next((f"{name}: {d.problem}" for name, d in self.distributions.items() if d.problem), None)


def read_reply(rubric: Rubric, reply: JudgeReply, first_score_only: bool = False) -> Reading:
    """Parse a reply and read, where the backend gave logprobs, each criterion's score distribution
    (`first_score_only`: a reply asked with `first_score_schema`, of which only the first score is read)."""
    verdict = parse_verdict(rubric, reply.text, first_score_only) if reply.text is not None else ParsedVerdict(None, reply.error)
    distributions = {}
    if verdict.criteria is not None and reply.logprobs is not None and reply.text is not None:  # a verdict has a text
        distributions = {
            c.name: score_distribution(reply.text, reply.logprobs, criterion=c.name, values=c.values,
                                        score=verdict.criteria[c.name].score)
            for c in rubric.criteria if c.name in verdict.criteria
        }
    return Reading(reply, verdict, distributions)


def calls_per_answer(rubric: Rubric) -> int:
    """Judge calls per answer scored: its verdict, and the probe of its scores before the analysis where the rubric
    asks for one (`with_scores_before_analysis`; not asked of a backend that gives no token logprobs)."""
    return 1 + rubric.expected_before_analysis


def with_scores_before_analysis(judge: Judge, backend: JudgeBackend, readings: list[Reading], asked: Sequence[Asked],
                                count: Optional[int] = None) -> list[Reading]:
    """`readings` with the first `count` criteria's distributions (default all) read before the analysis
    (`judging.before_analysis`), where the rubric asks so; the probes' tokens and seconds are added to the replies'.
    Only the verdicts that came with token logprobs are probed: a probe of the others would read nothing (their rows
    say why), and a failed verdict has nothing to rank."""
    probed = [k for k, r in enumerate(readings) if r.verdict.criteria and r.reply.logprobs]
    if not judge.rubric.expected_before_analysis or not probed:
        return readings
    probes = probe_scores(backend, judge.rubric, count or len(judge.rubric.criteria), [asked[k] for k in probed],
                          cache=judge.cache)
    out = list(readings)
    for k, (distributions, probe) in zip(probed, probes):
        reply = out[k].reply
        out[k] = replace(out[k], distributions={**out[k].distributions, **distributions}, reply=replace(
            reply, prompt_tokens=reply.prompt_tokens + probe.prompt_tokens, seconds=reply.seconds + probe.seconds,
            completion_tokens=reply.completion_tokens + probe.completion_tokens, cached=reply.cached and probe.cached,
            calls=reply.calls + probe.calls))
    return out


def judge_readings(judge: Judge, backend: JudgeBackend, asked: Sequence[Asked], first_score_only: bool = False,
                   checklists: Optional[Sequence[Sequence[str]]] = None) -> list[Reading]:
    """Each answer's reading by `backend`: its verdict (`first_score_only`: a reply that ends at the first score), with
    the probe of its scores before the analysis where the rubric asks for one; under a checklist rubric, its items'
    grading (`checklists`: each answer's items) and the other criteria's scores."""
    rubric = judge.rubric
    if rubric.checklist is not None:
        return [Reading(r.reply, r.verdict, r.distributions, r.score, r.criterion_errors) for r in checklist_readings(
            judge, backend, asked, checklists or [[] for _ in asked], first_score_only)]
    schema = ReplySchema("first_score", first_score_schema(rubric, judge.max_analysis_chars)) if first_score_only else None
    replies = ask_judge(backend, [judge_messages(rubric, *a) for a in asked], cache=judge.cache,
                        is_valid=verdict_checker(rubric, first_score_only), reply_schema=schema)
    own = [read_reply(rubric, r, first_score_only) for r in replies]
    return with_scores_before_analysis(judge, backend, own, asked, 1 if first_score_only else None)


def _single_record(rubric: Rubric, judge_id: str, reading: Reading) -> VerdictRecord:
    criteria, reply = reading.verdict.criteria, reading.reply
    records = {}
    for name in rubric.names:
        distribution = reading.distributions.get(name)
        verdict = criteria.get(name) if criteria else None  # a first-score reply holds the first criterion only
        records[name] = CriterionRecord(
            score=verdict.score if verdict else None, analysis=verdict.analysis if verdict else None,
            expected=distribution.expected if distribution else None,
            probabilities=distribution.probabilities if distribution else None, error=reading.criterion_errors.get(name))
    return VerdictRecord(
        judge_model=judge_id, criteria=records, items=reading.checklist.items if reading.checklist else None,
        error=reading.verdict.error, expected_problem=reading.expected_problem, raw=reply.text,
        prompt_tokens=reply.prompt_tokens, completion_tokens=reply.completion_tokens, cached=reply.cached,
        seconds=round(reply.seconds, 4), calls=reply.calls)


def _mean(values: list[Optional[float]]) -> Optional[float]:
    known = [v for v in values if v is not None]
    return round(sum(known) / len(known), 6) if known and len(known) == len(values) else None


def _jury_record(
    rubric: Rubric, judge_ids: list[str], readings: list[Reading], aggregate: Literal["mean", "majority"]
) -> VerdictRecord:
    """One verdict from several judges: the aggregate score, each judge's, and the mean expected score
    (only where every judge that answered has one)."""
    answered = [(judge, r) for judge, r in zip(judge_ids, readings) if r.verdict.criteria]
    records = {}
    for name in rubric.names:
        scores = [r.verdict.criteria[name].score if r.verdict.criteria and name in r.verdict.criteria else None
                  for r in readings]
        expected = [r.distributions[name].expected if name in r.distributions else None for r in readings]
        voted = jury_aggregate([[s] for s in scores], aggregate)[0]
        mean_expected = _mean([e for e, s in zip(expected, scores) if s is not None])
        probabilities = [r.distributions[name].probabilities for _, r in answered if name in r.distributions]
        records[name] = CriterionRecord(
            score=None if voted is None else math.floor(voted + 0.5),
            analysis="\n\n".join(f"[{j}] {criteria[name].analysis}" for j, r in answered
                                  if (criteria := r.verdict.criteria) and name in criteria) or None,
            expected=mean_expected,
            probabilities=([round(sum(p) / len(p), 6) for p in zip(*probabilities)]
                           if mean_expected is not None and len(probabilities) == len(answered) else None),
            jury_scores=scores, jury_expected=expected)
    errors = [f"{j}: {r.verdict.error}" for j, r in zip(judge_ids, readings) if r.verdict.error]
    problems = [f"{j}: {r.expected_problem}" for j, r in answered if r.expected_problem]
    return VerdictRecord(
        judge_model=jury_id(judge_ids), criteria=records,
        error="; ".join(errors) if not answered else None,
        expected_problem="; ".join(problems) or None,
        raw=json.dumps({j: r.reply.text for j, r in zip(judge_ids, readings)}, ensure_ascii=False),
        prompt_tokens=sum(r.reply.prompt_tokens for r in readings),
        completion_tokens=sum(r.reply.completion_tokens for r in readings),
        cached=all(r.reply.cached for r in readings),
        seconds=round(sum(r.reply.seconds for r in readings), 4),
        calls=sum(r.reply.calls for r in readings),
    )


def score_answers(dataset: Dataset, judge: Judge, only_failed: bool = False, first_score_only: bool = False) -> Dataset:
    """Add the verdict columns of the judge's rubric to every answer; errors stay on their rows.

    A jury's judges are each asked on their own, and the rows hold the jury's `aggregate`.
    With `only_failed`, rows of a previous scoring that hold a valid verdict are kept as they
    are and only the others are judged. `first_score_only`: each judge is asked for a reply that ends at the
    first criterion's score (`first_score_schema`: the same score, without the rest of the verdict), and the
    other criteria's columns stay empty. With a cache, a reply already given for the same
    prompt, judge and sampling parameters is reused, and each new valid reply is stored at
    once, so an interrupted run resumes where it stopped.
    """
    judges, rubric = judge.backends, judge.rubric
    previous = [VerdictRecord.from_row(r, rubric, judge.is_jury) for r in dataset.to_list()] if only_failed else []
    keep = {i for i, record in enumerate(previous) if record.scored}
    # A row that was never generated has nothing to judge: it stays a row error, not a score of 1.
    reasons = dataset[col.FINISH_REASON] if col.FINISH_REASON in dataset.column_names else [None] * len(dataset)
    not_generated = {i for i, reason in enumerate(reasons) if reason == col.PROMPT_TOO_LONG}
    todo = [i for i in range(len(dataset)) if i not in keep and i not in not_generated]
    logger.info("Judging %d answers with %s (rubric %s): %d kept, %d not generated", len(dataset),
                " + ".join(j.judge_id for j in judges), rubric.name, len(keep), len(not_generated))
    references = dataset[col.REFERENCE] if col.REFERENCE in dataset.column_names else [None] * len(dataset)
    # A turn of a conversation: the judge reads the conversation so far, the model's own earlier answers in it.
    histories = dataset[col.HISTORY] if col.HISTORY in dataset.column_names else [None] * len(dataset)
    instructions, answers = dataset[col.INSTRUCTION], dataset[col.ANSWER]
    asked: list[Asked] = [(instructions[i], answers[i], references[i], histories[i]) for i in todo]
    checklists = row_checklists(dataset, todo)
    readings = [dict(zip(todo, judge_readings(judge, backend, asked, first_score_only, checklists))) for backend in judges]
    unanswered = JudgeReply(None, "not judged: the prompt is longer than engine.max_model_len, so no answer was generated")
    judge_ids = [j.judge_id for j in judges]
    if len(set(judge_ids)) < len(judge_ids):  # one model twice (other sampling): number them
        judge_ids = [f"{judge_id}#{k}" for k, judge_id in enumerate(judge_ids, 1)]

    def record(i: int) -> VerdictRecord:
        if i in keep:
            return previous[i]
        per_judge = [read_reply(rubric, unanswered) if i in not_generated else r[i] for r in readings]
        if len(judges) == 1:
            return _single_record(rubric, judge_ids[0], per_judge[0])
        return _jury_record(rubric, judge_ids, per_judge, judge.aggregate)

    records = [record(i) for i in range(len(dataset))]
    failures = sum(r.error is not None for r in records)
    if failures:
        logger.warning("%d of %d answers have no valid verdict; kept as row errors", failures, len(records))
    return with_verdicts(dataset, records, rubric, jury=judge.is_jury)
