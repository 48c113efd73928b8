"""The LLM judge: accuracy and style, each scored 1-3 with a short analysis, as JSON.

The prompt template and the parser are plain values; backends only turn chat messages into
raw replies. A reply that does not parse or validate becomes an error on its row (with the
raw reply kept), never a crash and never a silent gap in the averages.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any, Callable, Optional, Protocol

from datasets import Dataset, Value
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.judge_cache import JudgeCache, cache_key

logger = logging.getLogger(__name__)

JUDGE_SYSTEM_PROMPT = (
    "You are a helpful assistant who evaluates answers based on accuracy and style. "
    "Provide your response in JSON format with a short analysis and score for each criterion."
)

JUDGE_PROMPT_TEMPLATE = """You are an expert judge. Evaluate the quality of an answer to an instruction on two criteria:
1. Accuracy: how factually correct is the information in the answer? You are a technical expert in this topic.
2. Style: is the tone and writing style right for a blog post or social media content? It should use simple but technical words and avoid formal or academic language.

Accuracy scale:
1 (Poor): contains factual errors or misleading information
2 (Good): mostly accurate, with minor errors or omissions
3 (Excellent): highly accurate and comprehensive

Style scale:
1 (Poor): too formal, uses overly complex words
2 (Good): balances technical content and accessibility, but still uses formal words and expressions
3 (Excellent): accessible language for a blog or social media, with simple but precise technical terms where needed

Example of bad style: The Llama2 7B model constitutes a noteworthy progression in the field of artificial intelligence, serving as the successor to its predecessor, the original Llama architecture.
Example of excellent style: Llama2 7B outperforms the original Llama model across multiple benchmarks.

Instruction: {instruction}

Answer: {answer}

Give your evaluation as JSON with this structure:
{{"accuracy": {{"analysis": "...", "score": 1}}, "style": {{"analysis": "...", "score": 1}}}}"""


class CriterionVerdict(BaseModel):
    model_config = ConfigDict(extra="forbid")

    analysis: str
    score: int = Field(ge=1, le=3)


class JudgeVerdict(BaseModel):
    """What the judge must return for one answer."""

    model_config = ConfigDict(extra="forbid")

    accuracy: CriterionVerdict
    style: CriterionVerdict


def verdict_schema(max_analysis_chars: int) -> dict[str, Any]:
    """JSON schema that constrains generation: scores limited to 1..3, analyses kept short."""
    criterion = {
        "type": "object",
        "properties": {
            "analysis": {"type": "string", "maxLength": max_analysis_chars},
            "score": {"type": "integer", "enum": [1, 2, 3]},
        },
        "required": ["analysis", "score"],
        "additionalProperties": False,
    }
    return {
        "type": "object",
        "properties": {"accuracy": criterion, "style": criterion},
        "required": ["accuracy", "style"],
        "additionalProperties": False,
    }


@dataclass(frozen=True)
class ParsedVerdict:
    verdict: Optional[JudgeVerdict]
    error: Optional[str]


def parse_verdict(raw: str) -> ParsedVerdict:
    """Parse and validate one raw judge reply; tolerates a ```json fence around the object."""
    text = raw.strip()
    if text.startswith("```"):
        text = text.strip("`").removeprefix("json").strip()
    try:
        payload = json.loads(text)
    except json.JSONDecodeError as error:
        return ParsedVerdict(None, f"invalid JSON ({error.msg} at char {error.pos})")
    try:
        return ParsedVerdict(JudgeVerdict.model_validate(payload), None)
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(map(str, item['loc'])) or 'reply'}: {item['msg']}" for item in error.errors()
        )
        return ParsedVerdict(None, f"invalid verdict ({problems})")


def judge_messages(
    instruction: str, answer: str, template: str = JUDGE_PROMPT_TEMPLATE
) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": JUDGE_SYSTEM_PROMPT},
        {"role": "user", "content": template.format(instruction=instruction, answer=answer)},
    ]


@dataclass(frozen=True)
class JudgeReply:
    """One raw reply, or the transport error that prevented it (after every retry)."""

    text: Optional[str]
    error: Optional[str] = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached: bool = False


OnReply = Callable[[int, JudgeReply], None]


@dataclass(frozen=True)
class ReplySchema:
    """The JSON object a judge call must return: its name (for OpenAI's `response_format`) and schema.

    Backends use the verdict schema when given none; other tasks (pairwise comparison) pass theirs.
    """

    name: str
    schema: dict[str, Any]


class JudgeBackend(Protocol):
    """Turns chat conversations into replies; calls `on_reply(index, reply)` as each arrives."""

    judge_id: str

    def cache_namespace(self, reply_schema: Optional[ReplySchema] = None) -> dict[str, Any]:
        """Everything besides the messages that decides a reply (model, sampling, schema)."""
        ...

    def complete(
        self, conversations: list[list[dict[str, str]]], on_reply: OnReply, reply_schema: Optional[ReplySchema] = None
    ) -> None: ...


