"""Escalation: only the rows the first judge is unsure of go to the second judge; its verdicts replace the first's,
and a row it fails keeps the first verdict and says why."""

import re
from math import log

import pytest
from datasets import Dataset

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.config import JudgeConfig
from llm_engineering.evaluation.judging.escalation import escalate, verdict_confidence, with_confidence
from llm_engineering.evaluation.judging.judge import Judge
from llm_engineering.evaluation.judging.rubric import load_rubric
from llm_engineering.evaluation.judging.scoring import score_answers
from llm_engineering.evaluation.judging.transport import JudgeReply

HELPFULNESS = load_rubric("helpfulness")  # one criterion, 1-5


def _reply(score, chance=None):
    """A verdict of `score`, the judge giving it probability `chance` (the rest on the next value)."""
    head, tail = '{"helpfulness":{"score":', ',"analysis":"a' + str(score) + '"}}'
    if chance is None:
        return JudgeReply(text=f"{head}{score}{tail}", logprobs_problem="no logprobs")
    other = score + 1 if score < 5 else score - 1
    candidates = [(str(score), log(chance)), (str(other), log(1 - chance))]
    return JudgeReply(text=f"{head}{score}{tail}", logprobs=[(head, None), (str(score), candidates), (tail, None)])


class Judged:
    def __init__(self, judge_id, replies):
        self.judge_id, self.replies, self.asked = judge_id, list(replies), []

    def cache_namespace(self, reply_schema):
        return {"backend": self.judge_id}

    def complete(self, conversations, on_reply, reply_schema):
        for index, messages in enumerate(conversations):
            self.asked.append(messages[1]["content"])
            on_reply(index, self.replies.pop(0))


def _answers(n):
    return Dataset.from_dict({col.ID: [f"r{i}" for i in range(n)], col.INSTRUCTION: [f"i{i}" for i in range(n)],
                              col.ANSWER: [f"answer {i}" for i in range(n)], col.MODEL_ID: ["m"] * n})


def test_only_unsure_rows_reach_the_second_judge_and_a_failure_keeps_the_first_verdict():
    first = Judged("vllm:first", [_reply(4, 0.95), _reply(3, 0.6), _reply(5, 0.99), _reply(2, 0.5),
                                  JudgeReply(None, "HTTP 503"), _reply(4, None)])
    scored = score_answers(_answers(6), Judge((first,), HELPFULNESS))
    # Unsure: rows 1 (0.6) and 3 (0.5), row 4 (no verdict), row 5 (no probabilities). The second judge fails row 3.
    second = Judged("openai:second", [_reply(1), JudgeReply(None, "HTTP 500: down"), _reply(2), _reply(5)])
    rows = escalate(scored, Judge((second,), HELPFULNESS), threshold=0.9).to_list()
    assert [re.search(r"answer (\d)\b", asked).group(1) for asked in second.asked] == ["1", "3", "4", "5"]
    assert [r[col.CONFIDENCE] for r in rows] == [pytest.approx(0.95), pytest.approx(0.6), pytest.approx(0.99),
                                                 pytest.approx(0.5), None, None]
    assert [r[col.ESCALATED] for r in rows] == [False, True, False, False, True, True]
    assert [r[col.score("helpfulness")] for r in rows] == [4, 1, 5, 2, 2, 5]
    assert [r[col.JUDGE_MODEL] for r in rows] == ["vllm:first", "openai:second", "vllm:first", "vllm:first",
                                                  "openai:second", "openai:second"]
    assert rows[3][col.ESCALATION_ERROR] == "openai:second: HTTP 500: down" and rows[3][col.JUDGE_ERROR] is None
    assert rows[4][col.JUDGE_ERROR] is None  # the first judge's failure, answered by the second


def test_the_confidence_is_the_lowest_probability_of_a_given_score_over_the_criteria():
    handbook = load_rubric("handbook")  # accuracy and style, 1-3
    row = {col.JUDGE_ERROR: None, col.score("accuracy"): 2, col.probabilities("accuracy"): [0.1, 0.7, 0.2],
           col.score("style"): 3, col.probabilities("style"): [0.0, 0.1, 0.9]}
    assert verdict_confidence(row, handbook) == 0.7
    assert verdict_confidence({**row, col.probabilities("style"): None}, handbook) is None


