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
