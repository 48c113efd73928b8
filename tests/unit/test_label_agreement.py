"""Agreement with human labels: the report (hand-worked), the judging of exactly the labelled answers,
the config and preflight checks, and the figures in the summary, CLI lines, HTML report and metadata."""

import json

import pytest
from datasets import Dataset

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.config_base import ConfigError
from llm_engineering.evaluation.judging.judge import Judge
from llm_engineering.evaluation.judging.rubric import load_rubric
from llm_engineering.evaluation.judging.transport import JudgeReply
from llm_engineering.evaluation.report.html import render_html
from llm_engineering.evaluation.report.summary import SummaryInputs, build_summary
from llm_engineering.evaluation.report.text import label_rows, trust_lines
from llm_engineering.evaluation.trust.label_agreement import (
    check_labels_fit,
    nearest_level,
    pairwise_report,
    pointwise_report,
)
from llm_engineering.evaluation.trust.label_check import judge_labels
from llm_engineering.evaluation.trust.labels import Labels, LabelsError, PairwiseLabel, PointwiseLabel
from llm_engineering.preflight import check_labels_fit_rubric
from llm_engineering.run_config import parse_evaluation
from llm_engineering.run_overrides import Overrides, apply_overrides

HANDBOOK = load_rubric("handbook")


def pointwise(rows):
    """Labels from (id, answer, criterion, score) tuples, as if read from labels.jsonl, one a line."""
    return Labels(kind="pointwise", rows=[PointwiseLabel(id=i, answer=a, criterion=c, score=s) for i, a, c, s in rows],
                  source="labels.jsonl", lines=list(range(1, len(rows) + 1)))


def test_nearest_level_rounds_halves_up_and_stays_on_the_scale():
    assert [nearest_level(e, [1, 2, 3]) for e in (1.4, 1.5, 2.49, 2.5, 3.0, None)] == [1, 2, 2, 3, 3, None]
    assert nearest_level(0.2, [1, 2, 3]) == 1 and nearest_level(4.6, [1, 2, 3]) == 3


def test_pointwise_report_worked_by_hand():
    # Six accuracy labels, human 1,1,2,3,3,3; the judge 1,2,2,3,3 and no verdict on the last answer.
    # Two style labels come first in the file: they are a criterion of their own, reported after accuracy.
    labels = pointwise([("s1", "x", "style", 2), ("s2", "y", "style", 3),
                        *[(f"q{k}", "a" * length, "accuracy", score)
                          for k, (length, score) in enumerate(zip([5, 30, 10, 40, 20, 50], [1, 1, 2, 3, 3, 3]))]])
    report = pointwise_report(labels, HANDBOOK, "judge", scores=[2, 3, 1, 2, 2, 3, 3, None],
                              expected=[2.0, 3.0, 1.4, 1.6, 2.5, 2.9, 2.2, None], samples=300)
    assert [c.criterion for c in report.criteria] == ["accuracy", "style"] and report.rows == 8
    accuracy = report.criteria[0]
    assert (accuracy.rows, accuracy.scale) == (6, [1, 2, 3])
    # The judge matches rows 0, 2, 3, 4 (4 of 6); the failed row counts against; row 1 is one point off.
    assert (accuracy.judge.exact, accuracy.judge.within_one, accuracy.judge.failed) == (0.6667, 0.8333, 1)
    # Its five scored rows, judge 1,2,2,3,3 vs human 1,1,2,3,3: one disagreement of weight 1 against an expected
    # weighted disagreement of 35/5 = 7 (marginals human 2,1,2 and judge 1,2,2): kappa 1 - 1/7.
    assert accuracy.judge.kappa == 0.8571
    # Expected scores rounded: 1.4 -> 1, 1.6 -> 2, 2.5 -> 3, 2.9 -> 3, 2.2 -> 2: rows 0 and 3 match (2 of 6).
    assert accuracy.judge_expected.exact == 0.3333 and accuracy.expected_problem is None
    # The majority label is 3 (three times): rows 3, 4, 5 match; a constant rater has a kappa of 0 and no Spearman.
    assert (accuracy.majority.exact, accuracy.majority.kappa, accuracy.majority.spearman) == (0.5, 0.0, None)
    # By length the rows run 0, 2, 4, 1, 3, 5 and take the sorted labels 1, 1, 2, 3, 3, 3: predicted 1,3,1,3,2,3,
    # which matches rows 0, 3 and 5.
    assert accuracy.length.exact == 0.5
    # 4 of 6 cannot show, at 95%, that the judge beats 50%: its interval reaches below it.
    assert accuracy.judge.exact_ci[0] < 0.5 and accuracy.valid is False and report.valid is False
    assert accuracy.verdict.startswith("not shown valid on these labels: its exact agreement 67% [")
    assert "does not beat the length-only rule's 50%" in accuracy.verdict
    assert [(d.id, d.criterion, d.human, d.judge) for d in report.details[:3]] == [
        ("s1", "style", 2, 2), ("s2", "style", 3, 3), ("q0", "accuracy", 1, 1)]