def ask_judge(
    judge: JudgeBackend,
    conversations: list[list[dict[str, str]]],
    cache: Optional[JudgeCache],
    is_valid: Callable[[str], bool],
    reply_schema: Optional[ReplySchema] = None,
) -> list[JudgeReply]:
    """One reply per conversation, through the cache: hits are not asked again, and each new
    reply that `is_valid` is stored at once (so an interrupted run resumes where it stopped)."""
    namespace = judge.cache_namespace(reply_schema) if reply_schema else judge.cache_namespace()
    keys = [cache_key(namespace, messages) for messages in conversations] if cache is not None else []
    replies: dict[int, JudgeReply] = {}
    for i in range(len(conversations)):
        hit = cache.get(keys[i]) if cache is not None else None
        if hit is not None:
            replies[i] = JudgeReply(**{**hit, "cached": True})
    misses = [i for i in range(len(conversations)) if i not in replies]
    logger.info("%s: %d prompts, %d from cache, %d to ask", judge.judge_id, len(conversations),
                len(conversations) - len(misses), len(misses))

    def on_reply(position: int, reply: JudgeReply) -> None:
        index = misses[position]
        replies[index] = reply
        if cache is not None and reply.text is not None and is_valid(reply.text):
            cache.set(keys[index], {
                "text": reply.text, "prompt_tokens": reply.prompt_tokens,
                "completion_tokens": reply.completion_tokens,
            })

    if misses:
        missed = [conversations[i] for i in misses]
        if reply_schema:
            judge.complete(missed, on_reply, reply_schema)
        else:  # the verdict task: backends written before other tasks existed still work
            judge.complete(missed, on_reply)
    return [replies.get(i, JudgeReply(None, "no reply received")) for i in range(len(conversations))]


def is_valid_verdict(text: str) -> bool:
    return parse_verdict(text).verdict is not None


def _valid_rows(dataset: Dataset) -> set[int]:
    if col.JUDGE_ERROR not in dataset.column_names:
        return set()
    return {
        i for i, (error, accuracy, style) in enumerate(
            zip(dataset[col.JUDGE_ERROR], dataset[col.ACCURACY_SCORE], dataset[col.STYLE_SCORE])
        )
        if error is None and accuracy is not None and style is not None
    }


# Explicit types, so a column that is all None (every reply failed) keeps its type.
JUDGE_COLUMNS = {
    col.JUDGE_MODEL: "string",
    col.ACCURACY_SCORE: "int32",
    col.ACCURACY_ANALYSIS: "string",
    col.STYLE_SCORE: "int32",
    col.STYLE_ANALYSIS: "string",
    col.JUDGE_ERROR: "string",
    col.JUDGE_RAW: "string",
    col.JUDGE_PROMPT_TOKENS: "int32",
    col.JUDGE_COMPLETION_TOKENS: "int32",
    col.JUDGE_CACHED: "bool",
}


def _judge_row(judge_id: str, reply: JudgeReply) -> dict[str, Any]:
    parsed = parse_verdict(reply.text) if reply.text is not None else ParsedVerdict(None, reply.error)
    verdict = parsed.verdict
    return {
        col.JUDGE_MODEL: judge_id,
        col.ACCURACY_SCORE: verdict.accuracy.score if verdict else None,
        col.ACCURACY_ANALYSIS: verdict.accuracy.analysis if verdict else None,
        col.STYLE_SCORE: verdict.style.score if verdict else None,
        col.STYLE_ANALYSIS: verdict.style.analysis if verdict else None,
        col.JUDGE_ERROR: parsed.error,
        col.JUDGE_RAW: reply.text,
        col.JUDGE_PROMPT_TOKENS: reply.prompt_tokens,
        col.JUDGE_COMPLETION_TOKENS: reply.completion_tokens,
        col.JUDGE_CACHED: reply.cached,
    }


def score_answers(
    dataset: Dataset,
    judge: JudgeBackend,
    cache: Optional[JudgeCache] = None,
    only_failed: bool = False,
) -> Dataset:
    """Add the judge's verdict columns to every answer; errors stay on their rows.

    With `only_failed`, rows of a previous scoring that hold a valid verdict are kept as they
    are and only the others are judged. With a cache, a reply already given for the same
    prompt, judge and sampling parameters is reused, and each new valid reply is stored at
    once, so an interrupted run resumes where it stopped.
    """
    keep = _valid_rows(dataset) if only_failed else set()
    previous = dataset.to_list() if keep else []
    # A row that was never generated has nothing to judge: it stays a row error, not a score of 1.
    reasons = dataset[col.FINISH_REASON] if col.FINISH_REASON in dataset.column_names else [None] * len(dataset)
    not_generated = {i for i, reason in enumerate(reasons) if reason == col.PROMPT_TOO_LONG}
    todo = [i for i in range(len(dataset)) if i not in keep and i not in not_generated]
    logger.info("Judging %d answers with %s: %d kept, %d not generated", len(dataset), judge.judge_id, len(keep),
                len(not_generated))
    asked = ask_judge(
        judge, [judge_messages(dataset[i][col.INSTRUCTION], dataset[i][col.ANSWER]) for i in todo],
        cache, is_valid_verdict,
    )
    replies = dict(zip(todo, asked))
    unanswered = JudgeReply(None, "not judged: the prompt is longer than engine.max_model_len, so no answer was generated")
    rows = [
        {name: previous[i].get(name) for name in JUDGE_COLUMNS} if i in keep
        else _judge_row(judge.judge_id, unanswered) if i in not_generated
        else _judge_row(judge.judge_id, replies[i])
        for i in range(len(dataset))
    ]
    failures = sum(row[col.JUDGE_ERROR] is not None for row in rows)
    if failures:
        logger.warning("%d of %d answers have no valid verdict; kept as row errors", failures, len(rows))
    evaluations = dataset.remove_columns([c for c in JUDGE_COLUMNS if c in dataset.column_names])
    for name, dtype in JUDGE_COLUMNS.items():
        evaluations = evaluations.add_column(name, [row[name] for row in rows], feature=Value(dtype))
    return evaluations
