"""The offline judge: in-process vLLM, output constrained to the verdict JSON schema, with the top
token logprobs at every step (after the grammar mask: vLLM applies it to the logits first). A one-word reply (a
checklist item's Yes or No) is one token held to the choices' first tokens (`allowed_token_ids`), with its candidates
as the model gave them before that mask (vLLM's logprobs are the raw ones), so a judge that would have written another
word shows it in the Yes and No mass it leaves."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional, cast

from llm_engineering.evaluation.config import JudgeConfig
from llm_engineering.evaluation.engine_config import EngineConfig
from llm_engineering.evaluation.judging.score_probs import TOP_LOGPROBS, TokenChoices, compact
from llm_engineering.evaluation.judging.transport import JudgeReply, OnReply, ReplySchema, choice_token_ids
from llm_engineering.evaluation.judging.verdict import verdict_schema
from llm_engineering.evaluation.stored.judge_id import JudgeId
from llm_engineering.infrastructure.vllm_engine import EnginePool

if TYPE_CHECKING:
    from vllm.renderers.chat_utils import ChatCompletionMessageParam


class VLLMJudge:
    def __init__(self, model_path: str, config: JudgeConfig, engine: EngineConfig, pool: EnginePool):
        self.judge_id = str(JudgeId("vllm", config.model))
        self._model_path, self._config, self._engine, self._pool = model_path, config, engine, pool
        self._choice_ids: dict[tuple[str, ...], list[int]] = {}

    def _schema(self, reply_schema: Optional[ReplySchema]) -> dict[str, Any]:
        return reply_schema.schema if reply_schema else verdict_schema(self._config.resolved_rubric(),
                                                                       self._config.max_analysis_chars)

    def cache_namespace(self, reply_schema: Optional[ReplySchema]) -> dict[str, Any]:
        c = self._config
        return {"backend": "vllm", "model": c.model, "temperature": c.temperature, "seed": c.seed,
                "max_tokens": c.max_tokens, "schema": self._schema(reply_schema),
                "logprobs": TOP_LOGPROBS if c.logprobs else None, "json": "compact"}

    def complete(
        self, conversations: list[list[dict[str, str]]], on_reply: OnReply, reply_schema: Optional[ReplySchema]
    ) -> None:
        from vllm import SamplingParams
        from vllm.sampling_params import StructuredOutputsParams

        # Built only when some verdict is not cached; shared with generation when the model matches.
        llm = self._pool.get(self._model_path, self._engine)
        choices = reply_schema.choices if reply_schema else None
        if choices and choices not in self._choice_ids:
            tokenizer = llm.get_tokenizer()
            self._choice_ids[choices] = choice_token_ids(lambda text: tokenizer.encode(text, add_special_tokens=False),
                                                         tokenizer.decode, choices)
        params = SamplingParams(
            temperature=self._config.temperature,
            max_tokens=1 if choices else self._config.max_tokens,
            seed=self._config.seed,
            logprobs=TOP_LOGPROBS if self._config.logprobs else None,
            # Compact JSON (no whitespace between tokens) is the engine's setting (`engine_kwargs`). A one-word reply is
            # one token, held to the choices' first tokens by a mask on the sampled token (a grammar per request cost
            # more than the token); its candidates are read before the mask (module doc).
            structured_outputs=None if choices else StructuredOutputsParams(json=self._schema(reply_schema)),
            allowed_token_ids=(self._choice_ids[choices] or None) if choices else None,
        )
        # vLLM types a message as its union of message dicts, in invariant lists: plain role/content dicts are one.
        messages = cast("list[list[ChatCompletionMessageParam]]", conversations)
        for index, output in enumerate(llm.chat(messages, params, use_tqdm=True)):
            completion = output.outputs[0]
            on_reply(index, JudgeReply(
                text=completion.text,
                # The tokens computed: vLLM's prefix cache served the others (a checklist's items share their answer).
                prompt_tokens=len(output.prompt_token_ids or []) - (getattr(output, "num_cached_tokens", 0) or 0),
                completion_tokens=len(completion.token_ids),
                logprobs=_token_choices(completion) if self._config.logprobs else None,
                logprobs_problem=None if self._config.logprobs else "logprobs are turned off (judge.logprobs: false)",
            ))


def _token_choices(completion: Any) -> list[TokenChoices]:
    """Each generated token's text and its top candidates, from a vLLM `CompletionOutput`."""
    choices = []
    for token_id, candidates in zip(completion.token_ids, completion.logprobs or []):
        sampled = candidates[token_id].decoded_token or ""
        choices.append((sampled, [(c.decoded_token or "", c.logprob) for c in candidates.values()]))
    return compact(choices)
