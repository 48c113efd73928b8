"""Every sentence about how far the scores can be trusted, written once.

The CLI lines (`report.text`), the HTML report (`report.html`) and the dataset cards
(`infrastructure.publishing`) take their words from here, so no two of them say the same fact differently.
The judge check's own verdict is written where it is decided (`judge_check.judge_verdict_text`)
and stored on the check; everything around it is here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from llm_engineering.evaluation.rates import fmt, rate_with_ci
from llm_engineering.evaluation.stored.judge_id import JudgeId

if TYPE_CHECKING:  # only read attributes of these: the cards need no judge code loaded
    from llm_engineering.evaluation.stored.labels import (
        LabelAgreement,
        PairwiseAgreement,
        PointwiseAgreement,
        PreferenceAgreement,
    )
    from llm_engineering.evaluation.stored.pairwise import PairwiseComparison
    from llm_engineering.evaluation.stored.summary import ModelScores
    from llm_engineering.evaluation.stored.trust import JudgeCheck, SimilarityCheck


SCORES_METHOD = ("Means are over scored rows, with 95% bootstrap intervals; rows whose verdict failed are counted "
                 "as failed, never averaged. An expected score weights each scale value by the probability the judge "
                 "gave it at the score token (its logprobs); it separates answers the integer score ties.")

SAMPLES_METHOD = ("With several answers per prompt, a row's score is the mean of its answers' scores and the model's "
                  "mean is the mean of row means. Its interval comes from a two-level bootstrap (rows drawn with "
                  "replacement, then each drawn row's answers), so it holds how far a model's answers to one prompt "
                  "differ; the interval over rows alone keeps each row's mean fixed. The variance between a prompt's "
                  "answers is one minus the intraclass correlation. max and majority reduce a row's scores to their "
                  "highest and most frequent (a tie to the lower); pass@k is the chance that at least one of k answers "
                  "scores the passing score or more (the unbiased estimator of Chen et al., 2021).")

JUDGE_CHECK_METHOD = ("The judge scored, with the scoring prompt, each sampled row's right answer and, per tier, a worse "
                      "answer built from the split: another row's reference (mismatch), a neighbouring question's "
                      "reference that shares the instruction's words (same_topic), the instruction echoed and the "
                      "reference's first third looping to the right answer's length (truncated), the right answer with "
                      "its numbers and names swapped for other rows' (corrupted). Rates are over all pairs, with 95% "
                      "Wilson intervals; a pass is the right answer scored strictly higher on integer scores (the "
                      "figure the outcome reads, as the table shows integer means), ties broken by expected scores and "
                      "the order by expected scores alone beside it. The same pairs are ordered by rules without a judge "
                      "(the longer answer; more of the instruction's words; more of the reference's words; more of the "
                      "reference's names and numbers; more distinct words; a tie is no pass). A tier passes when the "
                      "judge is at or above the threshold and above every rule; it fails under the threshold; where a "
                      "rule does as well, the tier says nothing of the judge that a word count does not say. A tier "
                      "that a rule passes above 65% is marked so.")

EXPECTED_BEFORE_ANALYSIS = ("the rubric has the judge write each analysis before its score, so an integer score is "
                            "the judge's verdict after its analysis; the expected scores are read from a second, short "
                            "reply that gives the scores before any analysis (after it, the judge's probabilities sit "
                            "on the integer and rank nothing). The expected mean is that first reading, not the mean "
                            "of the integers, and can lie far from it: read it against the judge check's right answers "
                            "and answers to other questions; it ranks answers, and breaks the integers' ties.")

RIGHT_ANSWERS_TEXT = {"reference": "the references", "reworded": "the references reworded by the judge",
                      "answers": "each row's own answer (no references: not known to be right)"}

REFERENCE_GUIDED_CHECK = ("the rubric shows the judge the reference, so in the judge check the right answer is the "
                          "reference reworded by the judge (keeping every number and name and most of its words), not "
                          "the reference itself: a text judged against itself proves nothing; the judge may favour its "
                          "own wording")

SIMILARITY_METRIC = "cosine similarity of answer and reference embeddings"

PAIRWISE_METHOD = "each pair judged in both orders"
PAIRWISE_METHODS = {"preference": "each pair's preference asked in both orders, its probabilities averaged",
                    "verdict": "each pair judged in both orders"}

WIN_RATE_DEFINITION = ("Win rate: model A's mean points over judged pairs (win 1, tie 0.5, loss 0; the two orders "
                       "averaged), with a 95% bootstrap interval.")


GET_A_JUDGE = ("for a judge with signal, set judge.model: qwen2.5-coder-1.5b (what judge.model: auto runs on every "
               "machine), or use a served or OpenAI judge (docs/judges.md)")


def _judge_name(judge_model: str) -> str:
    """An in-process judge by its model's name; any other by its whole id (where it is served matters)."""
    judge = JudgeId.parse(judge_model)
    return judge.model if judge.backend == "vllm" else judge_model