def test_a_judge_that_beats_the_length_rule_is_valid():
    # Twenty labels, the judge right on each; the longest answers got the lowest labels, so the length-only rule
    # gives the 1s to the 3s and the 3s to the 1s, and is right only on the six middle rows: 30%.
    scores = [1] * 7 + [2] * 6 + [3] * 7
    labels = pointwise([(f"q{k}", "a" * (100 - k), "accuracy", s) for k, s in enumerate(scores)])
    report = pointwise_report(labels, HANDBOOK, "judge", scores=scores, expected=[None] * 20, samples=300)
    (accuracy,) = report.criteria
    assert (accuracy.judge.exact, accuracy.judge.exact_ci, accuracy.length.exact) == (1.0, [1.0, 1.0], 0.3)
    assert accuracy.valid and report.valid
    assert accuracy.verdict == "valid on these labels: its exact agreement 100% [100%, 100%] beats the length-only rule's 30%."
    # No logprobs: no rounded expected scores, and the reason is said rather than the integers reused.
    assert accuracy.judge_expected is None and accuracy.expected_problem == "some verdicts have no expected score"


def test_pairwise_report_worked_by_hand():
    labels = Labels(kind="pairwise", rows=[
        PairwiseLabel(id=str(k), answer_a="a" * la, answer_b="b" * lb, preferred=p)
        for k, (la, lb, p) in enumerate([(100, 50, "A"), (10, 20, "B"), (30, 30, "tie"), (5, 50, "A"), (60, 40, "B")])])
    # In order / swapped (B shown first): A,B -> A; B,A -> B; A,A -> a tie (each order chose what sat first);
    # A,tie -> A (0.75 points); no verdict on the last pair.
    report = pairwise_report(labels, HANDBOOK, "judge", in_order=["A", "B", "A", "A", None],
                             swapped=["B", "A", "A", "tie", "B"])
    p = report.pairwise
    assert [d.judge for d in report.details] == ["A", "B", "tie", "A", None]
    assert (p.judge.agreement.count, p.judge.agreement.total, p.judge.failed) == (4, 5, 1)
    assert (p.order_disagreement.count, p.order_disagreement.total) == (2, 4)  # pairs 2 and 3
    # The longer answer: A, B, tie, B, A -> right on pairs 0, 1, 2. The majority: A and B twice each, A first.
    assert (p.length.agreement.count, p.majority.agreement.count) == (3, 2)
    # The four labels that prefer an answer (all but pair 2): the judge is right on 0, 1, 3; the longer answer on
    # 0, 1; the majority's A on 0, 3.
    assert [(r.agreement_decisive.count, r.agreement_decisive.total) for r in (p.judge, p.length, p.majority)] == [
        (3, 4), (2, 4), (2, 4)]
    # 4 of 5 has the Wilson interval 38%-96%: its lower bound beats neither baseline (40% and 60%).
    assert p.verdict == ("not shown valid on these labels: its agreement 80% [38%, 96%] does not beat both the most "
                         "common human preference's 40% and the length-only rule's 60% (the lower bound of its 95% "
                         "interval must lie above each).")
    assert not p.valid and not report.valid


def _mostly_ties():
    """Forty pairs, 32 labelled a tie and 8 preferring A; B is always the longer answer, so the length-only rule
    agrees with none of them while the most common preference, a tie, agrees with 32."""
    return Labels(kind="pairwise", rows=[PairwiseLabel(id=str(k), answer_a="short", answer_b="much longer", preferred=p)
                                         for k, p in enumerate(["tie"] * 32 + ["A"] * 8)])


