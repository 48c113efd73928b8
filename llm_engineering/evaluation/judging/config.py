"""Judging's configs: the judge (backend, model, rubric, how it samples and replies), its endpoint and Batch API
settings, a jury's aggregate and the pairwise comparison. Each forbids unknown keys and is frozen
(`config_base.Strict`); the run config composes them (`llm_engineering.run_config`)."""

from __future__ import annotations

from typing import Any, Literal, Optional, Union

from pydantic import Field, PositiveInt, field_validator, model_validator

from llm_engineering.evaluation.config_base import Strict
from llm_engineering.evaluation.judging.judge import MAX_ANALYSIS_CHARS
from llm_engineering.evaluation.judging.rubric import DEFAULT_RUBRIC, Rubric, load_rubric, shipped_rubrics

# Defaults named once: the judge's reply length and its endpoint's patience.
JUDGE_MAX_TOKENS = 384
ENDPOINT_CONCURRENCY = 8
ENDPOINT_TIMEOUT_S = 120.0
ENDPOINT_ATTEMPTS = 6
ENDPOINT_MAX_BACKOFF_S = 60.0
BATCH_POLL_INITIAL_S = 5.0
BATCH_POLL_MAX_S = 60.0
BATCH_MAX_WAIT_S = 25 * 3600.0  # past the Batch API's 24 h window, when a batch has expired anyway
ENDPOINT_BACKENDS = ("openai", "openai-batch")


class EndpointConfig(Strict):
    """How the judge talks to an OpenAI-compatible endpoint (backends openai and openai-batch)."""

    base_url: Optional[str] = Field(None, description="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1; None: OpenAI.")
    api_key_env: Optional[str] = Field(None, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$", description="The environment variable "
                                       "of this endpoint's key; None: JUDGE_API_KEY (served), OPENAI_API_KEY (OpenAI).")
    max_concurrency: PositiveInt = Field(ENDPOINT_CONCURRENCY, description="Requests in flight to an endpoint.")
    timeout_s: float = Field(ENDPOINT_TIMEOUT_S, gt=0, description="Per-request timeout.")
    max_attempts: PositiveInt = Field(ENDPOINT_ATTEMPTS,
                                      description="Tries per request on 429, 5xx, timeouts, dropped connections.")
    max_backoff_s: float = Field(ENDPOINT_MAX_BACKOFF_S, gt=0,
                                 description="Longest wait between tries (Retry-After is honoured up to this).")
    request_options: dict[str, Any] = Field(
        default_factory=dict, description="Extra fields sent with every chat request."
    )
    price_per_million_input: Optional[float] = Field(None, ge=0, description="USD; known OpenAI models default.")
    price_per_million_output: Optional[float] = Field(None, ge=0)

    @field_validator("request_options")
    @classmethod
    def _no_field_the_judge_sets(cls, options: dict[str, Any]) -> dict[str, Any]:
        # These are set from the judge's own settings on every request; here they would be silently overwritten.
        taken = {"model": "model", "messages": None, "temperature": "temperature", "max_tokens": "max_tokens",
                 "seed": "seed", "response_format": None, "logprobs": "logprobs", "top_logprobs": "logprobs"}
        clashes = sorted(taken.keys() & options.keys())
        if clashes:
            fixes = [f"judge.{taken[k]}" for k in clashes if taken[k]]
            raise ValueError(f"request_options may not set {', '.join(clashes)}: the judge sets them on every request"
                             + (f" (use {', '.join(dict.fromkeys(fixes))} instead)" if fixes else "") + ".")
        return options


class BatchConfig(Strict):
    """How long the openai-batch judge waits for OpenAI's Batch API."""

    poll_initial_s: float = Field(BATCH_POLL_INITIAL_S, gt=0, description="First wait between status polls; doubled "
                                  "after each poll up to poll_max_s.")
    poll_max_s: float = Field(BATCH_POLL_MAX_S, gt=0, description="Longest wait between status polls.")
    max_wait_s: float = Field(
        BATCH_MAX_WAIT_S, gt=0, description="Stop waiting after this long and fail the step; the batch goes on, and "
        "rerunning the same command resumes waiting for it. Default: past the 24 h window, when it has expired.",
    )


# Today's flat keys, still read: each names its place in `endpoint:` or `batch:`.
_FLAT_KEYS = {**{name: ("endpoint", name) for name in EndpointConfig.model_fields},
              **{f"batch_{name}": ("batch", name) for name in BatchConfig.model_fields}}


