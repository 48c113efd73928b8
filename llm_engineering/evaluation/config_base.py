"""What every component config shares: the error a user must fix, and strict, frozen models."""

from pydantic import BaseModel, ConfigDict


class ConfigError(ValueError):
    """A run configuration a user must fix; the message says what and how."""


class Strict(BaseModel):
    """Unknown keys fail (ZenML silently ignores them); values are frozen, so a step's parameters are what the run
    config says."""

    model_config = ConfigDict(extra="forbid", frozen=True)
