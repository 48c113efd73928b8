"""Prediction-powered means: a judge's bias corrected by a few labels, never worse than the labels alone."""

import numpy as np
import ppi_py
import pytest
from datasets import Dataset

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.judging.rubric import load_rubric
from llm_engineering.evaluation.rates import with_ci
from llm_engineering.evaluation.report.html import render_html
from llm_engineering.evaluation.report.results_card import score_facts
from llm_engineering.evaluation.report.summary import SummaryInputs, build_summary
from llm_engineering.evaluation.report.text import trust_lines
from llm_engineering.evaluation.stored.labels import LabelAgreement
from llm_engineering.evaluation.trust.labels import Labels, PointwiseLabel
from llm_engineering.evaluation.trust.ppi import MIN_LABELLED, ppi_mean


def _rows(n_labelled, n_rest, bias, noise, seed=0):
    """True scores 1-3; a judge that adds `bias` and `noise` to them."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(1, 4, n_labelled + n_rest).astype(float)
    judge = truth + bias + rng.normal(0, noise, len(truth))
    return truth, judge


def test_a_lenient_judge_is_corrected_by_the_labels_and_the_interval_covers_the_truth():
    truth, judge = _rows(40, 400, bias=0.8, noise=0.3)
    estimate = ppi_mean(truth[:40], judge[:40], judge[40:])
    true_mean = truth.mean()
    assert estimate.judge_only.mean > true_mean + 0.6  # the judge alone is far off
    assert estimate.ci[0] <= true_mean <= estimate.ci[1]
    assert estimate.bias == pytest.approx(0.8, abs=0.15)
    # An informative judge narrows the labels' own interval.
    assert estimate.ci[1] - estimate.ci[0] < estimate.labels_only.ci[1] - estimate.labels_only.ci[0]
    assert (estimate.labelled, estimate.unlabelled) == (40, 400) and 0.5 < estimate.power_tuning <= 1


def test_the_tuning_is_ppi_pythons_own():
    truth, judge = _rows(30, 200, bias=0.4, noise=0.8, seed=3)
    estimate = ppi_mean(truth[:30], judge[:30], judge[30:])
    low, high = ppi_py.ppi_mean_ci(truth[:30], judge[:30], judge[30:], alpha=0.05, lam=None)
    assert estimate.ci == [pytest.approx(float(np.atleast_1d(low)[0]), abs=1e-4),
                           pytest.approx(float(np.atleast_1d(high)[0]), abs=1e-4)]


def test_a_judge_that_predicts_nothing_leaves_the_labels_mean():
    truth, _ = _rows(30, 100, bias=0, noise=0)
    constant = [2.0] * len(truth)
    estimate = ppi_mean(truth[:30], constant[:30], constant[30:])
    assert estimate.power_tuning == 0 and estimate.mean == estimate.labels_only.mean
    assert estimate.ci == estimate.labels_only.ci


def test_too_few_labels_give_no_interval_and_say_how_many_more():
    estimate = ppi_mean([3, 2, 3], [3, 3, 3], [3] * 20)
    assert estimate.mean is None and estimate.ci is None
    assert estimate.problem == f"3 labelled rows with a judge score: label {MIN_LABELLED - 3} more (at least {MIN_LABELLED})"


def test_rows_the_judge_could_not_score_are_left_out():
    truth, judge = _rows(12, 50, bias=0.5, noise=0.2)
    with_failures = ppi_mean(list(truth[:12]) + [1.0], list(judge[:12]) + [None], list(judge[12:]) + [None])
    assert (with_failures.labelled, with_failures.unlabelled) == (12, 50)
    assert with_failures == ppi_mean(truth[:12], judge[:12], judge[12:])


def _judged(model, judge_scores, answers=None):
    """One model's judged rows: row k answered `answers[k]` (default `answer-k`) and scored `judge_scores[k]` on
    accuracy and 3 on style (None: a failed verdict)."""
    n = len(judge_scores)
    answers = answers or [f"answer-{k}" for k in range(n)]
    return Dataset.from_dict({
        col.ID: [str(k) for k in range(n)], col.MODEL_ID: [model] * n, col.INSTRUCTION: ["q"] * n,
        col.ANSWER: answers, col.JUDGE_MODEL: ["vllm:j"] * n,
        col.JUDGE_ERROR: [None if s is not None else "invalid JSON" for s in judge_scores],
        col.score("accuracy"): judge_scores, col.score("style"): [3 if s is not None else None for s in judge_scores],
    })


def test_the_summary_corrects_a_labelled_criterion_and_says_so_in_words_html_and_json():
    # The judge gives 3 everywhere but people give 1 on every third row and 2 on the others: its mean 3.0 is far off.
    judge = [3] * 60
    truth = [1 if k % 3 == 0 else 2 for k in range(60)]
    labels = Labels(kind="pointwise", rows=[PointwiseLabel(id=str(k), answer=f"answer-{k}", criterion="accuracy",
                                                          score=truth[k]) for k in range(0, 60, 2)])
    other = _judged("other", [3] * 60, answers=[f"other-{k}" for k in range(60)])  # no label names its answers
    summary = build_summary(SummaryInputs([_judged("m", judge), other], rubric=load_rubric("handbook"),
                                          human_labels=labels))
    accuracy = summary.models[0].criterion("accuracy")
    p = accuracy.ppi
    assert (p.labelled, p.unlabelled, p.judge_only.mean) == (30, 30, 3.0)
    # A constant judge predicts nothing: the estimate is the labels' own, and it holds the true mean.
    assert p.power_tuning == 0 and p.mean == p.labels_only.mean and p.ci[0] <= sum(truth) / 60 <= p.ci[1]
    assert p.bias == pytest.approx(3.0 - sum(truth[::2]) / 30, abs=1e-4)
    assert summary.models[0].criterion("style").ppi is None and summary.models[1].criterion("accuracy").ppi is None
    lines = "\n".join(trust_lines(summary))
    assert "Corrected by human labels (PPI++" in lines and "m accuracy: " in lines and "from 30 labelled and 30 other" in lines
    assert "judge's bias +1." in lines
    assert "Corrected by human labels" in render_html(summary.model_copy(update={"labels": _agreement()}))
    assert summary.model_dump()["models"][0]["criteria"][0]["ppi"]["labelled"] == 30
    # The model's results card reads the summary's figures: the same corrected mean, and none where no label names
    # one of the model's answers.
    card = [score_facts(scores, "vllm:j")["scores corrected by human labels (PPI++)"] for scores in summary.models]
    assert card[0] == f"accuracy {with_ci(p.mean, p.ci)} (30 labelled rows, 30 other judged rows)" and card[1] is None


def test_too_few_labels_in_a_run_say_how_many_more():
    labels = Labels(kind="pointwise", rows=[PointwiseLabel(id="1", answer="answer-1", criterion="accuracy", score=1)])
    summary = build_summary(SummaryInputs([_judged("m", [3, 2, 3, None])], human_labels=labels))
    p = summary.models[0].criterion("accuracy").ppi
    assert p.mean is None and (p.labelled, p.unlabelled) == (1, 2)
    assert f"m accuracy: no corrected figure (1 labelled rows with a judge score: label {MIN_LABELLED - 1} more" \
        in "\n".join(trust_lines(summary))


def _agreement():
    """The label agreement a run with labels also has (the HTML shows the corrected means in its labels block)."""
    return LabelAgreement(judge_model="vllm:j", rubric="handbook", kind="pointwise", rows=30)


def _simulate(runs, bias, noise, n_labelled=40, n_rest=300, seed=0):
    """`runs` simulated runs of a 1-3 scale: people's scores, a judge's (theirs plus `bias` plus noise, rounded and
    clipped to the scale), a uniform random sample of rows labelled. Each run's estimate and the true mean."""
    rng = np.random.default_rng(seed)
    results = []
    for _ in range(runs):
        truth = rng.choice([1.0, 2.0, 3.0], size=n_labelled + n_rest, p=[0.3, 0.4, 0.3])
        judge = np.clip(np.round(truth + bias + rng.normal(0, noise, truth.size)), 1, 3)
        labelled = rng.choice(truth.size, n_labelled, replace=False)
        rest = np.setdiff1d(np.arange(truth.size), labelled)
        results.append((ppi_mean(truth[labelled], judge[labelled], judge[rest]), truth.mean()))
    return results


