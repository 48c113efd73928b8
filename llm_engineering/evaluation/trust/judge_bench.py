"""How often a judge agrees with people: human-labelled answer pairs judged two ways, beside two baselines.

- pairwise: the pipeline's pairwise prompt, asked in both orders (the first output shown first, then second);
- pointwise: each answer scored alone with the rubric, the pair decided by the first criterion's expected scores
  (`pointwise_expected`), by its integer scores (`pointwise_integer`, where a tie is a third outcome), and by its
  integer scores with a tie half right (`pointwise_rating`, LLMBar's Rating protocol, the one its pointwise figures
  use); the judge is asked for a reply that ends at that score, as the judge check asks it (the same score, without
  the rest of the verdict);
- preference: the better answer asked as one number (1 or 2) before any analysis, in both orders: the number the
  judge writes in each order (`preference`), and the probabilities it gave the two numbers averaged over both
  orders (`preference_averaged`, one decision a pair), so that a lean towards a position cancels out; a judge
  without token logprobs is read as the pipeline reads it, from the number it wrote (a certainty), and the report
  counts those readings (`written_preferences`);
- baselines that need no judge: the longer answer (`longer`), the answer shown first (`first_shown`), and on the pairs
  that carry a reference, each reference metric (`metrics.reference`: the answer with the higher value, a tie a tie;
  a pair where the metric does not apply, `math` on a prose reference, is left out of its figures).

Per way, over the pairs whose label is not a tie: agreement with the label with each order counted, as LLMBar
reports (a way that sees no order decides once per pair), the pairs right in both orders, how often a decisive
verdict chose the answer shown first, ties and failures; each a rate with a 95% Wilson interval. A failed verdict
counts as a disagreement, never dropped.
"""

from __future__ import annotations

from typing import Optional

from datasets import Dataset
from pydantic import BaseModel, Field

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.judging.checklist_writing import write_checklists
from llm_engineering.evaluation.judging.failures import failure_causes
from llm_engineering.evaluation.judging.judge import Judge
from llm_engineering.evaluation.judging.pairwise import ask_both_orders, ask_preferences, both_orders_preference
from llm_engineering.evaluation.judging.scoring import calls_per_answer, score_answers
from llm_engineering.evaluation.metrics.names import REFERENCE_METRICS
from llm_engineering.evaluation.metrics.reference import reference_metric
from llm_engineering.evaluation.preference import compare, longer, swapped
from llm_engineering.evaluation.rates import rate
from llm_engineering.evaluation.stored.figures import FailureCause, Rate
from llm_engineering.evaluation.stored.pairwise import Preference
from llm_engineering.evaluation.trust.human_pairs import HumanPair
from llm_engineering.evaluation.trust.selective import SelectiveFigures

WAYS = ("pairwise", "preference", "preference_averaged", "pointwise_expected", "pointwise_integer", "pointwise_rating")
BASELINES = ("longer", "first_shown")
JUDGED = ("pairwise", "preference", "pointwise_integer")  # a decision each judge call of the bench ends in

# What each way is, for tables and pages.
WAY_NAMES: dict[str, str] = {
    "pairwise": "pairwise prompt, both orders",
    "preference": "preference number first, both orders",
    "preference_averaged": "preference probabilities, averaged over both orders",
    "pointwise_expected": "pointwise, expected scores",
    "pointwise_integer": "pointwise, integer scores (ties possible)",
    "pointwise_rating": "pointwise, integer scores, a tie half right (LLMBar's Rating protocol)",
    "longer": "baseline: the longer answer",
    "first_shown": "baseline: the answer shown first",
    **{name: f"baseline: {name} (pairs with a reference)" for name in REFERENCE_METRICS},
}