def _get_a_judge(name: str) -> str:
    """How to get a judge with signal: the packaged 1.5B one, unless it is the judge already."""
    if name.startswith("qwen2.5-coder-1.5b"):
        return "for a judge with more signal, use a stronger served or OpenAI judge (--judge, docs/judges.md)"
    return GET_A_JUDGE


def judge_without_signal(judge_model: str) -> bool:
    """The judge is a model measured to have no signal as a judge (an embedded smoke-test judge)."""
    from llm_engineering.evaluation.embedded_models import EMBEDDED_MODELS

    model = EMBEDDED_MODELS.get(_judge_name(judge_model))
    return model is not None and model.judge_signal is False


def judge_headline(judge_model: str, check: Optional[JudgeCheck]) -> str:
    """The judge's line under the models' scores: whether its scores mean anything (NO SIGNAL: it does not tell answers
    to other questions apart), and otherwise, tier by tier, what it is blind to, where a rule without a judge does as
    well, and where it passes, with the figures and their intervals; how to get a judge whose scores mean more."""
    from llm_engineering.evaluation.trust.judge_check import BLIND_TO, best_rule_text, figure_text, rule_text

    name = _judge_name(judge_model)
    if check is not None and check.no_signal:
        return (f"NO SIGNAL: the judge {name} did not tell right answers from answers to other questions in its judge "
                f"check (the right answer scored higher in {figure_text(check.deciding)} of pairs, under the "
                f"{check.threshold:.0%} threshold, integer scores), so these scores are noise; {_get_a_judge(name)}.")
    if judge_without_signal(judge_model):
        return (f"NO SIGNAL: the judge {name} is a smoke-test judge, measured unable to tell right answers from wrong "
                f"ones, so these scores are noise; {_get_a_judge(name)}.")
    if check is None:
        return (f"Judge {name}: not checked in this run (judge_check.rows: 0), so how far its scores can be trusted "
                f"is not measured.")
    if check.outcome == "inconclusive":
        return (f"Judge {name}: not measured: with no reference, its check pairs each row's own answer with another "
                f"row's, and it scored the own answers {check.reference_accuracy_mean:.2f} on average, above an answer "
                f"to another question in {figure_text(check.deciding)} of pairs: the answers may be wrong rather than "
                f"the judge blind. Give the rows references (a reference column) for its report card (judge check "
                f"below).")
    tiers = [t for t in [check, *check.tiers] if t.outcome != "unmeasured"]
    by = {outcome: [t for t in tiers if t.outcome == outcome]
          for outcome in ("fails", "below_rule", "matched_by_rule", "passes")}

    def against(t: JudgeCheck, names: list[str]) -> str:
        # The rule the judge is weighed against on this tier; the one that passes it most often where several are named.
        best = max(names, key=lambda name: (t.baselines[name].rate or 0.0, -names.index(name))) if names else t.best_rule
        return f"{t.tier} ({figure_text(t.deciding)}" + (f" against {rule_text(t, best)})" if best else ")")

    parts = []
    if by["fails"]:
        parts.append("blind to " + "; ".join(
            f"{BLIND_TO.get(t.tier, t.tier)} ({t.tier} {figure_text(t.deciding)}"
            + (f"; a rule without a judge passes it: {best_rule_text(t)}" if t.rule_passes else "") + ")"
            for t in by["fails"]))
    if by["below_rule"]:
        parts.append("below a rule without a judge on " + "; ".join(
            against(t, t.rules_by_standing("below")) for t in by["below_rule"]))
    if by["matched_by_rule"]:
        parts.append("not told apart from a rule without a judge on " + "; ".join(
            against(t, t.rules_by_standing("not_told_apart") or list(t.baselines)) for t in by["matched_by_rule"]))
    if by["passes"]:
        parts.append("better than every rule without a judge on " + "; ".join(against(t, []) for t in by["passes"]))
    above = len(tiers) - len(by["fails"])
    tested = " by a paired test" if any(t.paired for t in tiers) else ""
    lead = (f"passes every tier of its report card, better than every rule without a judge{tested}"
            if len(by["passes"]) == len(tiers) else
            f"above the {check.threshold:.0%} threshold on {above} of its report card's {len(tiers)} tiers, better than "
            f"every rule without a judge{tested} on {len(by['passes']) or 'none'}")
    scores = "integer scores" if check.decided_by == "integer" else "the checklist's scores"
    return f"Judge {name}: {lead}: " + "; ".join(parts) + f" ({scores}; judge check below)."


