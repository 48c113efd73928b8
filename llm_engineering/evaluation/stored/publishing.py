"""The `publish_receipt` artifact: where one model's results went."""

from __future__ import annotations

from typing import Optional

from pydantic import BaseModel


class PublishReceipt(BaseModel):
    """Where one model's results went; `hub_error` says why a Hub push did not happen."""

    repo: str
    stage: str
    rows: int
    local_path: str
    hub_url: Optional[str] = None
    hub_error: Optional[str] = None

