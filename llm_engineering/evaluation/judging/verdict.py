"""A rubric's verdict: its pydantic model and JSON schema (which constrains generation), and the parser of raw
replies. A reply that does not parse or validate becomes an error on its row (with the raw reply kept), never a
crash and never a silent gap in the averages."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from typing import Annotated, Any, Optional

from pydantic import BaseModel, ConfigDict, Field, ValidationError, WithJsonSchema, create_model

from llm_engineering.evaluation.config_base import validation_problems
from llm_engineering.evaluation.judging.rubric import Rubric
from llm_engineering.evaluation.judging.transport import reply_json_schema, unfenced


@lru_cache(maxsize=64)
def _verdict_model(rubric_json: str, first_score_only: bool = False, scores_only: int = 0) -> type[BaseModel]:
    """The verdict model; `first_score_only`: a reply that ends at the first score; `scores_only`: the first N
    criteria's scores alone."""
    rubric = Rubric.model_validate_json(rubric_json)
    fields: dict[str, Any] = {}
    criteria = rubric.criteria[:scores_only] if scores_only else rubric.criteria[:1] if first_score_only else rubric.criteria
    for c in criteria:
        # Validation reads the range (its errors say "less than or equal to 3"); generation is held to the
        # listed levels, as an enum, which vLLM's grammars and OpenAI's strict mode both accept.
        levels = WithJsonSchema({"type": "integer", "enum": c.values})
        score = (Annotated[int, Field(ge=c.values[0], le=c.values[-1]), levels], ...)
        parts: dict[str, Any]  # field name -> (type, default), as create_model takes them
        if scores_only or (first_score_only and rubric.score_first):
            parts = {"score": score}
        elif rubric.score_first:
            parts = {"score": score, "analysis": (str, ...)}
        else:
            parts = {"analysis": (str, ...), "score": score}
        kind = "Score" if first_score_only or scores_only else "Verdict"
        fields[c.name] = (create_model(f"{c.name.title()}{kind}", __config__=ConfigDict(extra="forbid"), **parts), ...)
    name = "Scores" if scores_only else "FirstScore" if first_score_only else "JudgeVerdict"
    return create_model(name, __config__=ConfigDict(extra="forbid"), **fields)


def verdict_model(rubric: Rubric) -> type[BaseModel]:
    """The pydantic model of the rubric's verdict: one object per criterion with its score and analysis."""
    return _verdict_model(rubric.model_dump_json())


def first_score_model(rubric: Rubric) -> type[BaseModel]:
    """The pydantic model of a reply that ends at the rubric's first score (see `first_score_schema`)."""
    return _verdict_model(rubric.model_dump_json(), True)


def scores_model(rubric: Rubric, count: int) -> type[BaseModel]:
    """The pydantic model of a reply that holds the first `count` criteria's scores and nothing else."""
    return _verdict_model(rubric.model_dump_json(), scores_only=count)


def verdict_schema(rubric: Rubric, max_analysis_chars: int) -> dict[str, Any]:
    """JSON schema of the verdict that constrains generation: scores limited to each scale, analyses
    kept short. Only generation is held to the length: the parser accepts a longer analysis."""
    return reply_json_schema(verdict_model(rubric), {"analysis": max_analysis_chars})


def first_score_schema(rubric: Rubric, max_analysis_chars: int) -> dict[str, Any]:
    """JSON schema of a reply that ends at the first criterion's score: `{"<criterion>": {"score": n}}` for a
    score-first rubric, `{"<criterion>": {"analysis": "...", "score": n}}` for one that writes its analysis first.

    It changes nothing but the cost: the judge reads the same prompt and writes the same tokens up to the
    first score as in a whole verdict (held to the same analysis length), so greedy decoding picks the same
    score from the same probabilities, without generating the rest of the verdict (a score-first rubric's
    analyses, or the other criteria).
    """
    return reply_json_schema(first_score_model(rubric), {"analysis": max_analysis_chars})


@dataclass(frozen=True)
class CriterionVerdict:
    score: int
    analysis: str


@dataclass(frozen=True)
class ParsedVerdict:
    criteria: Optional[dict[str, CriterionVerdict]]
    error: Optional[str]


def parse_verdict(rubric: Rubric, raw: str, first_score_only: bool = False) -> ParsedVerdict:
    """Parse and validate one raw judge reply; tolerates a ```json fence around the object.

    `first_score_only`: the reply was asked with `first_score_schema`, so it may hold just the first
    criterion (a score-first rubric's with analysis ""); a whole verdict, as an endpoint without JSON schemas
    returns, serves too.
    """
    try:
        payload = json.loads(unfenced(raw))
    except json.JSONDecodeError as error:
        return ParsedVerdict(None, f"invalid JSON ({error.msg} at char {error.pos})")
    models = [first_score_model(rubric), verdict_model(rubric)] if first_score_only else [verdict_model(rubric)]
    errors = []
    for model in models:
        try:
            verdict = model.model_validate(payload)
        except ValidationError as error:
            errors.append(error)
            continue
        return ParsedVerdict({
            name: CriterionVerdict(getattr(verdict, name).score, getattr(getattr(verdict, name), "analysis", ""))
            for name in model.model_fields
        }, None)
    # The reply's problems against what it was asked for (the first model).
    return ParsedVerdict(None, f"invalid verdict ({validation_problems(errors[0], 'reply')})")


def verdict_checker(rubric: Rubric, first_score_only: bool = False):
    """Whether a raw reply parses into a verdict of `rubric` (only those are cached)."""
    return lambda text: parse_verdict(rubric, text, first_score_only).criteria is not None

