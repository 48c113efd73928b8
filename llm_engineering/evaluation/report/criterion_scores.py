"""One criterion's figures over a set of scored answers: the mean with its interval (two-level with several answers
per prompt, and the reducers), the expected mean where the judge gave logprobs, each jury member's, the length
correlation and the power of a comparison. A model's, a turn's and a category's figures are all these."""

from __future__ import annotations

from collections import Counter
from typing import Any, Optional

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.judging.agreement import length_correlation
from llm_engineering.evaluation.rates import bootstrap_ci, detectable_change, mean, rows_for_change
from llm_engineering.evaluation.samples import between_sample_share, grouped, reducers, row_means, row_spread, two_level_ci
from llm_engineering.evaluation.stored.summary import CriterionScores, JudgeScores, Reduced


def criterion_scores(name: str, scored: list[dict], *, values: Optional[list[int]], judges: list[str],
                      samples: int = 1, pass_score: Optional[float] = None) -> CriterionScores:
    answers = [r[col.score(name)] for r in scored]
    expected = [r.get(col.expected(name)) for r in scored]
    with_expected = [e for e in expected if e is not None]
    problems = Counter(r.get(col.EXPECTED_PROBLEM) or "no expected-score column (scored before probabilities were "
                       "recorded)" for r in scored if r.get(col.expected(name)) is None)
    per_judge = []
    for k, judge in enumerate(judges):
        own = [(r[col.jury_scores(name)][k], r[col.jury_expected(name)][k]) for r in scored
               if r.get(col.jury_scores(name)) and r[col.jury_scores(name)][k] is not None]
        own_expected = [e for _, e in own if e is not None]
        per_judge.append(JudgeScores(judge=judge, scored=len(own), mean=mean([s for s, _ in own]),
                                     expected_mean=mean(own_expected) if len(own_expected) == len(own) else None))
    scores = answers  # one per row: the rows a paired comparison pairs
    figures: dict[str, Any]
    if samples == 1:
        figures = {"ci": bootstrap_ci(answers), "expected_ci": bootstrap_ci(with_expected)}
    else:
        groups = grouped(scored, lambda r: r[col.score(name)])
        expected_groups = grouped(scored, lambda r: r.get(col.expected(name)))
        scores, with_expected = list(row_means(groups).values()), list(row_means(expected_groups).values())
        threshold = pass_score if pass_score is not None else max(values or answers)
        figures = {
            "ci": two_level_ci(list(groups.values())), "expected_ci": two_level_ci(list(expected_groups.values())),
            "rows_ci": bootstrap_ci(scores), "sample_share": between_sample_share(groups),
            "row_spread": row_spread(groups), "pass_score": threshold,
            "reducers": {reducer: Reduced(value=value, ci=ci) for reducer, (value, ci)
                         in reducers(groups, threshold, samples).items()},
        }
    return CriterionScores(
        name=name, mean=mean(scores),
        counts={str(v): answers.count(v) for v in (values or sorted(set(answers)))},
        expected_mean=mean(with_expected), expected_rows=sum(e is not None for e in expected),
        expected_problem=problems.most_common(1)[0][0] if problems else None,
        judges=per_judge,
        length=length_correlation(answers, lengths := [len(r.get(col.ANSWER) or "") for r in scored]),
        length_expected=length_correlation(with_expected, lengths) if len(with_expected) == len(scored) else None,
        detectable=detectable_change(scores),
        rows_for_tenth=rows_for_change(scores, 0.1),
        **figures,
    )
