"""Asking a judge: the backend protocol, the reply schema a call is held to, and the cached transport.

Every task (scoring, the judge check, pairwise comparison) asks through `ask_judge`, so all
share the backends' retries, the cache and the bookkeeping of replies.
"""

from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass, replace
from typing import Any, Callable, Mapping, Optional, Protocol, Sequence

from pydantic import BaseModel

from llm_engineering.evaluation.judging.cache import JudgeCache, cache_key
from llm_engineering.evaluation.judging.score_probs import TokenChoices

logger = logging.getLogger(__name__)


def unfenced(raw: str) -> str:
    """A reply's text without surrounding space and a Markdown code fence (```json ... ```) some judges put around
    their JSON."""
    text = raw.strip()
    return text.strip("`").removeprefix("json").strip() if text.startswith("```") else text


@dataclass(frozen=True)
class JudgeReply:
    """One raw reply, or the transport error that prevented it (after every retry)."""

    text: Optional[str]
    error: Optional[str] = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached: bool = False
    # Per generated token, its text and top candidates (`score_probs.compact`ed); None with a reason when
    # the backend gave none, so that a missing expected score is always explained.
    logprobs: Optional[list[TokenChoices]] = None
    logprobs_problem: Optional[str] = None
    # This reply's share of the judge's wall time: the seconds the judge took for the prompts asked together,
    # over their number (a batching engine answers them at once); 0 for a reply from the cache.
    seconds: float = 0.0
    # The judge calls made for this reply (not served by the cache): 1, 0 from the cache, 2 with its probe.
    calls: int = 1


OnReply = Callable[[int, JudgeReply], None]


@dataclass(frozen=True)
class ReplySchema:
    """The JSON object a judge call must return: its name (for OpenAI's `response_format`) and schema.

    Passed as None, backends use the verdict schema at their configured analysis length; other
    tasks (pairwise comparison) pass theirs.
    """

    name: str
    schema: dict[str, Any]
    # A one-word reply, one of these (a checklist item's Yes or No): backends cut the reply at one token and hold that
    # token to the choices' first tokens where they can (the in-process vLLM judge; an OpenAI endpoint cannot be told
    # its tokenizer's ids); what is read is the first token's candidates, whatever the constraint.
    choices: Optional[tuple[str, ...]] = None


_TRAILING_PUNCTUATION = re.compile(r"[.,!?;:]+$")


def choice_of(text: str, choices: Sequence[str]) -> Optional[str]:
    """The choice a token or one-word reply spells, else None: the whole word in any case, with space around it and
    punctuation after it (`Yes`, ` yes`, `Yes,`, `Yes.`), or its initial alone (`Y`, `N`: a tokenizer that splits the
    word offers its first piece) where no other choice starts with that letter. `Not`, `Nope`, `Yesterday` spell none."""
    word = _TRAILING_PUNCTUATION.sub("", text.strip()).lower()
    if not word:
        return None
    for choice in choices:
        if word == choice.lower():
            return choice
    initials = [choice for choice in choices if choice[:1].lower() == word]
    return initials[0] if len(word) == 1 and len(initials) == 1 else None


def choice_token_ids(encode: Callable[[str], list[int]], decode: Callable[[list[int]], str],
                     choices: Sequence[str]) -> list[int]:
    """The token ids a reply may start with to give one of `choices`: the first token of each spelling of each choice
    (as written, lower and upper case, each with and without a leading space), where that token itself spells the choice
    (`choice_of`; a lone space that a tokenizer puts first does not)."""
    cases = {cased for choice in choices for cased in (choice, choice.lower(), choice.upper())}
    spellings = cases | {" " + cased for cased in cases}
    ids = set()
    for spelling in sorted(spellings):
        tokens = encode(spelling)
        if tokens and choice_of(decode(tokens[:1]), choices) is not None:
            ids.add(tokens[0])
    return sorted(ids)


def reply_json_schema(model: type[BaseModel], max_lengths: Mapping[str, int]) -> dict[str, Any]:
    """`model`'s JSON schema for constrained generation, with `maxLength` set on the string
    properties named in `max_lengths` (the model itself accepts any length).

    Nested models are inlined, and the titles and descriptions pydantic takes from class names
    and docstrings (written for readers of the code; the prompt is what speaks to the judge) are
    dropped: one self-contained object that keeps the models' `additionalProperties: false` and
    required keys at every level, as vLLM's grammars and OpenAI's strict `json_schema` format
    take it. The schema is part of the judge cache key, so it must not drift.
    """
    full = model.model_json_schema()
    definitions = full.get("$defs", {})

    def plain(node: Any) -> Any:
        if isinstance(node, list):
            return [plain(item) for item in node]
        if not isinstance(node, dict):
            return node
        if "$ref" in node:
            return plain(definitions[node["$ref"].rsplit("/", 1)[-1]])
        out = {}
        for key, value in node.items():
            if key == "properties":  # a mapping of names, not a schema: a property may be called "title"
                out[key] = {name: plain(schema) for name, schema in value.items()}
                for name, limit in max_lengths.items():
                    if name in out[key]:
                        out[key][name] = {**out[key][name], "maxLength": limit}
            elif key not in ("title", "description", "$defs"):
                out[key] = plain(value)
        return out

    return plain(full)


class JudgeBackend(Protocol):
    """Turns chat conversations into replies; calls `on_reply(index, reply)` as each arrives.

    `reply_schema` None asks for the judge verdict, at the backend's configured analysis length.
    """

    judge_id: str

    def cache_namespace(self, reply_schema: Optional[ReplySchema]) -> dict[str, Any]:
        """Everything besides the messages that decides a reply (model, sampling, schema)."""
        ...

    def complete(
        self, conversations: list[list[dict[str, str]]], on_reply: OnReply, reply_schema: Optional[ReplySchema]
    ) -> None: ...


def ask_judge(
    judge: JudgeBackend,
    conversations: list[list[dict[str, str]]],
    *,
    cache: Optional[JudgeCache],
    is_valid: Callable[[str], bool],
    reply_schema: Optional[ReplySchema] = None,
) -> list[JudgeReply]:
    """One reply per conversation, through the cache: hits are not asked again, and each new
    reply that `is_valid` is stored at once (so an interrupted run resumes where it stopped)."""
    namespace = judge.cache_namespace(reply_schema)
    keys = [cache_key(namespace, messages) for messages in conversations] if cache is not None else []
    replies: dict[int, JudgeReply] = {}
    for i in range(len(conversations)):
        hit = cache.get(keys[i]) if cache is not None else None
        if hit is not None:
            replies[i] = JudgeReply(**{**hit, "cached": True, "calls": 0})
    misses = [i for i in range(len(conversations)) if i not in replies]
    logger.info("%s: %d prompts, %d from cache, %d to ask", judge.judge_id, len(conversations),
                len(conversations) - len(misses), len(misses))

    def on_reply(position: int, reply: JudgeReply) -> None:
        index = misses[position]
        replies[index] = reply
        if cache is not None and reply.text is not None and is_valid(reply.text):
            cache.set(keys[index], {
                "text": reply.text, "prompt_tokens": reply.prompt_tokens,
                "completion_tokens": reply.completion_tokens, "logprobs": reply.logprobs,
                "logprobs_problem": reply.logprobs_problem,
            })

    if misses:
        started = time.perf_counter()
        judge.complete([conversations[i] for i in misses], on_reply, reply_schema)
        share = (time.perf_counter() - started) / len(misses)
        for i in misses:
            if i in replies:
                replies[i] = replace(replies[i], seconds=share)
    return [replies.get(i, JudgeReply(None, "no reply received")) for i in range(len(conversations))]
