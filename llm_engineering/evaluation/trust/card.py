"""The judge's report card, run: right and worse answers built from the split, judged, and set beside the
judge-free rules (the figures themselves are `trust.judge_check`'s).

For a fixed sample of rows the judge scores, with the scoring prompt, each row's right answer (the reference;
for a judge that sees the reference, the reference reworded by the judge, `trust.rewording`) and, per tier
(`trust.tiers`), a worse answer. The calls go through the scoring cache and retries.
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from datasets import Dataset

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.judging.before_analysis import Asked
from llm_engineering.evaluation.judging.checklist_scoring import row_checklists
from llm_engineering.evaluation.judging.judge import Judge
from llm_engineering.evaluation.judging.scoring import judge_readings
from llm_engineering.evaluation.rates import sample_rows
from llm_engineering.evaluation.stored.trust import JudgeCheck, JudgeCheckPair
from llm_engineering.evaluation.trust import tiers as check_tiers
from llm_engineering.evaluation.trust.config import JudgeCheckConfig
from llm_engineering.evaluation.trust.judge_check import judge_check_from_pairs
from llm_engineering.evaluation.trust.minimal_pairs import negations, relation_swaps
from llm_engineering.evaluation.trust.rewording import reworded_references
from llm_engineering.evaluation.trust.rules import rule_orders

# Candidates tried per row of a tier no rule may pass (a long answer has many places to negate).
MAX_CANDIDATES = 60

logger = logging.getLogger(__name__)


Candidate = tuple[str, str]  # a worse answer, and the id-like label of where it came from


def _candidates(tier: str, sample: list[int], *, instructions: list[str], references: list[str], right: dict[int, str],
                seed: int) -> dict[int, list[Candidate]]:
    """Sampled row -> the worse answers of `tier` it could have, in the order tried; `right`: each sampled row's right
    answer (the truncated tier keeps its length, the corrupted one swaps its names)."""
    if tier == "mismatch":
        return {i: [(references[m], str(m))] for i, m in zip(sample, check_tiers.mismatched(sample, seed))}
    if tier == "same_topic":
        return {i: [(references[j], str(j)) for j in near] for i, near in zip(sample, check_tiers.same_topic(references,
                                                                                                         sample))}
    if tier == "truncated":
        return {i: [(check_tiers.unfinished(instructions[i], references[i], len(right[i])), "truncated")] for i in sample}
    # The reference (the text a judge is shown) with one meaning changed, then the right answer where it is a rewording:
    # made from the reference, the worse answer holds the reference's words and their order, which the rules that read
    # the reference favour; the longer-answer rule then passes the rows whose rewording is longer, where the rewording's
    # own change, of the same length, is tried next.
    if tier in ("relation_swap", "negation"):
        change = relation_swaps if tier == "relation_swap" else negations
        half = MAX_CANDIDATES // 2
        return {i: [(text, tier) for text in dict.fromkeys(
            change(references[i])[:half] + (change(right[i])[:half] if right[i] != references[i] else []))]
                for i in sample}
    # The right answer itself with its names and numbers swapped: the pair differs in those alone. (Made from the
    # reference, it would be worded like the reference the judge is shown, while the right answer is reworded.)
    others = {i: [r for j, r in enumerate(references) if j != i] for i in sample}
    worse = {i: check_tiers.corrupted(right[i], others[i], seed + i, instructions[i]) for i in sample}
    return {i: [(text, "corrupted")] if text is not None else [] for i, text in worse.items()}


@dataclass(frozen=True)
class Built:
    """A tier's worse answers: per sampled row kept, its answer and the rules' orders of the pair; how many rows had a
    candidate (`None`: an unfiltered tier, which takes each row's first); per rule, the rows dropped because it
    ordered every candidate below the right answer."""

    answers: dict[int, tuple[Candidate, dict[str, int]]]
    candidates: Optional[int] = None
    dropped: dict[str, int] = field(default_factory=dict)


def _build(tier: str, candidates: dict[int, list[Candidate]], orders: Callable[..., dict[str, int]]) -> Built:
    """Each row's first candidate; for a tier no rule may pass (`FILTERED_TIERS`), its first candidate that no rule
    orders below the right answer (`orders(row, text, until_one_orders)`: each rule's order, +1 the right answer above;
    with `until_one_orders`, the costly embedding's left out where another rule already orders the pair)."""
    if tier not in check_tiers.FILTERED_TIERS:
        return Built({i: (found[0], orders(i, found[0][0])) for i, found in candidates.items() if found})
    kept: dict[int, tuple[Candidate, dict[str, int]]] = {}
    dropped: Counter[str] = Counter()
    for i, found in candidates.items():
        ordered_by: set[str] = set()
        for candidate in found[:MAX_CANDIDATES]:
            order = orders(i, candidate[0], until_one_orders=True)
            above = {name for name, value in order.items() if value == 1}
            if not above:
                kept[i] = (candidate, order)
                break
            ordered_by |= above
        else:
            dropped.update(ordered_by)
    return Built(kept, sum(bool(found) for found in candidates.values()), dict(dropped))


def run_judge_check(
    dataset: Dataset, judge: Judge, config: JudgeCheckConfig, *, whole_verdicts: bool = False,
    from_answers: bool = False, rewriter: Optional[Judge] = None, embedder: Any = None,
) -> JudgeCheck:
    """Score `config.rows` sampled right answers and, per tier, their worse answers with the judge's first backend;
    see the module doc.

    The figures are the mismatch tier's, with the other tiers under `tiers`. `whole_verdicts`: ask for whole verdicts,
    not replies that end at the first score (to compare; the figures are the same). `from_answers`: rows without
    references (each row's `answer` is the right side, the judge shown no reference); only the mismatch tier can be
    built then: an answer's own row against another row's answer. `rewriter`: whose rewordings of the references are
    the right answers, for a judge that sees the reference or a checklist of it (default the judge's own; another
    model's measures self-preference: benchmarks/judge_studies/self_preference.py). `embedder`: a sentence embedder,
    for the similarity metric among the rules (left out without one).
    """
    source = col.ANSWER if from_answers else col.REFERENCE
    if source not in dataset.column_names:
        raise ValueError(f"the judge check needs a {source!r} column; the rows have {dataset.column_names}")
    rubric, seed = judge.rubric, config.seed
    sample = sample_rows(len(dataset), config.rows, seed)
    tiers = ["mismatch", *[tier for tier in config.tiers if tier != "mismatch" and not from_answers]]  # mismatch: the flag
    instructions, references, ids = dataset[col.INSTRUCTION], dataset[source], dataset[col.ID]
    shown: list[Optional[str]] = [None] * len(dataset) if from_answers else references  # what the judge sees as reference
    right = {i: references[i] for i in sample}
    copies: set[int] = set()
    # The judge sees the reference, or a checklist's items made of it: the right answer is no copy of it.
    if (rubric.reference_guided or rubric.checklist is not None) and not from_answers:
        reworded = reworded_references(rewriter or judge, [references[i] for i in sample])
        copies = {i for i, text in zip(sample, reworded) if text is None}
        right |= {i: text for i, text in zip(sample, reworded) if text is not None}
        if copies:
            logger.warning("Judge check: %d of %d rewordings of the reference failed, lost a fact or most of its words; "
                           "those pairs' right answer is the reference itself", len(copies), len(sample))
    # The rules read what the judge reads: the reference where the rubric shows it, a checklist's items where it grades
    # them (every answer of a row is graded on the same items), nothing else.
    items = dict(zip(sample, row_checklists(dataset, sample)))
    ruled: dict[int, Optional[str]] = {
        i: " ".join(items[i]) if rubric.checklist is not None and items[i] else
        shown[i] if rubric.reference_guided else None for i in sample}

    def orders(i: int, worse: str, until_one_orders: bool = False) -> dict[str, int]:
        return rule_orders(instructions[i], right[i], worse, ruled[i], embedder, until_one_orders=until_one_orders)

    built = {tier: _build(tier, _candidates(tier, sample, instructions=instructions, references=references, right=right,
                                            seed=seed), orders) for tier in tiers}
    asked: list[Asked] = [(instructions[i], right[i], shown[i], None) for i in sample]
    for tier_built in built.values():
        asked += [(instructions[i], text, shown[i], None) for i, ((text, _), _) in tier_built.answers.items()]
    # Under a checklist rubric each answer is graded on its row's items (the right answers' and the worse ones').
    checklists = [items[i] for i in sample] + [items[i] for b in built.values() for i in b.answers]
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
    checks, offset = {}, len(sample)
    for tier, tier_built in built.items():
        pairs = []
        for k, (i, ((text, source), rules)) in enumerate(tier_built.answers.items()):
            (ref, ref_expected, ref_error), (mis, mis_expected, mis_error) = score(sample.index(i)), score(offset + k)
            pairs.append(JudgeCheckPair(
                id=str(ids[i]), mismatched_id=str(ids[int(source)]) if source.isdigit() else source,
                reference_accuracy=ref, mismatched_accuracy=mis, reference_expected=ref_expected,
                mismatched_expected=mis_expected, error=ref_error or mis_error, right_is_copy=i in copies,
                right_answer=right[i] if from_answers or right[i] != references[i] else None, worse_answer=text,
                rules=rules))
        offset += len(tier_built.answers)
        checks[tier] = judge_check_from_pairs(judge.backend.judge_id, pairs, threshold=config.threshold, criterion=criterion,
                                              expected_problem=problem, tier=tier, scale=scale, right_answers=kind,
                                              decided_by="expected" if rubric.checklist else "integer",
                                              candidates=tier_built.candidates, dropped=tier_built.dropped)
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