def judge_check_title(check: JudgeCheck) -> str:
    """`Judge check`, flagged when the judge showed no signal or failed a tier."""
    failed = [t.tier for t in [check, *check.tiers] if t.outcome in ("fails", "below_rule")]
    return "Judge check" + (" - NO SIGNAL" if check.no_signal else f" - fails {', '.join(failed)}" if failed else "")


def judge_check_figures(check: JudgeCheck) -> str:
    """The judge check's outcome counts over all its pairs."""
    return (f"{check.pairs} pairs: right answer higher {check.reference_higher.describe()}, ties "
            f"{check.ties.describe()}, reversals {check.reversals.describe()}, failed {check.failed.describe()}")


def similarity_check_finding(check: SimilarityCheck) -> str:
    """Whether the similarity metric tells an instruction's own reference from a mismatched one."""
    return (f"an instruction is closer to its own reference than to a mismatched one in "
            f"{check.reference_higher.describe()} of rows (mean cosine {fmt(check.reference_mean)} vs "
            f"{fmt(check.mismatched_mean)})")


def pairwise_name(comparison: PairwiseComparison) -> str:
    """`A vs B`: the first model's win rate is the one reported."""
    return f"{comparison.model_a} vs {comparison.model_b}"


def pairwise_finding(comparison: PairwiseComparison) -> str:
    """Win rate, outcome counts and how often the two orders disagreed."""
    c = comparison
    length = (f"; the longer answer won {c.longer_wins.describe()} of decisive pairs, length-controlled win rate "
              f"{rate_with_ci(c.length_controlled_win_rate, None)}" if c.longer_wins is not None else "")
    tie_broken = (f" ({rate_with_ci(c.tie_broken_win_rate, None)} over {c.tie_broken_pairs} pairs with ties broken by "
                  f"expected scores)"
                  if c.tie_broken_win_rate is not None else "")
    return (f"win rate {rate_with_ci(c.win_rate, c.win_rate_ci)}{tie_broken}; wins {c.wins.describe()}, ties "
            f"{c.ties.describe()}, losses {c.losses.describe()}, failed {c.failed.describe()}; "
            f"the two orders disagreed in {c.order_disagreement.describe()}{length}")


def self_preference_warnings(judge_models: list[str], generators: list[str], check: Optional[JudgeCheck]) -> list[str]:
    """A warning per judge that is also a model under evaluation, with the judge check's figure beside it."""
    from llm_engineering.evaluation.models import split_variant

    bases = {split_variant(m)[0] for m in generators}
    tie_broken = check.reference_higher_tie_broken if check else None
    figure = (f" Its judge check: the right answer scored higher in {check.reference_higher.describe()} of pairs"
              f"{f' ({tie_broken.describe()} with ties broken by expected scores)' if tie_broken else ''}."
              if check else "")
    return [f"Self-preference: the judge {judge!r} is also a model under evaluation; judges tend to favour answers "
            f"like their own, so its scores of that model are suspect. Use a judge that is not evaluated.{figure}"
            for judge in dict.fromkeys(judge_models) if judge in bases]