@pytest.mark.parametrize("bias", [0.0, 0.8])
def test_the_interval_covers_the_true_mean_at_its_nominal_rate_with_an_unbiased_and_a_lenient_judge(bias):
    # At least 95% of 1000 runs: a 90% interval covers about 93% here (the true mean is the rows' own, and the
    # labelled rows a sample of them without replacement), 20 runs under the bar; the 95% one about 97%, 17 over it.
    results = _simulate(1000, bias=bias, noise=0.5, seed=int(bias * 10))
    covered = sum(e.ci[0] <= true <= e.ci[1] for e, true in results)
    assert covered >= 0.95 * 1000, covered
    if bias:  # the judge alone misses the true mean by its bias
        assert all(e.judge_only.mean > true + 0.3 for e, true in results)


def test_the_interval_is_narrower_than_the_labels_alone_with_a_judge_that_follows_people_and_no_wider_without():
    def widths(results):
        return (np.mean([e.ci[1] - e.ci[0] for e, _ in results]),
                np.mean([e.labels_only.ci[1] - e.labels_only.ci[0] for e, _ in results]))

    ppi, labels = widths(_simulate(200, bias=0.5, noise=0.3, seed=1))
    assert ppi < 0.8 * labels  # a judge that follows people (noise 0.3 on a 1-3 scale)
    unrelated = _simulate(200, bias=0.0, noise=50.0, seed=2)  # noise that swamps the truth: the judge says nothing
    ppi, labels = widths(unrelated)
    assert ppi <= 1.05 * labels


