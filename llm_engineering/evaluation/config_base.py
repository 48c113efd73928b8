"""What every component config shares: the error a user must fix, strict, frozen models, and a validation error's
problems in words."""

from pydantic import BaseModel, ConfigDict, ValidationError


class ConfigError(ValueError):
    """A run configuration a user must fix; the message says what and how."""


class Strict(BaseModel):
    """Unknown keys fail (ZenML silently ignores them); values are frozen, so a step's parameters are what the run
    config says."""

    model_config = ConfigDict(extra="forbid", frozen=True)


def validation_problems(error: ValidationError, whole: str = "value") -> str:
    """A pydantic error as `field.path: message; ...`, the one way every reader of user or judge data words it
    (`whole` names a problem of the value itself, which has no field path)."""
    return "; ".join(f"{'.'.join(map(str, e['loc'])) or whole}: {e['msg'].removeprefix('Value error, ')}"
                     for e in error.errors())
