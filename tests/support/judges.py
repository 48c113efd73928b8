"""Stand-in judges for unit tests of judging's bookkeeping (order, errors, cache), never of a model."""

import json

from datasets import Dataset

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.judging.transport import JudgeReply


class ScriptedJudge:
    """Replies fixed strings in order and counts requests: exercises bookkeeping, not a model."""

    judge_id = "scripted"

    def __init__(self, replies):
        self.replies = list(replies)
        self.asked = []

    def cache_namespace(self, reply_schema):
        return {"backend": "scripted"}

    def complete(self, conversations, on_reply, reply_schema):
        for index, messages in enumerate(conversations):
            self.asked.append(messages[1]["content"])
            reply = self.replies.pop(0)
            if not isinstance(reply, JudgeReply):
                reply = JudgeReply(text=reply, prompt_tokens=10, completion_tokens=5)
            on_reply(index, reply)


def answers(n):
    return Dataset.from_dict({
        col.ID: [f"r{i}" for i in range(n)], col.INSTRUCTION: [f"instruction {i}" for i in range(n)],
        col.ANSWER: [f"answer {i}" for i in range(n)], col.MODEL_ID: ["m"] * n,
    })


GOOD = json.dumps({"accuracy": {"analysis": "ok", "score": 2}, "style": {"analysis": "ok", "score": 3}})


def assert_read_at_the_score(row, criterion: str, values: list[int]) -> None:
    """The row's distribution over `criterion`'s scale was read where the judge wrote its score: the judge decodes
    greedily, so the written score is the value it found most likely (read at another token, it need not be). A
    confident judge's distribution may be the integer itself; that passes too."""
    probabilities = row[col.probabilities(criterion)]
    assert len(probabilities) == len(values), probabilities
    assert values[probabilities.index(max(probabilities))] == row[col.score(criterion)], (criterion, probabilities, row)
    assert min(values) <= row[col.expected(criterion)] <= max(values)