def test_labels_that_say_their_rows_were_not_chosen_at_random_make_the_interval_not_hold():
    truth = [1 if k % 3 == 0 else 2 for k in range(40)]

    def corrected(chosen):
        labels = Labels(kind="pointwise", rows=[PointwiseLabel(id=str(k), answer=f"answer-{k}", criterion="accuracy",
                                                              score=truth[k], chosen=chosen(k)) for k in range(20)])
        summary = build_summary(SummaryInputs([_judged("m", [3] * 40)], human_labels=labels))
        return summary.models[0].criterion("accuracy").ppi, "\n".join(trust_lines(summary))

    assert corrected(lambda k: "random")[0].random_sample is True
    assert corrected(lambda k: None)[0].random_sample is None  # a file that does not say: the interval's condition stands
    p, lines = corrected(lambda k: "label-next" if k == 7 else "random")  # one label from 'Label next' is enough
    assert p.random_sample is False and p.mean is not None
    assert "the interval does not hold: some labels were not chosen at random" in lines


def test_a_comparison_of_two_models_is_corrected_by_labels_of_both_answers():
    # The judge scores both models 3 everywhere: no difference. People give model m 2 and model o 1 on every row.
    rows = 40
    m, o = _judged("m", [3] * rows), _judged("o", [3] * rows, answers=[f"other-{k}" for k in range(rows)])
    labels = Labels(kind="pointwise", rows=[
        PointwiseLabel(id=str(k), answer=answer, criterion="accuracy", score=score)
        for k in range(0, rows, 2) for answer, score in ((f"answer-{k}", 2), (f"other-{k}", 1))
    ] + [PointwiseLabel(id="1", answer="answer-1", criterion="accuracy", score=3)])  # one model only: not a pair
    summary = build_summary(SummaryInputs([m, o], human_labels=labels))
    (accuracy, style) = summary.comparisons
    assert (accuracy.model_a, accuracy.model_b, accuracy.difference) == ("o", "m", 0.0)
    p = accuracy.ppi
    assert (p.labelled, p.unlabelled, p.judge_only.mean, p.mean) == (20, 20, 0.0, -1.0)
    assert style.ppi is None  # no label of style
    assert "o - m accuracy difference: -1.00" in "\n".join(trust_lines(summary))


