"""The judge benchmark's figures, on constructed pairs whose right answer is certain and stand-in judges whose
verdicts are known: one that reads the answers, one that always names the answer shown first."""

import math
import re

import pytest

from llm_engineering.evaluation.judging.judge import Judge
from llm_engineering.evaluation.judging.rubric import load_rubric
from llm_engineering.evaluation.judging.transport import JudgeReply
from llm_engineering.evaluation.report.judge_bench import bench_cost_line, bench_rows, render_bench_html
from llm_engineering.evaluation.trust.human_pairs import HumanPair
from llm_engineering.evaluation.trust.judge_bench import PairDecisions, bench_judge, rating_decisions

RUBRIC = load_rubric("helpfulness")  # one criterion, 1-5


class StandInJudge:
    """Pairwise: the answer marked RIGHT wins (or, `first_shown`, always the answer shown first). Pointwise: 5 for a
    RIGHT answer, 1 otherwise, with the probabilities of a confident judge at the score token (`logprobs=False`: a
    preference reply without them, as from an endpoint that gives none)."""

    def __init__(self, first_shown=False, broken_pairwise=0, logprobs=True):
        self.judge_id, self.first_shown, self.broken, self.logprobs = "stand-in", first_shown, broken_pairwise, logprobs
        self.asked = 0

    def cache_namespace(self, reply_schema):
        return {"judge": self.judge_id, "first_shown": self.first_shown}

    def complete(self, conversations, on_reply, reply_schema):
        for index, messages in enumerate(conversations):
            self.asked += 1
            text = messages[-1]["content"]
            if reply_schema is not None and reply_schema.name == "pairwise_verdict":
                if self.broken:
                    self.broken -= 1
                    on_reply(index, JudgeReply(text='{"winner": '))
                    continue
                a = re.search(r"Answer A: (.*?)\n\nAnswer B:", text, re.S).group(1)
                winner = "A" if self.first_shown or "RIGHT" in a else "B"
                on_reply(index, JudgeReply(text=f'{{"analysis":"","winner":"{winner}"}}'))
            elif reply_schema is not None and reply_schema.name == "preference":
                one = re.search(r"Answer 1: (.*?)\n\nAnswer 2:", text, re.S).group(1)
                better = "1" if self.first_shown or "RIGHT" in one else "2"
                candidates = [(better, math.log(0.8)), (str(3 - int(better)), math.log(0.2))]
                head = '{"better":'
                on_reply(index, JudgeReply(text=f"{head}{better}}}", logprobs=[(head, None), (better, candidates),
                                                                             ("}", None)] if self.logprobs else None))
            else:
                score = 5 if "RIGHT" in text.split("Answer:")[-1] else 1
                head, tail = '{"helpfulness":{"score":', ',"analysis":"-"}}'
                probabilities = {5: 0.9, 4: 0.1} if score == 5 else {1: 0.8, 2: 0.2}
                candidates = [(str(v), math.log(p)) for v, p in probabilities.items()]
                on_reply(index, JudgeReply(text=f"{head}{score}{tail}",
                                           logprobs=[(head, None), (str(score), candidates), (tail, None)]))


def _pairs():
    right, wrong = "RIGHT: the short answer.", "A long, wordy and wrong answer that goes on and on."
    return [
        HumanPair(id="1", instruction="q1", output_1=right, output_2=wrong, label="A"),
        HumanPair(id="2", instruction="q2", output_1=wrong, output_2=right, label="B"),
        HumanPair(id="3", instruction="q3", output_1=wrong + " more", output_2=right, label="B"),
        HumanPair(id="tie", instruction="q4", output_1=right, output_2=right + " too", label="tie"),
    ]


