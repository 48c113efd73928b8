"""A judge's identity, written on every verdict and artifact: `backend:model[@url]` (`vllm:smollm2-135m`,
`openai:gpt-4o-mini@http://host/v1`), a jury's `jury: id + id`. Built and read here only. The URL is written without
credentials or query string (`urls.shown_url`); an id stored whole by an earlier run still reads back."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from llm_engineering.evaluation.urls import shown_url

JURY = "jury: "
_SEPARATOR = " + "


@dataclass(frozen=True)
class JudgeId:
    backend: str
    model: str
    url: Optional[str] = None

    def __str__(self) -> str:
        return f"{self.backend}:{self.model}" + (f"@{shown_url(self.url)}" if self.url else "")

    @classmethod
    def parse(cls, text: str) -> JudgeId:
        """The id `str` wrote (an id without a backend, as older artifacts may hold, is a model's name)."""
        backend, _, rest = text.partition(":") if ":" in text.split("@", 1)[0] else ("", "", text)
        model, _, url = rest.partition("@")
        return cls(backend, model, url or None)


def jury_id(members: list[str]) -> str:
    """A jury's id from its members' ids."""
    return JURY + _SEPARATOR.join(members)


def members(judge_id: str) -> list[str]:
    """The ids of a jury's members, or the one id of a single judge."""
    return judge_id.removeprefix(JURY).split(_SEPARATOR) if judge_id.startswith(JURY) else [judge_id]


def model_names(judge_id: str) -> list[str]:
    """The model of each judge an id names (a jury's members', in order)."""
    return [JudgeId.parse(member).model for member in members(judge_id)]