def test_every_single_judges_verdict_is_stored_with_its_confidence():
    judge = Judged("vllm:j", [_reply(4, 0.8), _reply(2), JudgeReply(None, "HTTP 503")])
    rows = with_confidence(score_answers(_answers(3), Judge((judge,), HELPFULNESS)), HELPFULNESS)
    assert rows[col.CONFIDENCE] == [pytest.approx(0.8), None, None]
    assert with_confidence(rows, HELPFULNESS)[col.CONFIDENCE] == rows[col.CONFIDENCE]  # again: replaced, not doubled


def test_escalation_needs_the_first_judges_logprobs_and_goes_one_step():
    with pytest.raises(ValueError, match="the first judge needs logprobs: true"):
        JudgeConfig(model="smollm2-135m", logprobs=False, escalate_to={"model": "qwen2.5-coder-1.5b"})
    with pytest.raises(ValueError, match="escalates no further"):
        JudgeConfig(model="smollm2-135m", escalate_to={"model": "a", "escalate_to": {"model": "b"}})


DEFAULT = load_rubric("task-accuracy")  # the default: accuracy and style, 1-3, each analysis before its score


def _verdict(accuracy, style, logprobs=True):
    """A default-rubric verdict: each analysis, then a score the judge is certain of by then."""
    tokens, text = [("{", None)], "{"
    for k, (name, score) in enumerate((("accuracy", accuracy), ("style", style))):
        head = f'{", " if k else ""}"{name}": {{"analysis": "Checked.", "score": '
        tokens += [(head, None), (str(score), [(str(score), 0.0)]), ("}", None)]
        text += f"{head}{score}}}"
    if not logprobs:
        return JudgeReply(text=text + "}", logprobs_problem="no logprobs")
    return JudgeReply(text=text + "}", logprobs=tokens + [("}", None)])


def _scores_first(accuracy, style):
    """The probe's reply, the scores before any analysis: `{value: probability}` per criterion, the likeliest
    written."""
    tokens, text = [("{", None)], "{"
    for k, (name, probabilities) in enumerate((("accuracy", accuracy), ("style", style))):
        head, score = f'{", " if k else ""}"{name}": {{"score": ', max(probabilities, key=probabilities.get)
        tokens += [(head, None), (str(score), [(str(v), log(p)) for v, p in probabilities.items()]), ("}", None)]
        text += f"{head}{score}}}"
    return JudgeReply(text=text + "}", logprobs=tokens + [("}", None)])


def test_under_the_default_rubric_the_confidence_is_read_before_the_analysis_and_only_unsure_rows_go_on():
    # Every verdict is certain of its integers after its analysis; before it, the judge is sure of rows 0 and 2
    # (0.9 and more on both criteria) and unsure of row 1's accuracy (0.55) and row 3's style (0.6).
    before = [({3: 0.95, 2: 0.05}, {2: 0.9, 3: 0.1}), ({2: 0.55, 1: 0.45}, {2: 1.0}),
              ({1: 0.97, 2: 0.03}, {3: 0.92, 2: 0.08}), ({3: 0.9, 2: 0.1}, {2: 0.6, 1: 0.4})]
    first = Judged("vllm:first", [_verdict(3, 2), _verdict(2, 2), _verdict(1, 3), _verdict(3, 2)] +
                   [_scores_first(*probabilities) for probabilities in before])
    scored = score_answers(_answers(4), Judge((first,), DEFAULT))
    # Replies for every row, as a second judge would give: only the unsure rows' may be asked for.
    second = Judged("openai:second", [_verdict(1, 1, logprobs=False), _verdict(2, 3, logprobs=False)] +
                    [_verdict(2, 2, logprobs=False)] * 2)
    rows = escalate(scored, Judge((second,), DEFAULT), threshold=0.8).to_list()
    assert [re.search(r"answer (\d)\b", asked).group(1) for asked in second.asked] == ["1", "3"]
    assert [r[col.CONFIDENCE] for r in rows] == [pytest.approx(c) for c in (0.9, 0.55, 0.92, 0.6)]
    assert [(r[col.ESCALATED], r[col.JUDGE_MODEL]) for r in rows] == [
        (False, "vllm:first"), (True, "openai:second"), (False, "vllm:first"), (True, "openai:second")]
    assert [(r[col.score("accuracy")], r[col.score("style")]) for r in rows] == [(3, 2), (1, 1), (1, 3), (2, 3)]