def test_a_judge_that_reads_the_answers_agrees_everywhere_and_without_position_bias():
    report = bench_judge(_pairs(), Judge((StandInJudge(),), RUBRIC), "constructed.jsonl")
    pairwise, expected = report.ways["pairwise"], report.ways["pointwise_expected"]
    assert (pairwise.agreement.count, pairwise.agreement.total) == (6, 6)  # 3 pairs not a tie, 2 orders each
    assert (pairwise.both_orders_right.count, pairwise.both_orders_right.total) == (3, 3)
    # Position bias over every pair: 3 of 6 on the labelled ones, and the tie pair's two answers both marked RIGHT.
    assert (pairwise.first_shown.count, pairwise.first_shown.total) == (5, 8)
    assert (expected.agreement.count, expected.agreement.total) == (3, 3) and expected.first_shown is None
    assert report.ways["pointwise_integer"].agreement.count == 3 and report.ways["pointwise_integer"].ties.count == 1
    # The baselines: the wrong answers are the longer ones; the first shown is right in one order of each pair.
    assert report.ways["longer"].agreement.count == 0
    assert (report.ways["first_shown"].agreement.count, report.ways["first_shown"].agreement.total) == (3, 6)
    assert report.tie_labels == 1 and report.details[0].expected == [pytest.approx(4.9), pytest.approx(1.2)]
    preference, averaged = report.ways["preference"], report.ways["preference_averaged"]
    assert (preference.agreement.count, preference.agreement.total, preference.first_shown.count) == (6, 6, 5)
    assert (averaged.agreement.count, averaged.agreement.total) == (3, 3) and averaged.first_shown is None
    assert report.details[1].preference == [pytest.approx(0.2), pytest.approx(0.2), pytest.approx(0.2)]
    figures = report.json_report()
    assert figures["agreement"]["pairwise"]["rate"] == 1.0 and figures["agreement"]["longer"]["total"] == 3


def test_a_judge_that_names_the_first_answer_is_at_chance_and_shown_as_biased():
    report = bench_judge(_pairs(), Judge((StandInJudge(first_shown=True),), RUBRIC), "constructed.jsonl")
    pairwise = report.ways["pairwise"]
    assert (pairwise.agreement.count, pairwise.agreement.total) == (3, 6)
    assert pairwise.both_orders_right.count == 0 and pairwise.first_shown.rate == 1.0
    # The preference numbers lean the same way; their probabilities averaged over both orders cancel the lean out.
    assert report.ways["preference"].first_shown.rate == 1.0
    averaged = report.ways["preference_averaged"]
    assert (averaged.agreement.count, averaged.ties.count, averaged.ties.total) == (0, 4, 4)
    assert "100%" in bench_rows(report)[0][3]


def test_a_judge_without_logprobs_is_decided_by_the_number_it_wrote_and_says_so():
    report = bench_judge(_pairs(), Judge((StandInJudge(logprobs=False),), RUBRIC), "constructed.jsonl")
    preference, averaged = report.ways["preference"], report.ways["preference_averaged"]
    assert (preference.agreement.count, preference.agreement.total, preference.failed.count) == (6, 6, 0)
    assert (averaged.agreement.count, averaged.agreement.total, averaged.failed.count) == (3, 3, 0)
    assert not any(problem.startswith("preference") for d in report.details for problem in d.problems)
    # Every preference reading, two per pair, came from the written number, and the report says so.
    assert report.written_preferences == 8 and report.json_report()["written_preferences"] == 8
    assert "8 preference readings taken from the number the judge wrote" in bench_cost_line(report)
    with_logprobs = bench_judge(_pairs(), Judge((StandInJudge(),), RUBRIC), "constructed.jsonl")
    assert with_logprobs.written_preferences == 0 and "written" not in bench_cost_line(with_logprobs)


