"""The judge's report card, run: right and worse answers built from the split, judged, and set beside the
judge-free rules (the figures themselves are `trust.judge_check`'s).

For a fixed sample of rows the judge scores, with the scoring prompt, each row's right answer (the reference;
for a judge that sees the reference, the reference reworded by the judge, `trust.rewording`) and, per tier
(`trust.tiers`), a worse answer. The calls go through the scoring cache and retries.
"""

from __future__ import annotations

import logging
from typing import Any, Optional

import numpy as np
from datasets import Dataset

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.config import JudgeCheckConfig
from llm_engineering.evaluation.judging.before_analysis import Asked
from llm_engineering.evaluation.judging.judge import Judge
from llm_engineering.evaluation.judging.checklist_scoring import row_checklists
from llm_engineering.evaluation.judging.scoring import judge_readings
from llm_engineering.evaluation.rates import sample_rows
from llm_engineering.evaluation.trust import tiers as check_tiers
from llm_engineering.evaluation.trust.judge_check import judge_check_from_pairs
from llm_engineering.evaluation.stored.trust import JudgeCheck, JudgeCheckPair
from llm_engineering.evaluation.trust.rewording import reworded_references
from llm_engineering.evaluation.trust.rules import rule_orders

logger = logging.getLogger(__name__)


def _worse_answers(
    tier: str, sample: list[int], *, instructions: list[str], references: list[str], right: dict[int, str], seed: int,
    embeddings: Optional[np.ndarray],
) -> dict[int, tuple[str, str]]:
    """Sampled row -> (the worse answer of `tier`, the id-like label of where it came from); `right`: each sampled
    row's right answer, whose length the truncated tier keeps."""
    if tier == "mismatch":
        return {i: (references[m], str(m)) for i, m in zip(sample, check_tiers.mismatched(sample, seed))}
    if tier == "same_topic":
        assert embeddings is not None  # run_judge_check leaves the tier out without embeddings
        chosen = check_tiers.same_topic(embeddings, sample, instructions=instructions, references=references,
                                        right=[right[i] for i in sample])
        return {i: (references[m], str(m)) for i, m in zip(sample, chosen)}
    if tier == "truncated":
        return {i: (check_tiers.unfinished(instructions[i], references[i], len(right[i])), "truncated") for i in sample}
    # The right answer itself with its names and numbers swapped: the pair differs in those alone. (Made from the
    # reference, it would be worded like the reference the judge is shown, while the right answer is reworded.)
    others = {i: [r for j, r in enumerate(references) if j != i] for i in sample}
    worse = {i: check_tiers.corrupted(right[i], others[i], seed + i, instructions[i]) for i in sample}
    return {i: (text, "corrupted") for i, text in worse.items() if text is not None}