def test_a_judge_locked_on_a_position_is_not_valid_on_labels_with_many_ties():
    labels = _mostly_ties()
    # It names the answer shown first in both orders: its orders disagree on every pair, which makes every pair a tie.
    locked = pairwise_report(labels, HANDBOOK, "judge", in_order=["A"] * 40, swapped=["A"] * 40)
    p = locked.pairwise
    assert p.judge.agreement.count == p.majority.agreement.count == 32
    assert p.judge.agreement.ci[0] > p.length.agreement.rate  # the length-only rule alone would call it valid
    assert not p.valid and not locked.valid
    assert "does not beat both the most common human preference's 80%" in p.verdict
    assert (p.judge.agreement_decisive.count, p.judge.agreement_decisive.total) == (0, 8)
    lines = "\n".join(trust_lines(build_summary(SummaryInputs([_evaluations()], labels=locked))))
    assert "judge: agreement 32/40" in lines and "on decisive labels 0/8" in lines
    assert locked.metadata()["pairwise"]["agreement_decisive"]["judge"] == 0.0


def test_a_judge_that_agrees_with_people_is_valid_on_labels_with_many_ties():
    labels = _mostly_ties()
    # A tie in both orders for the ties; A first, then B (A's answer now second) for the rest.
    in_order = [r.preferred for r in labels.rows]
    swapped = [{"A": "B", "tie": "tie"}[r.preferred] for r in labels.rows]
    report = pairwise_report(labels, HANDBOOK, "judge", in_order=in_order, swapped=swapped)
    p = report.pairwise
    assert (p.judge.agreement.count, p.judge.agreement_decisive.count) == (40, 8)
    assert p.valid and report.valid
    assert p.verdict.startswith("valid on these labels: its agreement 100% [")


@pytest.mark.parametrize("row, words", [
    (("1", "x", "helpfulness", 2), "labels.jsonl, line 2: the labels score 'helpfulness', which rubric 'handbook' "
                                   "lacks (its criteria: accuracy, style)"),
    (("1", "x", "accuracy", 5), "labels.jsonl, line 2: accuracy score 5 is off the scale of rubric 'handbook' (1..3); "
                                "give a score on"),
])
def test_labels_that_do_not_fit_the_rubric_name_the_line_and_the_fix(row, words):
    with pytest.raises(LabelsError) as error:
        check_labels_fit(pointwise([("0", "y", "accuracy", 1), row]), HANDBOOK)
    assert words in str(error.value)


def split():
    return Dataset.from_dict({col.ID: ["q0", "q1", "q2"], col.INSTRUCTION: [f"Question {i}." for i in range(3)],
                              col.REFERENCE: ["Cats sleep a lot.", "Ships float.", "Planes fly."],
                              col.MODEL_ID: ["m"] * 3, col.ANSWER: [f"RUN-ANSWER-{i}" for i in range(3)]})


class ReferenceJudge:
    """Scores accuracy 3 when the answer is its own row's reference (the prompt shows the row's question),
    1 otherwise; style always 2. Records every prompt it is asked."""

    judge_id = "reference-judge"

    def __init__(self):
        self.prompts = []

    def cache_namespace(self, reply_schema):
        return {"judge": self.judge_id}

    def complete(self, conversations, on_reply, reply_schema):
        rows = split()
        for index, messages in enumerate(conversations):
            prompt = messages[1]["content"]
            self.prompts.append(prompt)
            own = any(f"Question {i}." in prompt and f"Answer: {r}\n" in prompt for i, r in enumerate(rows[col.REFERENCE]))
            on_reply(index, JudgeReply(text=json.dumps({"accuracy": {"analysis": "", "score": 3 if own else 1},
                                                        "style": {"analysis": "", "score": 2}}), prompt_tokens=5))


def test_the_judge_scores_exactly_the_labelled_answers_with_their_rows_question():
    labels = pointwise([("q0", "Cats sleep a lot.", "accuracy", 3), ("q0", "Cats sleep a lot.", "style", 3),
                        ("q1", "Cats sleep a lot.", "accuracy", 1), ("q2", "Planes fly.", "accuracy", 2)])
    judge = ReferenceJudge()
    report = judge_labels(split(), labels, Judge((judge,), HANDBOOK))
    # Three distinct answers (one labelled on two criteria), each judged once, none of the run's own answers.
    assert len(judge.prompts) == 3 and report.judge_calls == 3 and report.judge_tokens == 15
    assert not any("RUN-ANSWER" in p for p in judge.prompts)
    assert [(d.id, d.criterion, d.judge) for d in report.details] == [
        ("q0", "accuracy", 3), ("q0", "style", 2), ("q1", "accuracy", 1), ("q2", "accuracy", 3)]
    accuracy = report.criteria[0]
    assert accuracy.criterion == "accuracy" and accuracy.judge.exact == 0.6667  # q2's label 2 against the judge's 3