class PairDecisions(BaseModel):
    """One pair's decisions per way (A: output 1 chosen, B: output 2, a tie, or None: failed): two per ordered way (the
    first output shown first, then the second), one per way that sees no order."""

    id: str
    label: Preference
    decisions: dict[str, list[Optional[Preference]]]
    expected: Optional[list[Optional[float]]] = Field(None, description="each output's expected score (pointwise)")
    preference: Optional[list[Optional[float]]] = Field(
        None, description="the probability that output 1 is better: with output 1 shown first, then second, then averaged")
    scores: Optional[list[Optional[int]]] = Field(None, description="each output's integer score (pointwise)")
    problems: list[str] = Field(default_factory=list, description="why a verdict failed")


class WayFigures(BaseModel):
    agreement: Rate = Field(description="decisions that name the labelled output, over pairs not labelled a tie")
    both_orders_right: Rate = Field(description="pairs whose every decision names the labelled output")
    first_shown: Optional[Rate] = Field(None, description="decisive verdicts (of every pair) that chose the answer "
                                        "shown first")
    ties: Rate
    failed: Rate


class JudgeBenchReport(BaseModel):
    """The judge-bench artifact: agreement with people per way and baseline, and every pair's decisions."""

    pairs_file: str
    judge: str
    rubric: str
    pairs: int
    half: Optional[int] = Field(None, description="1 or 2: every other pair of the file, from the first or the second")
    tie_labels: int = Field(description="pairs labelled a tie: outside every agreement figure")
    ways: dict[str, WayFigures]
    seconds: Optional[float] = None
    judge_calls: int = 0
    cached: int = 0
    written_preferences: int = Field(0, description="preference readings taken from the number the judge wrote, its "
                                     "backend giving no token logprobs (each a certainty)")
    details: list[PairDecisions] = Field(default_factory=list)
    failures: list[FailureCause] = Field(default_factory=list, description="failed verdicts of every way, by cause "
                                         "(HTTP status, timeout, invalid JSON...), one example each")
    calibration_file: Optional[str] = Field(None, description="--calibration: the pairs the thresholds were found on")
    target_agreement: Optional[float] = None
    risk: Optional[float] = Field(None, description="the chance the threshold's agreement is under the target")
    selective: dict[str, SelectiveFigures] = Field(default_factory=dict, description="per way with a confidence: the "
                                                   "verdicts kept at the threshold found on the calibration pairs")

    def every_verdict_failed(self) -> bool:
        """Whether the judge gave nothing at all: no decision of any way that asks it, no score."""
        return bool(self.details) and all(choice is None for d in self.details for way in JUDGED
                                          for choice in d.decisions[way]) and all(
            score is None for d in self.details for score in d.scores or [])

    def json_report(self) -> dict:
        """The JSON report: `agreement.<way>.rate` and `.total` for each way and baseline, then the other figures."""
        figures = {name: {way: getattr(f, name).model_dump() if getattr(f, name) else None for way, f in self.ways.items()}
                   for name in WayFigures.model_fields}
        return {"pairs_file": self.pairs_file, "judge": self.judge, "rubric": self.rubric, "pairs": self.pairs,
                "half": self.half, "tie_labels": self.tie_labels, **figures, "seconds": self.seconds,
                "judge_calls": self.judge_calls,
                "cached": self.cached, "written_preferences": self.written_preferences,
                "failures": [c.model_dump() for c in self.failures],
                **({"calibration_file": self.calibration_file, "target_agreement": self.target_agreement,
                    "risk": self.risk, "selective": {way: f.model_dump() for way, f in self.selective.items()}}
                   if self.selective else {}),
                "details": [d.model_dump() for d in self.details]}


def rating_decisions(scores: list[Optional[int]]) -> list[Optional[Preference]]:
    """LLMBar's Rating protocol: the output scored higher, asked as if in both orders, where a tie names the output
    shown first; so a tie is right in one order and wrong in the other (half right), as LLMBar counts it."""
    decided = compare(*scores)
    return [decided, decided] if decided != "tie" else ["A", "B"]


