"""The `label_agreement` artifact: how far the judge agrees with human labels, against baselines that need no judge.

Pure bookkeeping over plain data: the judge's verdicts on the labelled answers come in (see `label_check`),
the report goes out. Per criterion of pointwise labels, the judge's integer scores and its expected scores
rounded to the nearest level are compared with the human scores, as are two baselines: the majority label
and the length-only rule. Pairwise labels compare the judge's preference (both orders combined) with the
human one, beside the majority preference and the longer answer (`preference_agreement`).
"""

from __future__ import annotations

import math
from typing import Optional, Sequence

from llm_engineering.evaluation.judging.pairwise import orders_disagree, points_for_first_model
from llm_engineering.evaluation.judging.rubric import Rubric
from llm_engineering.evaluation.preference import compare
from llm_engineering.evaluation.rates import BOOTSTRAP_SAMPLES, rate, rate_with_ci
from llm_engineering.evaluation.stored.labels import CriterionAgreement, LabelAgreement, LabelledVerdict, PreferenceAgreement
from llm_engineering.evaluation.stored.pairwise import Preference
from llm_engineering.evaluation.trust.labels import (
    Labels,
    LabelsError,
    agreement,
    length_baseline,
    majority_baseline,
    valid_against_baseline,
)
from llm_engineering.evaluation.trust.preference_agreement import longer_preferred, majority_preference, pairwise_agreement


def label_verdict(figure: str, value: Optional[float], ci: Optional[list[float]], *, baselines: dict[str, Optional[float]],
                  valid: bool) -> str:
    """Whether the judge beats the judge-free baselines on the labels: `figure` is what is compared (exact
    agreement...), `baselines` each baseline's figure by its name (`the length-only rule`)."""
    judge = f"its {figure} {rate_with_ci(value, ci)}"
    rules = " and ".join(f"{name}'s {rate_with_ci(baseline, None)}" for name, baseline in baselines.items())
    if valid:
        return f"valid on these labels: {judge} beats {rules}."
    both, each = ("both ", "each") if len(baselines) > 1 else ("", "it")
    return (f"not shown valid on these labels: {judge} does not beat {both}{rules} (the lower bound of its 95% "
            f"interval must lie above {each}).")


def _where(labels: Labels, index: int) -> str:
    """`labels.jsonl, line 4`, or the label's position and id when the labels came inline."""
    if labels.source is not None and index < len(labels.lines):
        return f"{labels.source}, line {labels.lines[index]}"
    return f"label {index + 1} (id {labels.rows[index].id})"


def check_labels_fit(labels: Labels, rubric: Rubric) -> None:
    """Labels naming a rubric must name the judge's; pointwise labels must score its criteria, on their scales. The
    error names the label and the fix."""
    if labels.rubric is not None and labels.rubric != rubric.name:
        raise LabelsError(f"{labels.source}: the labels were written for rubric {labels.rubric!r}, but the judge scores "
                          f"with {rubric.name!r}; judge with theirs (--rubric {labels.rubric}), or label again on the "
                          f"report of a run with {rubric.name!r}")
    if labels.kind != "pointwise":
        return
    rows = labels.pointwise_rows
    for index, row in enumerate(rows):
        if row.criterion not in rubric.names:
            missing = sorted({r.criterion for r in rows} - set(rubric.names))
            raise LabelsError(
                f"{_where(labels, index)}: the labels score {', '.join(map(repr, missing))}, which rubric {rubric.name!r} "
                f"lacks (its criteria: {', '.join(rubric.names)}); label those criteria, or judge with a rubric that "
                f"has them (judge.rubric, --rubric)")
        values = rubric.criterion(row.criterion).values
        if row.score not in values:
            raise LabelsError(f"{_where(labels, index)}: {row.criterion} score {row.score} is off the scale of rubric "
                              f"{rubric.name!r} ({values[0]}..{values[-1]}); give a score on that scale")


def nearest_level(expected: Optional[float], values: Sequence[int]) -> Optional[int]:
    """The scale level nearest an expected score, a half rounded up (2.5 -> 3); None stays None."""
    if expected is None:
        return None
    return min(max(math.floor(expected + 0.5), values[0]), values[-1])


def criterion_agreement(
    criterion: str, values: Sequence[int], *, human: list[int], judge: list[Optional[int]], lengths: list[int],
    expected: Optional[list[Optional[float]]] = None, expected_problem: Optional[str] = None,
    samples: int = BOOTSTRAP_SAMPLES, seed: int = 0,
) -> CriterionAgreement:
    """One criterion's report. The expected scores, rounded, are compared only where every answer the judge
    scored has one (else `expected_problem` says why); a label without a verdict counts as a disagreement.

    Valid: the lower bound of the judge's exact agreement (95% bootstrap) lies above the length-only rule's
    exact agreement. Exact agreement, not kappa: the rule is built to match the labels' score proportions,
    and the share of answers given the human's score is the figure both can be held to.
    """
    judged = agreement(judge, human, values, samples=samples, seed=seed)
    scored = [i for i, score in enumerate(judge) if score is not None]
    rounded = None
    if expected is not None and scored and all(expected[i] is not None for i in scored):
        rounded = agreement([nearest_level(e, values) if j is not None else None for e, j in zip(expected, judge)],
                            human, values, samples=samples, seed=seed)
        expected_problem = None
    elif not scored:
        expected_problem = "no labelled answer has a verdict"
    else:
        expected_problem = expected_problem or "some verdicts have no expected score"
    length = agreement(length_baseline(lengths, human, values), human, values, samples=samples, seed=seed)
    valid = valid_against_baseline(judged.exact_ci, length.exact)
    verdict = label_verdict("exact agreement", judged.exact, judged.exact_ci, baselines={"the length-only rule": length.exact},
                            valid=valid)
    return CriterionAgreement(
        criterion=criterion, scale=list(values), rows=len(human), judge=judged, judge_expected=rounded,
        expected_problem=expected_problem,
        majority=agreement(majority_baseline(human), human, values, samples=samples, seed=seed),
        length=length, valid=valid, verdict=verdict,
    )