def test_a_pairwise_win_rate_is_corrected_by_pairwise_labels_in_either_position():
    from llm_engineering.evaluation.stored.figures import Rate
    from llm_engineering.evaluation.stored.pairwise import PairwiseComparison, PairwiseRow
    from llm_engineering.evaluation.trust.labels import PairwiseLabel
    from llm_engineering.evaluation.trust.ppi import ppi_win_rate

    rows = 30
    tuned, base = _judged("tuned", [3] * rows, answers=[f"t-{k}" for k in range(rows)]), _judged("base", [3] * rows)
    # The judge says tuned wins every pair (one failed); people say it loses every labelled pair.
    details = [PairwiseRow(id=str(k), points=None if k == 29 else 1.0, error="no verdict" if k == 29 else None)
               for k in range(rows)]
    zero = Rate(count=0, total=rows, rate=0.0)
    comparison = PairwiseComparison(model_a="tuned", model_b="base", judge_model="j", pairs=rows, wins=zero, ties=zero,
                                    losses=zero, failed=zero, win_rate=1.0, order_disagreement=zero,
                                    position_a_preferred=zero, details=details)
    # Half the labels show the baseline's answer first (as the report's labelling view does), half the tuned one's.
    labels = Labels(kind="pairwise", rows=[
        PairwiseLabel(id=str(k), answer_a=f"answer-{k}", answer_b=f"t-{k}", preferred="A") if k % 4 else
        PairwiseLabel(id=str(k), answer_a=f"t-{k}", answer_b=f"answer-{k}", preferred="B") for k in range(0, 24, 2)])
    p = ppi_win_rate(comparison, tuned.to_list(), base.to_list(), labels)
    assert (p.labelled, p.unlabelled, p.judge_only.mean, p.labels_only.mean) == (12, 17, 1.0, 0.0)
    assert p.mean == 0.0 and p.ci[0] <= 0.0 <= p.ci[1]
    pointwise = Labels(kind="pointwise", rows=[PointwiseLabel(id="0", answer="t-0", criterion="accuracy", score=1)])
    assert ppi_win_rate(comparison, tuned.to_list(), base.to_list(), pointwise) is None


# Two models, two answers per prompt, a judge whose scores follow people's with noise: PPI++ weighs it (lambda > 0),
# so each corrected figure depends on which label meets which judge score. Each is compared with ppi-python's own
# estimate (lambda tuned by the library) on the rows as this test pairs them: by id, sample and exact answer.
IDS, SAMPLES = 30, 2
KEYS = [(str(k), s) for k in range(IDS) for s in range(SAMPLES)]


def _two_models(seed=5):
    """People's and the judge's accuracy of each answer of models m and o (the judge's: people's plus noise, rounded
    and clipped to 1-3; one verdict failed), and the (id, sample) keys labelled: most for both models, two for m
    alone."""
    rng = np.random.default_rng(seed)
    truth, judge = {}, {}
    for model, shift in (("m", 0.0), ("o", 0.6)):
        truth[model] = {key: float(np.clip(rng.integers(1, 4) + round(shift * rng.random()), 1, 3)) for key in KEYS}
        judge[model] = {key: int(np.clip(round(t + 0.4 + rng.normal(0, 0.6)), 1, 3)) for key, t in truth[model].items()}
    judge["o"][KEYS[7]] = None  # a failed verdict, among the unlabelled rows
    order = rng.permutation(len(KEYS))
    both, m_only = [KEYS[k] for k in order[:24] if KEYS[k] != KEYS[7]], [KEYS[k] for k in order[40:42]]
    return truth, judge, both, m_only


def _answer(model, key):
    return f"{model} answers {key[0]}, sample {key[1]}"


def _sampled(model, judge):
    rows = _judged(model, [judge[key] for key in KEYS], answers=[_answer(model, key) for key in KEYS])
    return rows.map(lambda row, k: {col.ID: KEYS[k][0]}, with_indices=True).add_column(col.SAMPLE, [s for _, s in KEYS])


def _library(human, judged, rest):
    """ppi-python's PPI++ mean and 95% interval, its lambda tuned by itself; the judge's failed rows left out."""
    pairs = [(h, j) for h, j in zip(human, judged) if j is not None]
    y, yhat = np.array([h for h, _ in pairs]), np.array([j for _, j in pairs], dtype=float)
    unlabelled = np.array([j for j in rest if j is not None], dtype=float)
    mean = ppi_py.ppi_mean_pointestimate(y, yhat, unlabelled, lam=None)
    low, high = ppi_py.ppi_mean_ci(y, yhat, unlabelled, alpha=0.05, lam=None)
    return [float(np.atleast_1d(v)[0]) for v in (mean, low, high)], (len(y), len(unlabelled))