def way_figures(details: list[PairDecisions], way: str, ordered: bool) -> WayFigures:
    """The figures of one way over every pair's decisions (`ordered`: its decisions are per order of showing)."""
    details = [d for d in details if way in d.decisions]  # a reference metric decides the pairs with a reference
    labelled = [d for d in details if d.label != "tie"]
    decisions = [(d.label, k, choice) for d in labelled for k, choice in enumerate(d.decisions[way])]
    # Position bias is the judge's, whatever people said: over every pair, a tie label's too.
    decisive = [(k, choice) for d in details for k, choice in enumerate(d.decisions[way]) if choice in ("A", "B")]
    every = [choice for d in details for choice in d.decisions[way]]
    return WayFigures(
        agreement=rate(sum(choice == label for label, _, choice in decisions), len(decisions)),
        both_orders_right=rate(sum(all(c == d.label for c in d.decisions[way]) for d in labelled), len(labelled)),
        # Shown first: output 1 (A) in the first order, output 2 (B) in the second.
        first_shown=rate(sum(choice == "AB"[k] for k, choice in decisive), len(decisive)) if ordered else None,
        ties=rate(every.count("tie"), len(every)),
        failed=rate(every.count(None), len(every)),
    )


def baseline_decisions(pair: HumanPair) -> dict[str, list[Optional[Preference]]]:
    """What the judge-free rules decide: the longer answer (by characters), and the first shown, in both orders; with a
    reference, each reference metric where it applies to both answers."""
    decisions: dict[str, list[Optional[Preference]]] = {"longer": [longer(pair.output_1, pair.output_2)],
                                                        "first_shown": ["A", "B"]}
    reference = pair.reference
    for name in REFERENCE_METRICS:
        if reference is None:
            break
        decided = compare(reference_metric(name, pair.output_1, reference), reference_metric(name, pair.output_2, reference))
        if decided is not None:
            decisions[name] = [decided]
    return decisions


def _pairwise(pairs: list[HumanPair], judge: Judge) -> tuple[list[list[Optional[Preference]]], list[list[str]], int]:
    parsed, replies = ask_both_orders(judge, [(p.instruction, p.output_1, p.output_2, p.reference) for p in pairs])
    # The second order shows output 2 as A: its verdict swapped names the outputs as the first order does.
    decisions = [[parsed[2 * i][0], swapped(parsed[2 * i + 1][0])] for i in range(len(pairs))]
    problems = [[f"pairwise: {e}" for _, e in parsed[2 * i: 2 * i + 2] if e] for i in range(len(pairs))]
    return decisions, problems, sum(r.cached for r in replies)


def _pointwise(pairs: list[HumanPair], judge: Judge) -> tuple[list[dict], int]:
    answers = [(p, output) for p in pairs for output in (p.output_1, p.output_2)]
    data = {col.ID: [f"{p.id}/{k % 2 + 1}" for k, (p, _) in enumerate(answers)],
            col.INSTRUCTION: [p.instruction for p, _ in answers], col.ANSWER: [a for _, a in answers],
            col.MODEL_ID: ["labelled pairs"] * len(answers)}
    if any(p.reference for p in pairs):
        data[col.REFERENCE] = [p.reference or "" for p, _ in answers]
    if judge.rubric.checklist is not None:  # each pair's items, written once for both of its answers
        written = write_checklists(judge, Dataset.from_dict({
            col.ID: [p.id for p in pairs], col.INSTRUCTION: [p.instruction for p in pairs],
            col.REFERENCE: [p.reference for p in pairs]}), judge.rubric.checklist.max_items)
        items = dict(zip(written[col.ID], written[col.CHECKLIST]))
        data[col.CHECKLIST] = [items[p.id] for p, _ in answers]
    rows = score_answers(Dataset.from_dict(data), judge, first_score_only=True).to_list()
    # A row is cached when its verdict and its probe were (`with_scores_before_analysis`): both calls.
    return rows, sum(bool(r[col.JUDGE_CACHED]) for r in rows) * calls_per_answer(judge.rubric)