def combined_preference(in_order: Optional[Preference], swapped: Optional[Preference]) -> Optional[Preference]:
    """The judge's preference from both orders (`swapped` judged the pair as B, A): A or B when its points lean
    that way, a tie when they are even (two orders that disagree outright); None without both verdicts."""
    if in_order is None or swapped is None:
        return None
    points = points_for_first_model(in_order, swapped)  # answer A's: first in one order, second in the other
    return compare(points, 0.5)


def preference_agreement(
    human: list[Preference], in_order: list[Optional[Preference]], swapped: list[Optional[Preference]], *,
    length_a: list[int], length_b: list[int],
) -> PreferenceAgreement:
    """The pairwise report. Valid: the lower bound of the judge's agreement (95% Wilson) lies above the agreement
    of both baselines: a judge that names no answer matches the most common preference where most labels are ties."""
    judge = [combined_preference(a, b) for a, b in zip(in_order, swapped)]
    judged = pairwise_agreement(judge, human)
    both = [(a, b) for a, b in zip(in_order, swapped) if a is not None and b is not None]
    majority = pairwise_agreement(majority_preference(human), human)
    length = pairwise_agreement(longer_preferred(length_a, length_b), human)
    baselines = {"the most common human preference": majority.agreement.rate,
                 "the length-only rule": length.agreement.rate}
    valid = all(valid_against_baseline(judged.agreement.ci, figure) for figure in baselines.values())
    return PreferenceAgreement(
        rows=len(human), judge=judged, order_disagreement=rate(sum(orders_disagree(a, b) for a, b in both), len(both)),
        majority=majority, length=length, valid=valid,
        verdict=label_verdict("agreement", judged.agreement.rate, judged.agreement.ci, baselines=baselines, valid=valid),
    )


def pointwise_report(
    labels: Labels, rubric: Rubric, judge_id: str, *, scores: list[Optional[int]], expected: list[Optional[float]],
    errors: Optional[list[Optional[str]]] = None, expected_problem: Optional[str] = None,
    samples: int = BOOTSTRAP_SAMPLES, seed: int = 0,
) -> LabelAgreement:
    """The report of pointwise labels: `scores[i]` and `expected[i]` are the judge's on label i's answer and criterion.

    One `CriterionAgreement` per criterion the labels score, in the rubric's order.
    """
    check_labels_fit(labels, rubric)
    rows = labels.pointwise_rows
    if not len(scores) == len(expected) == len(rows):
        raise ValueError(f"{len(scores)} scores and {len(expected)} expected scores for {len(rows)} labels")
    errors = errors or [None] * len(rows)
    criteria = []
    for name in [n for n in rubric.names if any(r.criterion == n for r in rows)]:
        picked = [i for i, r in enumerate(rows) if r.criterion == name]
        criteria.append(criterion_agreement(
            name, rubric.criterion(name).values, human=[rows[i].score for i in picked],
            judge=[scores[i] for i in picked], lengths=[len(rows[i].answer) for i in picked],
            expected=[expected[i] for i in picked], expected_problem=expected_problem, samples=samples, seed=seed))
    details = [LabelledVerdict(id=r.id, criterion=r.criterion, human=r.score, judge=s, expected=e, error=x)
               for r, s, e, x in zip(rows, scores, expected, errors)]
    return LabelAgreement(kind="pointwise", judge_model=judge_id, rubric=rubric.name, rows=len(rows),
                          criteria=criteria, details=details)


def pairwise_report(
    labels: Labels, rubric: Rubric, judge_id: str, *, in_order: list[Optional[Preference]],
    swapped: list[Optional[Preference]], errors: Optional[list[Optional[str]]] = None,
) -> LabelAgreement:
    """The report of pairwise labels: `in_order[i]` judged label i's pair as (answer_a, answer_b), `swapped[i]` as
    (answer_b, answer_a), each naming the position it preferred."""
    rows = labels.pairwise_rows
    if not len(in_order) == len(swapped) == len(rows):
        raise ValueError(f"{len(in_order)} and {len(swapped)} verdicts for {len(rows)} labels")
    report = preference_agreement([r.preferred for r in rows], in_order, swapped,
                                  length_a=[len(r.answer_a) for r in rows], length_b=[len(r.answer_b) for r in rows])
    errors = errors or [None] * len(rows)
    details = [LabelledVerdict(id=r.id, human=r.preferred, judge=combined_preference(a, b), error=x)
               for r, a, b, x in zip(rows, in_order, swapped, errors)]
    return LabelAgreement(kind="pairwise", judge_model=judge_id, rubric=rubric.name, rows=len(rows), pairwise=report,
                          details=details)