def test_a_failed_verdict_counts_against_agreement_and_is_named():
    report = bench_judge(_pairs(), Judge((StandInJudge(broken_pairwise=1),), RUBRIC), "constructed.jsonl")
    pairwise = report.ways["pairwise"]
    assert (pairwise.agreement.count, pairwise.agreement.total, pairwise.failed.count) == (5, 6, 1)
    assert report.details[0].decisions["pairwise"] == [None, "A"] and "invalid JSON" in report.details[0].problems[0]
    page = render_bench_html(report)
    assert "invalid JSON" in page and "baseline: the longer answer" in page


def test_a_second_run_asks_only_what_the_cache_lacks(tmp_path):
    from llm_engineering.evaluation.judging.cache import JudgeCache

    cache = JudgeCache(tmp_path)
    first, judge = StandInJudge(), StandInJudge()
    bench_judge(_pairs()[:2], Judge((first,), RUBRIC, cache), "a")
    again = bench_judge(_pairs(), Judge((judge,), RUBRIC, cache), "a")
    assert judge.asked == 12  # the two new pairs: 2 orders of 2 prompts + 2 answers each; the first two all cached
    assert again.cached == 12 and again.ways["pairwise"].agreement.count == 6
    cache.close()


def test_a_preference_without_logprobs_or_number_is_a_named_failure():
    from llm_engineering.evaluation.judging.pairwise import first_answer_preferred

    assert first_answer_preferred(JudgeReply('{"better":1}')) == (None, "the judge backend returned no token logprobs")
    assert first_answer_preferred(JudgeReply('{"winner":"A"}'))[1].startswith("no preference in the reply")
    assert first_answer_preferred(JudgeReply(None, "HTTP 503: down")) == (None, "HTTP 503: down")


def test_llmbar_rating_counts_an_integer_tie_half_right_and_a_decided_pair_in_both_orders():
    from llm_engineering.evaluation.trust.judge_bench import way_figures

    details = [PairDecisions(id=str(i), label=label, decisions={"pointwise_rating": rating_decisions(scores)})
               for i, (label, scores) in enumerate([("A", [3, 1]), ("B", [2, 2]), ("A", [1, 3]), ("B", [3, 3])])]
    figures = way_figures(details, "pointwise_rating", ordered=False)
    # right twice, a tie (one order right), wrong twice, a tie: 4 of 8 orders, as LLMBar's Rating counts it.
    assert (figures.agreement.count, figures.agreement.total) == (4, 8)
    assert figures.both_orders_right.count == 1 and figures.ties.count == 0


def test_on_pairs_with_a_reference_each_reference_metric_is_a_baseline_beside_the_judge():
    reference = "LoRA trains small adapter matrices on one H100 GPU."
    close, far = "LoRA trains adapter matrices on an H100 GPU.", "It is a kind of database index for vectors."
    pairs = [
        HumanPair(id="1", instruction="q1", output_1=close, output_2=far, label="A", reference=reference),
        HumanPair(id="2", instruction="q2", output_1=far, output_2=close, label="B", reference=reference),
        HumanPair(id="3", instruction="q3", output_1=far, output_2=close, label="A", reference=reference),  # people differ
        HumanPair(id="4", instruction="q4", output_1=close, output_2=far, label="A"),  # no reference: no metric decides
    ]
    report = bench_judge(pairs, Judge((StandInJudge(),), RUBRIC), "referenced.jsonl")
    for name in ("reference_words", "token_f1", "rouge_l", "chrf", "bleu", "reference_facts"):
        figures = report.ways[name]
        # The answer closer to the reference wins each of the 3 pairs with one: right on 2, wrong on the third.
        assert (figures.agreement.count, figures.agreement.total) == (2, 3), name
    assert "math" not in report.ways  # a prose reference has no final value: the metric decides no pair
    assert report.ways["longer"].agreement.total == 4  # the judge-free rules of before still read every pair
    table = {row[0]: row[1] for row in bench_rows(report)}
    assert table["baseline: reference_words (pairs with a reference)"].startswith("2/3")
    assert "referenced" in render_bench_html(report)  # every pair's decisions, the metrics' among them
