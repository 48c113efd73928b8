"""One judge, as every judging function takes it: its backend (or a jury's backends), the rubric it scores on,
the verdict cache and its limits, bound together once.

A step builds it from the config (`infrastructure.judge_backends.open_judge`) and hands it whole to scoring,
pairwise, the judge check and the labels check, so none of them takes its parts one by one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Optional

from llm_engineering.evaluation.judging.cache import JudgeCache
from llm_engineering.evaluation.judging.rubric import Rubric
from llm_engineering.evaluation.judging.transport import JudgeBackend

MAX_ANALYSIS_CHARS = 400  # the longest analysis a verdict may write, unless the judge config says otherwise


@dataclass(frozen=True)
class Judge:
    """`backends`: one judge, or a jury (each asked on its own, its rows holding the `aggregate`); `cache`: None
    asks every prompt; `max_analysis_chars`: the longest analysis a verdict may write (pairwise, or one that
    ends at the first score)."""

    backends: tuple[JudgeBackend, ...]
    rubric: Rubric
    cache: Optional[JudgeCache] = None
    max_analysis_chars: int = MAX_ANALYSIS_CHARS
    aggregate: Literal["mean", "majority"] = "mean"

    def __post_init__(self) -> None:
        if not self.backends:
            raise ValueError("a judge needs at least one backend")

    @property
    def backend(self) -> JudgeBackend:
        """The first judge: it runs the judge check, pairwise comparisons and the labels check."""
        return self.backends[0]

    @property
    def is_jury(self) -> bool:
        return len(self.backends) > 1
