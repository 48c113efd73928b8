"""The handbook rubric: accuracy and style, each scored 1-3 with a short analysis, as JSON.

The prompt template, the verdict model (whose JSON schema constrains generation) and the
parser are plain values; backends only turn chat messages into raw replies. A reply that does
not parse or validate becomes an error on its row (with the raw reply kept), never a crash
and never a silent gap in the averages.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Annotated, Any, Optional

from pydantic import BaseModel, ConfigDict, Field, ValidationError, WithJsonSchema

from llm_engineering.evaluation.judge_transport import reply_json_schema

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


SCORES = (1, 2, 3)
# Validation reads the range (its errors say "less than or equal to 3"); generation is held to
# the listed scores, as an enum, which both vLLM's grammars and OpenAI's strict mode accept.
Score = Annotated[int, Field(ge=SCORES[0], le=SCORES[-1]), WithJsonSchema({"type": "integer", "enum": list(SCORES)})]


class CriterionVerdict(BaseModel):
    model_config = ConfigDict(extra="forbid")

    analysis: str
    score: Score


class JudgeVerdict(BaseModel):
    """What the judge must return for one answer."""

    model_config = ConfigDict(extra="forbid")

    accuracy: CriterionVerdict
    style: CriterionVerdict


def verdict_schema(max_analysis_chars: int) -> dict[str, Any]:
    """JSON schema of `JudgeVerdict` that constrains generation: scores limited to 1..3, analyses
    kept short. Only generation is held to the length: the parser accepts a longer analysis."""
    return reply_json_schema(JudgeVerdict, {"analysis": max_analysis_chars})


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
    """The chat messages that ask the judge for one answer's verdict."""
    return [
        {"role": "system", "content": JUDGE_SYSTEM_PROMPT},
        {"role": "user", "content": template.format(instruction=instruction, answer=answer)},
    ]


def is_valid_verdict(text: str) -> bool:
    """Whether a raw reply parses into a verdict (only those are cached)."""
    return parse_verdict(text).verdict is not None
