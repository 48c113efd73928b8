"""What every component config shares: the error a user must fix, strict, frozen models, a validation error's
problems in words, and the value types several configs check alike."""

import codecs
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, ValidationError


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


def _known_encoding(name: str) -> str:
    try:
        codecs.lookup(name)
    except LookupError:
        raise ValueError(f"{name!r} is not a text encoding Python knows: give one such as utf-8, latin-1, cp1252 or "
                         f"utf-16") from None
    return name


TextEncoding = Annotated[str, AfterValidator(_known_encoding)]  # a codec's name (`codecs.lookup` knows it)
