"""The LLM judge: accuracy and style, each scored 1-3 with a short analysis, as JSON.

The prompt template and the parser are plain values; backends only turn chat messages into
raw replies. A reply that does not parse or validate becomes an error on its row (with the
raw reply kept), never a crash and never a silent gap in the averages.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any, Optional, Protocol

from datasets import Dataset, Value
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.config import EngineConfig, JudgeConfig

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


class JudgeBackend(Protocol):
    """Turns chat conversations into raw judge replies, one per conversation, in order."""

    judge_id: str

    def complete(self, conversations: list[list[dict[str, str]]]) -> list[str]: ...


class VLLMJudge:
    """In-process vLLM judge whose output is constrained to the verdict JSON schema."""

    def __init__(self, model_path: str, model_id: str, config: JudgeConfig, engine: EngineConfig):
        self.judge_id = f"vllm:{model_id}"
        self._model_path, self._config, self._engine = model_path, config, engine

    def complete(self, conversations: list[list[dict[str, str]]]) -> list[str]:
        from vllm import SamplingParams
        from vllm.sampling_params import StructuredOutputsParams

        from llm_engineering.infrastructure.vllm_engine import ENGINES

        llm = ENGINES.get(self._model_path, self._engine)
        params = SamplingParams(
            temperature=self._config.temperature,
            max_tokens=self._config.max_tokens,
            seed=self._config.seed,
            # Without disable_any_whitespace a small judge can loop on tabs until max_tokens.
            structured_outputs=StructuredOutputsParams(
                json=verdict_schema(self._config.max_analysis_chars), disable_any_whitespace=True
            ),
        )
        outputs = llm.chat(conversations, params, use_tqdm=True)
        return [output.outputs[0].text for output in outputs]


def score_answers(generations: Dataset, judge: JudgeBackend) -> Dataset:
    """Add the judge's verdict columns to every generated answer (errors kept per row)."""
    conversations = [
        judge_messages(instruction, answer)
        for instruction, answer in zip(generations[col.INSTRUCTION], generations[col.ANSWER])
    ]
    replies = judge.complete(conversations)
    parsed = [parse_verdict(raw) for raw in replies]
    failures = sum(p.error is not None for p in parsed)
    if failures:
        logger.warning("%d of %d judge replies did not parse; kept as row errors", failures, len(parsed))

    def field(criterion: str, attribute: str) -> list[Any]:
        return [
            getattr(getattr(p.verdict, criterion), attribute) if p.verdict else None for p in parsed
        ]

    # Explicit types, so a column that is all None (every reply failed) keeps its type.
    new_columns = {
        col.JUDGE_MODEL: ([judge.judge_id] * len(parsed), "string"),
        col.ACCURACY_SCORE: (field("accuracy", "score"), "int32"),
        col.ACCURACY_ANALYSIS: (field("accuracy", "analysis"), "string"),
        col.STYLE_SCORE: (field("style", "score"), "int32"),
        col.STYLE_ANALYSIS: (field("style", "analysis"), "string"),
        col.JUDGE_ERROR: ([p.error for p in parsed], "string"),
        col.JUDGE_RAW: (replies, "string"),
    }
    existing = [name for name in new_columns if name in generations.column_names]
    evaluations = generations.remove_columns(existing)
    for name, (values, dtype) in new_columns.items():
        evaluations = evaluations.add_column(name, values, feature=Value(dtype))
    return evaluations
