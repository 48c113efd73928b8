"""Expected scores read before the analysis, for a rubric that writes each analysis first (`expected_before_analysis`).

A judge that writes its analysis first has made up its mind by the time it writes the score: its probabilities there
sit on the integer it writes, so the expected score ties what the integer ties and ranks answers no better
(docs/judge-trust.md: 48% and 50% agreement with people, against 72% and 63% for the same judge's probabilities
before any analysis). So such a rubric keeps its integer scores where its analyses are, and reads its expected
scores from a second, short reply per answer: the same prompt with the structure of a score-first rubric, the reply
held to the scores alone (`{"accuracy": {"score": n}, "style": {"score": n}}`, in the rubric's order). The prompt
differs from the verdict's only in its last line, so vLLM's prefix cache holds the rest, and the reply is a few
tokens. Asked for the first criterion alone (the judge check, judge-bench), it is the score-first rubric's first
score (`verdict.first_score_schema`), token for token.

The expected score is then the judge's reading before its analysis, not the expectation of the integer it wrote;
reports name it so.
"""

from __future__ import annotations

import json
from typing import Optional, Sequence

from pydantic import BaseModel, ValidationError

from llm_engineering.evaluation.judging.cache import JudgeCache
from llm_engineering.evaluation.judging.conversation import History
from llm_engineering.evaluation.judging.rubric import Rubric, judge_messages
from llm_engineering.evaluation.judging.score_probs import ScoreDistribution, score_distribution
from llm_engineering.evaluation.judging.transport import (
    JudgeBackend,
    JudgeReply,
    ReplySchema,
    ask_judge,
    reply_json_schema,
    unfenced,
)
from llm_engineering.evaluation.judging.verdict import scores_model

# One answer as the judge reads it: instruction, answer, reference (or None), the conversation before it (or None).
Asked = tuple[str, str, Optional[str], History]


def _score_first(rubric: Rubric) -> Rubric:
    return rubric.model_copy(update={"score_first": True, "expected_before_analysis": False})


def probe_messages(rubric: Rubric, asked: Asked) -> list[dict[str, str]]:
    """The verdict's prompt with the structure of the score-first rubric: each score before its analysis."""
    instruction, answer, reference, history = asked
    return judge_messages(_score_first(rubric), instruction, answer, reference, history)


def _validated(model: type[BaseModel], text: str) -> tuple[Optional[BaseModel], Optional[str]]:
    """`text` as a reply of `model`, or why it is not one."""
    try:
        return model.model_validate(json.loads(unfenced(text))), None
    except (json.JSONDecodeError, ValidationError) as error:
        return None, str(error).splitlines()[0]


def _read(rubric: Rubric, model: type[BaseModel], reply: JudgeReply) -> dict[str, ScoreDistribution]:
    names = list(model.model_fields)

    def missing(why: Optional[str]) -> dict[str, ScoreDistribution]:
        return {name: ScoreDistribution(None, None, why) for name in names}

    if reply.text is None:
        return missing(f"the scores before the analysis were not read ({reply.error})")
    scores, problem = _validated(model, reply.text)
    if scores is None:
        return missing(f"the scores before the analysis were not read (invalid reply: {problem})")
    if not reply.logprobs:
        return missing(reply.logprobs_problem or "the judge backend returned no token logprobs")
    return {name: score_distribution(reply.text, reply.logprobs, criterion=name, values=rubric.criterion(name).values,
                                     score=getattr(scores, name).score) for name in names}


def written_scores(rubric: Rubric, count: int, text: Optional[str]) -> Optional[dict[str, int]]:
    """The scores a probe's reply (`probe_scores`) writes for the first `count` criteria, or None where it is no such
    reply."""
    scores = _validated(scores_model(rubric, count), text)[0] if text is not None else None
    return {name: getattr(scores, name).score for name in type(scores).model_fields} if scores is not None else None


def probe_scores(backend: JudgeBackend, rubric: Rubric, count: int, asked: Sequence[Asked], *,
                 cache: Optional[JudgeCache], messages: Optional[Sequence[list[dict[str, str]]]] = None,
                 ) -> list[tuple[dict[str, ScoreDistribution], JudgeReply]]:
    """For each answer, the first `count` criteria's distributions before any analysis (or why there are none),
    and the reply (its scores: `written_scores`); `messages`: the prompts to ask instead of the verdict's with the
    score-first structure."""
    model = scores_model(rubric, count)
    schema = ReplySchema("first_score" if count == 1 else "scores", reply_json_schema(model, {}))
    replies = ask_judge(backend, list(messages) if messages is not None else [probe_messages(rubric, a) for a in asked],
                        cache=cache,
                        is_valid=lambda text: _validated(model, text)[0] is not None, reply_schema=schema)
    return [(_read(rubric, model, reply), reply) for reply in replies]