def run_judge_check(
    dataset: Dataset, judge: Judge, config: JudgeCheckConfig, *, embedder: Any = None, whole_verdicts: bool = False,
    from_answers: bool = False, rewriter: Optional[Judge] = None,
) -> JudgeCheck:
    """Score `config.rows` sampled right answers and, per tier, their worse answers with the judge's first backend;
    see the module doc.

    The figures are the mismatch tier's, with the other tiers under `tiers`. `same_topic` needs an
    `embedder` (sentence embeddings of the references). `whole_verdicts`: ask for whole verdicts, not replies that
    end at the first score (to compare; the figures are the same). `from_answers`: rows without references (each
    row's `answer` is the right side, the judge shown no reference); only the mismatch tier can be built then: an
    answer's own row against another row's answer. `rewriter`: whose rewordings of the references are the right
    answers, for a judge that sees the reference (default the judge's own; another model's measures self-preference:
    benchmarks/judge_studies/self_preference.py).
    """
    source = col.ANSWER if from_answers else col.REFERENCE
    if source not in dataset.column_names:
        raise ValueError(f"the judge check needs a {source!r} column; the rows have {dataset.column_names}")
    rubric, seed = judge.rubric, config.seed
    sample = sample_rows(len(dataset), config.rows, seed)
    tiers = ["mismatch", *[tier for tier in config.tiers if tier != "mismatch" and not from_answers]]  # mismatch: the flag
    instructions, references, ids = dataset[col.INSTRUCTION], dataset[source], dataset[col.ID]
    shown: list[Optional[str]] = [None] * len(dataset) if from_answers else references  # what the judge sees as reference
    embeddings = embedder.encode(references) if "same_topic" in tiers and embedder is not None else None
    right = {i: references[i] for i in sample}
    copies: set[int] = set()
    # The judge sees the reference (a checklist judge sees its items alone): the right answer is no copy of it.
    if rubric.reference_guided and rubric.checklist is None and not from_answers:
        reworded = reworded_references(rewriter or judge, [references[i] for i in sample])
        copies = {i for i, text in zip(sample, reworded) if text is None}
        right |= {i: text for i, text in zip(sample, reworded) if text is not None}
        if copies:
            logger.warning("Judge check: %d of %d rewordings of the reference failed, lost a fact or most of its words; "
                           "those pairs' right answer is the reference itself", len(copies), len(sample))
    worse = {tier: _worse_answers(tier, sample, instructions=instructions, references=references, right=right, seed=seed,
                                  embeddings=embeddings)
             for tier in tiers if tier != "same_topic" or embeddings is not None}
    asked: list[Asked] = [(instructions[i], right[i], shown[i], None) for i in sample]
    for answers in worse.values():
        asked += [(instructions[i], text, shown[i], None) for i, (text, _) in answers.items()]
    # Under a checklist rubric each answer is graded on its row's items (the right answers' and the worse ones').
    checklists = row_checklists(dataset, [*sample, *(i for answers in worse.values() for i in answers)])
    # The check reads one score per verdict: the judge is asked for a reply that ends at that score (the same score,
    # see `first_score_schema`), which spares it the rest of the verdict.
    readings = judge_readings(judge, judge.backend, asked, not whole_verdicts, checklists)
    criterion = rubric.checklist.criterion if rubric.checklist else rubric.names[0]

    def score(index: int) -> tuple[Optional[int], Optional[float], Optional[str]]:
        reading = readings[index]
        if reading.verdict.criteria is None:
            return None, None, reading.verdict.error
        distribution = reading.distributions.get(criterion)
        return reading.verdict.criteria[criterion].score, distribution.expected if distribution else None, None

    problem = next((r.expected_problem for r in readings if r.expected_problem), None)
    scale = [rubric.criterion(criterion).values[0], rubric.criterion(criterion).values[-1]]
    kind = "answers" if from_answers else "reworded" if right != {i: references[i] for i in sample} else "reference"
    reads_reference = rubric.reference_guided or rubric.checklist is not None  # what the rules may read, as the judge
    checks, offset = {}, len(sample)
    for tier, answers in worse.items():
        pairs = []
        for k, (i, (text, source)) in enumerate(answers.items()):
            (ref, ref_expected, ref_error), (mis, mis_expected, mis_error) = score(sample.index(i)), score(offset + k)
            pairs.append(JudgeCheckPair(
                id=str(ids[i]), mismatched_id=str(ids[int(source)]) if source.isdigit() else source,
                reference_accuracy=ref, mismatched_accuracy=mis, reference_expected=ref_expected,
                mismatched_expected=mis_expected, error=ref_error or mis_error, right_is_copy=i in copies,
                right_answer=right[i] if from_answers or right[i] != references[i] else None, worse_answer=text,
                # The rules read what the judge reads: the reference where the rubric shows it or its checklist's items.
                rules=rule_orders(instructions[i], right[i], text, shown[i] if reads_reference else None)))
        offset += len(answers)
        checks[tier] = judge_check_from_pairs(judge.backend.judge_id, pairs, threshold=config.threshold, criterion=criterion,
                                              expected_problem=problem, tier=tier, scale=scale, right_answers=kind,
                                              decided_by="expected" if rubric.checklist else "integer")
    check = checks.pop("mismatch")
    fresh = [r.reply for r in readings if not r.reply.cached]  # a reply's tokens and seconds include its probe's
    check = check.model_copy(update={
        "tiers": list(checks.values()), "judge_calls": sum(r.reply.calls for r in readings),
        "judge_tokens": sum(r.prompt_tokens + r.completion_tokens for r in fresh),
        "judge_seconds_per_verdict": sum(r.seconds for r in fresh) / len(fresh) if fresh else None,
    })
    logger.info("Judge check: %s", check.verdict)
    for sub in check.tiers:
        logger.info("Judge check, %s", sub.verdict)
    return check