def _assert_the_librarys(estimate, human, judged, rest):
    (mean, low, high), counts = _library(human, judged, rest)
    assert (estimate.labelled, estimate.unlabelled) == counts
    assert estimate.power_tuning > 0.1  # the judge's term counts (0.2-0.5 here): a wrong pairing moves the figures
    assert estimate.mean == pytest.approx(mean, abs=1e-4) and estimate.ci == [pytest.approx(low, abs=1e-4),
                                                                             pytest.approx(high, abs=1e-4)]


def test_each_corrected_mean_and_comparison_pairs_every_label_with_its_own_answers_judge_score():
    truth, judge, both, m_only = _two_models()
    labels = Labels(kind="pointwise", rows=[
        PointwiseLabel(id=key[0], answer=_answer(model, key), criterion="accuracy", score=int(truth[model][key]))
        for key in both for model in ("m", "o")] + [
        PointwiseLabel(id=key[0], answer=_answer("m", key), criterion="accuracy", score=int(truth["m"][key]))
        for key in m_only])
    summary = build_summary(SummaryInputs([_sampled("m", judge["m"]), _sampled("o", judge["o"])], human_labels=labels))

    for index, model in enumerate(("m", "o")):
        labelled = both + m_only if model == "m" else both
        rest = [judge[model][key] for key in KEYS if key not in labelled]
        _assert_the_librarys(summary.models[index].criterion("accuracy").ppi, [truth[model][key] for key in labelled],
                             [judge[model][key] for key in labelled], rest)

    def difference(scores, key):  # o's minus m's (the comparison's model a is o, its baseline m)
        o, m = scores["o"][key], scores["m"][key]
        return None if o is None or m is None else o - m

    (accuracy, _) = summary.comparisons
    assert (accuracy.model_a, accuracy.model_b) == ("o", "m")
    _assert_the_librarys(accuracy.ppi, [difference(truth, key) for key in both],
                         [difference(judge, key) for key in both],
                         [difference(judge, key) for key in KEYS if key not in both])


def test_a_corrected_win_rate_pairs_every_label_with_its_own_pairs_verdict():
    from llm_engineering.evaluation.judging.pairwise import tally
    from llm_engineering.evaluation.stored.pairwise import PairwiseRow
    from llm_engineering.evaluation.trust.labels import PairwiseLabel
    from llm_engineering.evaluation.trust.ppi import ppi_win_rate

    truth, judge, both, _ = _two_models(seed=6)
    # People prefer o's answer where they score it higher; the judge where its scores say so (a failed verdict: none).
    human = {key: (np.sign(truth["o"][key] - truth["m"][key]) + 1) / 2 for key in KEYS}
    judged = {key: None if judge["o"][key] is None else (np.sign(judge["o"][key] - judge["m"][key]) + 1) / 2
              for key in KEYS}
    details = [PairwiseRow(id=key[0], sample=key[1], points=judged[key], error=None if judged[key] is not None else "x")
               for key in KEYS]
    comparison = tally("o", "m", "j", details)
    # Every other label shows the baseline's answer first (as the labelling view may), the others o's.
    words = {1.0: "A", 0.5: "tie", 0.0: "B"}
    labels = Labels(kind="pairwise", rows=[
        PairwiseLabel(id=key[0], answer_a=_answer("o", key), answer_b=_answer("m", key), preferred=words[human[key]])
        if k % 2 else
        PairwiseLabel(id=key[0], answer_a=_answer("m", key), answer_b=_answer("o", key),
                      preferred=words[1 - human[key]]) for k, key in enumerate(both)])
    estimate = ppi_win_rate(comparison, _sampled("o", judge["o"]).to_list(), _sampled("m", judge["m"]).to_list(),
                            labels)
    _assert_the_librarys(estimate, [human[key] for key in both], [judged[key] for key in both],
                         [judged[key] for key in KEYS if key not in both])