def test_labels_on_ids_the_run_lacks_are_an_error_naming_them():
    labels = pointwise([("q0", "x", "accuracy", 1), ("q9", "x", "accuracy", 1), ("q7", "y", "accuracy", 2)])
    with pytest.raises(LabelsError, match=r"2 id\(s\) that are not rows of this run: 'q9', 'q7'.*check --limit"):
        judge_labels(split(), labels, Judge((ReferenceJudge(),), HANDBOOK))


class FirstPositionJudge:
    """Always prefers the answer shown first."""

    judge_id = "first"

    def cache_namespace(self, reply_schema):
        return {"judge": self.judge_id, "schema": reply_schema.name}

    def complete(self, conversations, on_reply, reply_schema):
        for index, _ in enumerate(conversations):
            on_reply(index, JudgeReply(text=json.dumps({"analysis": "", "winner": "A"})))


def test_pairwise_labels_are_judged_in_both_orders():
    labels = Labels(kind="pairwise", rows=[PairwiseLabel(id="q0", answer_a="long answer", answer_b="short", preferred="A"),
                                           PairwiseLabel(id="q1", answer_a="x", answer_b="y", preferred="tie")])
    report = judge_labels(split(), labels, Judge((FirstPositionJudge(),), HANDBOOK))
    # A judge that always picks the first position names A, then B (swapped): its combined preference is a tie.
    assert [d.judge for d in report.details] == ["tie", "tie"] and report.judge_calls == 4
    assert report.pairwise.order_disagreement.count == 2 and report.pairwise.judge.agreement.count == 1


