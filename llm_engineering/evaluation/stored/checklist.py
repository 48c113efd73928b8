"""What a summary holds of a checklist rubric's rows (`judging.checklist`): items left unread, rows without a score,
and where the rows' items came from, each source's rows apart."""

from __future__ import annotations

from typing import Optional

from pydantic import BaseModel, Field


class ChecklistSourceScores(BaseModel):
    """The rows graded on items of one source, and their mean checklist score."""

    source: str = Field(description="where the items came from: dataset, reference sentences, written from the "
                        "reference, written from the instruction (a summary of older rows: a writer's id)")
    rows: int = Field(description="rows with a checklist score on items of this source")
    expected_mean: Optional[float] = Field(None, description="their mean checklist score")


class ChecklistFigures(BaseModel):
    """One model's checklist rows: items graded and unread, rows left without a checklist score for unread items,
    and the rows of each item source."""

    items: int = Field(description="items graded, over the rows judged")
    unread: int = Field(description="items whose Yes and No held under the floor of the first token's probability: "
                        "left out of their row's score")
    unread_rows: int = Field(0, description="rows with no checklist score: more than the allowed share of items unread")
    sources: list[ChecklistSourceScores] = Field(default_factory=list)