def _preference(pairs: list[HumanPair], judge: Judge) -> tuple[list[dict], list[list[str]], int, int]:
    readings, replies = ask_preferences(judge, [(p.instruction, p.output_1, p.output_2, p.reference) for p in pairs])
    # A reading from a reply without token logprobs is the number the judge wrote (`ask_preferences`).
    written = sum(probability is not None and not reply.logprobs for (probability, _), reply in zip(readings, replies))
    out, problems = [], []
    for i in range(len(pairs)):
        (first, error_1), (second, error_2) = readings[2 * i], readings[2 * i + 1]
        # Output 1 is shown first in the first order and second in the other, where `second` is output 2's share.
        averaged = both_orders_preference(first, second)
        out.append({"probabilities": [first, None if second is None else 1.0 - second, averaged],
                    "preference": [compare(first, 0.5), compare(0.5, second)],
                    "preference_averaged": [compare(averaged, 0.5)]})
        problems.append([f"preference: {e}" for e in (error_1, error_2) if e])
    return out, problems, sum(r.cached for r in replies), written


def bench_judge(pairs: list[HumanPair], judge: Judge, pairs_file: str) -> JudgeBenchReport:
    """Every pair judged both ways (pointwise by the whole jury, pairwise by its first judge), with the figures of
    each way and baseline. Through `ask_judge`: a repeated run asks only what the judge's cache lacks."""
    first = judge.rubric.criteria[0].name
    pairwise, pairwise_problems, pairwise_cached = _pairwise(pairs, judge)
    preference, preference_problems, preference_cached, written = _preference(pairs, judge)
    rows, pointwise_cached = _pointwise(pairs, judge)
    details = []
    for i, p in enumerate(pairs):
        one, two = rows[2 * i], rows[2 * i + 1]
        expected = [one[col.expected(first)], two[col.expected(first)]]
        scores = [one[col.score(first)], two[col.score(first)]]
        details.append(PairDecisions(
            id=p.id, label=p.label, expected=expected, scores=scores, preference=preference[i]["probabilities"],
            decisions={"pairwise": pairwise[i], "preference": preference[i]["preference"],
                       "preference_averaged": preference[i]["preference_averaged"],
                       "pointwise_expected": [compare(*expected)],
                       "pointwise_integer": [compare(*scores)], "pointwise_rating": rating_decisions(scores),
                       **baseline_decisions(p)},
            problems=pairwise_problems[i] + preference_problems[i]
            + [f"pointwise: {r[col.JUDGE_ERROR] or r[col.EXPECTED_PROBLEM]}"
               for r in (one, two) if r[col.JUDGE_ERROR] or r[col.EXPECTED_PROBLEM]],
        ))
    ordered = {"pairwise", "preference", "first_shown"}
    # The requests' own errors: a missing expected score is a problem of a valid verdict, not a failure.
    errors = [problem.split(": ", 1)[1] for problems in pairwise_problems + preference_problems for problem in problems]
    errors += [r[col.JUDGE_ERROR] for r in rows if r[col.JUDGE_ERROR]]
    return JudgeBenchReport(
        pairs_file=pairs_file, judge=rows[0][col.JUDGE_MODEL] if rows else judge.backend.judge_id, rubric=judge.rubric.name,
        pairs=len(pairs), tie_labels=sum(p.label == "tie" for p in pairs),
        ways={way: way_figures(details, way, way in ordered) for way in (*WAYS, *BASELINES, *REFERENCE_METRICS)
              if any(way in d.decisions for d in details)},
        judge_calls=4 * len(pairs) + len(rows) * len(judge.backends) * calls_per_answer(judge.rubric),
        cached=pairwise_cached + preference_cached + pointwise_cached, written_preferences=written,
        details=details, failures=failure_causes(errors),
    )