def _labels_file(tmp_path, text, name="labels.jsonl"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_a_labels_file_is_read_at_config_load_and_carried_inline(tmp_path):
    path = _labels_file(tmp_path, '{"id": "q001", "answer": "An AI twin.", "criterion": "accuracy", "score": 2}\n')
    config = parse_evaluation({"labels": str(path)})
    path.unlink()  # a remote step never sees the file: the config holds the labels themselves
    again = parse_evaluation(config.model_dump())
    assert again.labels.rows == [PointwiseLabel(id="q001", answer="An AI twin.", criterion="accuracy", score=2)]
    assert (again.labels.source, again.labels.lines) == (str(path), [1])


def test_a_bad_labels_file_fails_at_config_load_with_the_key_the_line_and_the_fix(tmp_path):
    path = _labels_file(tmp_path, '{"id": 1, "answer": "a", "criterion": "accuracy", "score": 2}\n'
                                  '{"id": 2, "answer": "b", "criterion": "accuracy", "score": "high"}\n')
    with pytest.raises(ConfigError) as error:
        parse_evaluation({"labels": str(path)})
    assert f"parameters.labels: {path}, line 2: score: must be a whole number" in str(error.value)
    with pytest.raises(ConfigError, match="no such labels file"):
        apply_overrides(parse_evaluation({}), Overrides(labels=str(tmp_path / "missing.jsonl")))


def test_preflight_checks_the_labels_against_the_rubric_after_the_command_line(tmp_path):
    path = _labels_file(tmp_path, '{"id": 1, "answer": "a", "criterion": "helpfulness", "score": 5}\n')
    config = parse_evaluation({"labels": str(path)})
    wrong = r"labels: .*line 1: the labels score 'helpfulness', which rubric 'task-accuracy'"
    with pytest.raises(ConfigError, match=wrong):
        check_labels_fit_rubric(config)
    check_labels_fit_rubric(apply_overrides(config, Overrides(rubric="helpfulness")))  # --rubric helpfulness fits them


def _evaluations():
    return Dataset.from_dict({col.ID: ["q0", "q1"], col.MODEL_ID: ["m"] * 2, col.score("accuracy"): [3, 1],
                              col.score("style"): [2, 2], col.JUDGE_ERROR: [None] * 2, col.JUDGE_MODEL: ["judge"] * 2})


def test_the_summary_cli_lines_html_and_metadata_show_the_labels_verdict():
    scores = [1] * 7 + [2] * 6 + [3] * 7
    labels = pointwise([(f"q{k}", "a" * (100 - k), "accuracy", s) for k, s in enumerate(scores)])
    report = pointwise_report(labels, HANDBOOK, "judge", scores=scores, expected=[None] * 20, samples=300)
    summary = build_summary(SummaryInputs([_evaluations()], labels=report))
    verdict = "valid on these labels: its exact agreement 100% [100%, 100%] beats the length-only rule's 30%."
    lines = trust_lines(summary)
    assert "Agreement with labels (20 pointwise labels; judge judge, rubric handbook):" in lines
    assert f"  accuracy (20 labels): {verdict}" in lines
    assert "    length-only rule: exact 30% [" in "\n".join(lines)
    assert [row[1] for row in label_rows(summary)] == ["judge", "judge, expected score rounded", "majority label",
                                                       "length-only rule"]
    page = render_html(summary)
    assert "Agreement with labels" in page and verdict in page and "length-only rule" in page
    metadata = report.metadata()
    assert metadata["valid"] is True and metadata["criteria"]["accuracy"]["length"]["exact"] == 0.3
    # ZenML stores the summary as JSON: the labels' report must survive the round trip.
    assert type(summary).model_validate_json(summary.model_dump_json()) == summary
    assert not any("Agreement with labels" in line for line in trust_lines(build_summary(SummaryInputs([_evaluations()]))))


def test_a_report_given_labels_of_the_other_kind_says_so():
    pairwise = Labels(kind="pairwise", rows=[PairwiseLabel(id="1", answer_a="a", answer_b="b", preferred="A")])
    with pytest.raises(LabelsError, match="pointwise labels are needed here, but these are pairwise"):
        pointwise_report(pairwise, HANDBOOK, "judge", scores=[2], expected=[None])
    with pytest.raises(LabelsError, match="pairwise labels are needed here, but these are pointwise"):
        pairwise_report(pointwise([("q1", "x", "accuracy", 2)]), HANDBOOK, "judge", in_order=["A"], swapped=["B"])


class RecordingJudge(FirstPositionJudge):
    """Prefers the first position and records the user prompt of each conversation it is asked."""

    def __init__(self):
        self.prompts = []

    def cache_namespace(self, reply_schema):
        return {"judge": self.judge_id, "schema": reply_schema.name if reply_schema else None}

    def complete(self, conversations, on_reply, reply_schema):
        self.prompts += [messages[-1]["content"] for messages in conversations]
        if reply_schema is not None and reply_schema.name == "pairwise_verdict":
            return super().complete(conversations, on_reply, reply_schema)
        for index, _ in enumerate(conversations):
            on_reply(index, JudgeReply(text=json.dumps({"accuracy": {"analysis": "", "score": 2},
                                                        "style": {"analysis": "", "score": 2}})))


def _second_turns(model, first_answer):
    """A model's answer to the second turn of conversation c, after its own first answer."""
    return Dataset.from_dict({
        col.ID: ["c/turn-2"], col.INSTRUCTION: ["Repeat it."], col.MODEL_ID: [model], col.ANSWER: [f"{model} repeats"],
        col.HISTORY: [[{"role": "user", "content": "Name a colour."}, {"role": "assistant", "content": first_answer}]],
    })


def test_a_labelled_turn_is_judged_after_its_own_models_earlier_answers():
    base, tuned = _second_turns("base", "BASE-SAID-RED"), _second_turns("tuned", "TUNED-SAID-BLUE")
    judge = RecordingJudge()
    labels = pointwise([("c/turn-2", "tuned repeats", "accuracy", 2)])  # the second model's answer
    judge_labels(base, labels, Judge((judge,), HANDBOOK), every_model=[base, tuned])
    (prompt,) = judge.prompts
    assert "TUNED-SAID-BLUE" in prompt and "BASE-SAID-RED" not in prompt and "Repeat it." in prompt

    judge = RecordingJudge()
    pair = Labels(kind="pairwise", rows=[PairwiseLabel(id="c/turn-2", answer_a="base repeats", answer_b="tuned repeats",
                                                       preferred="A")])
    judge_labels(base, pair, Judge((judge,), HANDBOOK), every_model=[base, tuned])
    assert len(judge.prompts) == 2  # both orders, each answer after its own model's first answer
    for prompt in judge.prompts:
        assert prompt.index("BASE-SAID-RED") < prompt.index("base repeats")
        assert prompt.index("TUNED-SAID-BLUE") < prompt.index("tuned repeats")