class JudgeConfig(Strict):
    """The LLM judge: backend, model and how it samples and replies; `endpoint:` for a served or OpenAI judge,
    `batch:` for the Batch API's. The flat keys of earlier configs (`base_url`, `batch_max_wait_s`...) are read into
    them."""

    backend: Literal["vllm", "openai", "openai-batch"] = Field(
        "vllm", description="'vllm': in-process engine; 'openai': any OpenAI-compatible chat endpoint; 'openai-batch': "
        "the same requests through OpenAI's Batch API (half price, answered within 24 h, resumed after a restart).",
    )
    model: str = Field(
        "auto", description="An alias, folder or Hub id (in-process), or the endpoint's model name. auto: "
        "qwen2.5-coder-1.5b on every machine: its int8 copy on a CPU with fast bf16 and VNNI or AMX int8, in float32 on "
        "a CPU without fast bf16 (slow); the choice and why, first in the summary.",
    )
    temperature: float = Field(0.0, ge=0.0, le=2.0)
    max_tokens: PositiveInt = JUDGE_MAX_TOKENS
    seed: Optional[int] = 0
    max_analysis_chars: PositiveInt = MAX_ANALYSIS_CHARS
    rubric: Union[str, Rubric] = Field(
        DEFAULT_RUBRIC, description="A shipped rubric (task-accuracy, the default: does the answer do the task, "
        "against the reference; handbook, the original's wording; handbook-score-first, reference-guided, "
        "helpfulness), the path of a rubric YAML file, or an inline rubric mapping (see docs/rubrics.md). A file "
        "is read when the config is.",
    )
    logprobs: bool = Field(
        True, description="Ask for token logprobs at each score, for probability-weighted (expected) scores.",
    )
    response_format: Literal["auto", "json_schema", "json_object", "none"] = Field(
        "auto", description="auto: JSON schema, falling back to JSON mode, then plain text + validation."
    )
    cache: bool = Field(True, description="Reuse verdicts from the on-disk judge cache (and store new ones).")
    refresh: bool = Field(False, description="Ask every verdict again, reading nothing from the judge cache (new "
                          "verdicts are still stored, so an interrupted run resumes): what --no-cache sets.")
    endpoint: EndpointConfig = Field(default_factory=EndpointConfig,
                                     description="backends openai and openai-batch: the endpoint and its limits")
    batch: BatchConfig = Field(default_factory=BatchConfig, description="backend openai-batch: how long to wait")
    escalate_to: Optional[JudgeConfig] = Field(
        None, description="A second judge for the rows this one is unsure of (`judge_confidence` under escalate_below, "
        "or no verdict): their verdicts come from it; where it fails, the first one's stay.")
    escalate_below: float = Field(0.9, gt=0.0, le=1.0, description="With escalate_to: the confidence under which a row "
                                  "is escalated; find one on labelled pairs with judge-bench --calibration.")

    @model_validator(mode="before")
    @classmethod
    def _flat_keys_into_groups(cls, data: Any) -> Any:
        if not isinstance(data, dict) or not _FLAT_KEYS.keys() & data.keys():
            return data
        data = dict(data)
        groups: dict[str, dict[str, Any]] = {}  # group -> its keys that were given flat
        for key in _FLAT_KEYS.keys() & data.keys():
            group, name = _FLAT_KEYS[key]
            groups.setdefault(group, {})[name] = data.pop(key)
        for group, values in groups.items():
            given = data.get(group) or {}
            given = given.model_dump(exclude_unset=True) if isinstance(given, Strict) else dict(given)
            both = sorted(values.keys() & given.keys())
            if both:
                raise ValueError(f"{', '.join(both)} given twice, flat and under {group}: keep the {group}: one")
            data[group] = {**given, **values}
        return data

    @field_validator("rubric", mode="before")
    @classmethod
    def _read_rubric(cls, rubric: Any) -> Any:
        # A file or inline block is validated now and carried as the rubric itself, so a step on a
        # remote stack (where the file is not) scores with exactly what was checked here.
        if isinstance(rubric, str) and rubric in shipped_rubrics():
            return rubric
        return load_rubric(rubric)

    @model_validator(mode="after")
    def _settings_of_this_backend(self) -> "JudgeConfig":
        if self.model == "auto" and self.backend != "vllm":
            raise ValueError(f"judge.model auto picks an in-process judge; with backend {self.backend!r} name the "
                             f"endpoint's model (e.g. model: gpt-4o-mini)")
        if self.backend not in ENDPOINT_BACKENDS and self.endpoint != EndpointConfig():
            raise ValueError(f"judge.endpoint is for backends openai and openai-batch; backend {self.backend!r} runs "
                             f"the judge in process: remove endpoint settings ({', '.join(self._changed('endpoint'))}) "
                             f"or set backend: openai")
        if self.escalate_to is not None and (self.escalate_to.escalate_to is not None or not self.logprobs):
            raise ValueError("judge.escalate_to: the first judge needs logprobs: true (a verdict's confidence is its "
                             "probability of the score it gave), and the second judge escalates no further")
        if self.backend != "openai-batch" and self.batch != BatchConfig():
            raise ValueError(f"judge.batch is for backend openai-batch; remove batch settings "
                             f"({', '.join(self._changed('batch'))}) or set backend: openai-batch")
        return self

    def _changed(self, group: str) -> list[str]:
        settings = getattr(self, group)
        default = type(settings)()
        return [name for name in type(settings).model_fields if getattr(settings, name) != getattr(default, name)]

    def resolved_rubric(self) -> Rubric:
        return load_rubric(self.rubric)


class JuryConfig(Strict):
    """How the verdicts of several judges (`judges:`) become one score per row."""

    aggregate: Literal["mean", "majority"] = Field(
        "mean", description="mean: the judges' mean expected (and integer) scores; majority: the most common "
        "integer score, ties to the lower.",
    )


class PairwiseConfig(Strict):
    """With two or more models: the judge compares each model's answers with the first model's,
    every pair in both orders."""

    enabled: bool = True
    # preference: the better answer as one number before any analysis, its probabilities averaged over both orders
    # (not decided by position); verdict: an analysis, then the winner (A, B or tie), per order (judging/pairwise.py).
    method: Literal["preference", "verdict"] = "preference"