LABELS_METHOD = ("The first judge scored each labelled answer with the scoring prompt (the row's instruction and reference "
                 "from this run). Exact and within-one agreement with 95% bootstrap intervals; Spearman's rank correlation; "
                 "quadratic-weighted Cohen's kappa with a 95% bootstrap interval. A label without a verdict counts as a "
                 "disagreement. The baselines need no judge: the majority label for every answer, and the length-only rule "
                 "(longer answers score higher, in the labels' own proportions). The judge is called valid on these labels "
                 "when the lower bound of its exact agreement's interval lies above the length-only rule's exact agreement.")

PAIRWISE_LABELS_METHOD = ("The first judge compared each labelled pair in both orders; two orders that disagree make a tie, "
                          "so a judge that always names the answer shown first ties every pair. Agreement with the human "
                          "preference (A, B or tie) with a 95% Wilson interval: a tie agrees with a human tie, and a label "
                          "without a verdict counts as a disagreement. The agreement on the decisive labels (people "
                          "preferred A or B), where a tie is a disagreement, is reported apart. The baselines need no judge: "
                          "the most common human preference, and the length-only rule (the longer answer preferred). The "
                          "judge is called valid on these labels when the lower bound of its interval lies above the "
                          "agreement of both baselines.")

LABEL_RATERS = {"judge": "judge", "judge_expected": "judge, expected score rounded", "majority": "majority label",
                "length": "length-only rule"}


def labels_title(report: LabelAgreement) -> str:
    """`Agreement with labels (12 pointwise labels; judge j, rubric handbook)`."""
    return f"Agreement with labels ({report.rows} {report.kind} labels; judge {report.judge_model}, rubric {report.rubric})"


def agreement_figures(a: PointwiseAgreement) -> str:
    """`exact 72% [61%, 81%], within one ..., Spearman 0.61, quadratic kappa 0.55 [0.30, 0.70]`."""
    kappa = fmt(a.kappa) + (f" [{a.kappa_ci[0]:.2f}, {a.kappa_ci[1]:.2f}]" if a.kappa_ci else "")
    failed = f", {a.failed} without a verdict" if a.failed else ""
    return (f"exact {rate_with_ci(a.exact, a.exact_ci)}, within one {rate_with_ci(a.within_one, a.within_one_ci)}, "
            f"Spearman {fmt(a.spearman)}, quadratic kappa {kappa}{failed}")


def _preference_agreement(a: PairwiseAgreement) -> str:
    """`agreement 8/10 (...); on decisive labels 5/6 (...)` (a report stored before the decisive figure: the first)."""
    decisive = f"; on decisive labels {a.agreement_decisive.describe()}" if a.agreement_decisive else ""
    return f"agreement {a.agreement.describe()}{decisive}"


def preference_figures(p: PreferenceAgreement) -> list[str]:
    """Pairwise labels: each rater's agreement with the human preferences (all, and decisive: A or B), and the
    judge's order disagreement."""
    return [f"{LABEL_RATERS['judge']}: {_preference_agreement(p.judge)}, {p.judge.failed} without a verdict; "
            f"its two orders disagreed in {p.order_disagreement.describe()}",
            f"{LABEL_RATERS['majority']}: {_preference_agreement(p.majority)}",
            f"{LABEL_RATERS['length']}: {_preference_agreement(p.length)}"]


def note_text(note: str) -> str:
    """A check that was skipped, and why."""
    return f"Note: {note}"


def reference_notes(models: list[ModelScores], reference_guided: bool) -> list[str]:
    """How many answered rows had a reference answer, where some had none (one note per run: the rows are the
    split's, the same for every model)."""
    first = models[0] if models else None
    if first is None or first.reference_rows is None or first.reference_rows == first.rows:
        return []
    judged = ("judged on the instruction and the answer alone (what the judge knows)" if reference_guided
              else "judged as every row is: this rubric never shows the judge a reference")
    return [f"References: {first.reference_rows} of {first.rows} answers' rows have a reference answer; the others are "
            f"{judged}, and have no similarity."]
