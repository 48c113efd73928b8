"""Settings from the environment or a `.env` file (tokens, workspace, paths).

Nothing is read at import time: call `get_settings()` where a value is needed. `.env` is the repository's (beside
`tools/run.py` and `.zen`), and a relative path (OUTPUT_DIR's default `outputs`) is under the repository too, from
whatever folder the CLI is started.

Remotely there is no `.env`: `python tools/run.py --export-settings` stores the settings as
the ZenML secret `settings`, and a run config that lists it (`secrets: [settings]`) has ZenML
set its values as environment variables of every step, where `Settings` reads them.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable, Optional

from pydantic import SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

# The repository this package is checked out in: where `.env`, `outputs/` and ZenML's `.zen` are.
PROJECT_ROOT = Path(__file__).resolve().parents[1]
ENV_FILE = PROJECT_ROOT / ".env"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_file=ENV_FILE, env_file_encoding="utf-8", extra="ignore")

    # Hugging Face: one token for every Hub read and write: publishing results, private datasets, gated or private
    # models (generation and the judge), published answers read back. HF_TOKEN, the Hub libraries' own name, is read
    # where HUGGINGFACE_ACCESS_TOKEN is not set (`hub_token`).
    HUGGINGFACE_ACCESS_TOKEN: Optional[SecretStr] = None
    HF_TOKEN: Optional[SecretStr] = None
    DATASET_HUGGINGFACE_WORKSPACE: str = "local"

    @property
    def hub_token(self) -> Optional[str]:
        """The Hugging Face token: HUGGINGFACE_ACCESS_TOKEN, else HF_TOKEN, else None (public repos only)."""
        token = self.HUGGINGFACE_ACCESS_TOKEN or self.HF_TOKEN
        return token.get_secret_value() if token else None

    def hub_environment(self) -> dict[str, str]:
        """HF_TOKEN for a process that downloads from the Hub on its own (vLLM's engine, a Ray replica, `vllm serve`:
        their weight downloads read the token from the environment only); empty without a token."""
        return {"HF_TOKEN": self.hub_token} if self.hub_token else {}

    # Judge keys, each sent to its own endpoint only (`infrastructure.judge_endpoint`): OPENAI_API_KEY to OpenAI's
    # API (or to OPENAI_BASE_URL, where a user sends OpenAI's requests), JUDGE_API_KEY to a served judge's URL
    # (`vllm serve --api-key`); a served judge without one gets no key.
    OPENAI_API_KEY: Optional[SecretStr] = None
    OPENAI_BASE_URL: Optional[str] = None
    JUDGE_API_KEY: Optional[SecretStr] = None

    # Opik tracing of judge calls: off unless an API key or a self-hosted URL is set.
    OPIK_API_KEY: Optional[SecretStr] = None
    OPIK_URL_OVERRIDE: Optional[str] = None
    OPIK_WORKSPACE: Optional[str] = None
    OPIK_PROJECT_NAME: str = "llm-evaluation"

    @property
    def opik_enabled(self) -> bool:
        return bool(self.OPIK_API_KEY or self.OPIK_URL_OVERRIDE)

    # Where converted models are cached (outside the repo), and where results are written.
    MODEL_CACHE_DIR: Path = Path.home() / ".cache" / "llm-engineering" / "models"
    JUDGE_CACHE_DIR: Path = Path.home() / ".cache" / "llm-engineering" / "judge"
    # Answers saved one by one as they are generated, so an interrupted run resumes.
    CHECKPOINT_DIR: Path = Path.home() / ".cache" / "llm-engineering" / "checkpoints"
    OUTPUT_DIR: Path = PROJECT_ROOT / "outputs"

    @field_validator("MODEL_CACHE_DIR", "JUDGE_CACHE_DIR", "CHECKPOINT_DIR", "OUTPUT_DIR")
    @classmethod
    def _under_the_repository(cls, path: Path) -> Path:
        """A relative path is the repository's, as `.env` is, not the folder the CLI was started from."""
        return PROJECT_ROOT / path.expanduser()

    @property
    def local_hub_dir(self) -> Path:
        """The offline stand-in for the Hub: `<OUTPUT_DIR>/hub/<workspace>/<model>-results`."""
        return self.OUTPUT_DIR / "hub"

    @property
    def reports_dir(self) -> Path:
        return self.OUTPUT_DIR / "reports"

    @property
    def logs_dir(self) -> Path:
        """Library warnings and engine output of each CLI command: `<OUTPUT_DIR>/logs/<run>.log`."""
        return self.OUTPUT_DIR / "logs"


SETTINGS_SECRET = "settings"
# Paths of this machine mean nothing on another one: they stay out of the secret.
LOCAL_ONLY = {"MODEL_CACHE_DIR", "JUDGE_CACHE_DIR", "CHECKPOINT_DIR", "OUTPUT_DIR"}


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """Settings from the environment and the repository's `.env` (another file with LLM_EVAL_ENV_FILE; none when it is
    empty)."""
    return Settings(_env_file=os.environ.get("LLM_EVAL_ENV_FILE", str(ENV_FILE)) or None)


def exportable_values(settings: Settings) -> dict[str, str]:
    """The settings set in .env or the environment, as secret values (local paths left out)."""
    values = {}
    for name in sorted(settings.model_fields_set - LOCAL_ONLY):
        value = getattr(settings, name)
        if value is not None:
            values[name] = value.get_secret_value() if isinstance(value, SecretStr) else str(value)
    return values


def export_settings(settings: Settings, name: str = SETTINGS_SECRET) -> list[str]:
    """Store the settings as the ZenML secret `name` (replacing its values); returns the keys stored."""
    from zenml.client import Client

    values = exportable_values(settings)
    if not values:
        raise ValueError(
            "No settings are set in .env or the environment, so there is nothing to export: set "
            "e.g. HUGGINGFACE_ACCESS_TOKEN or OPENAI_API_KEY first."
        )
    client = Client()
    try:
        existing = client.get_secret(name, allow_partial_name_match=False, allow_partial_id_match=False)
    except KeyError:
        client.create_secret(name=name, values=values)
    else:
        stale = sorted(set(existing.secret_values) - set(values))
        client.update_secret(existing.id, add_or_update_values=values, remove_values=stale or None)
    return sorted(values)


class _ValuesOnly(Settings):
    """Settings from given values and defaults alone: no .env, no environment of this machine."""

    @classmethod
    def settings_customise_sources(cls, settings_cls, init_settings, **sources):
        return (init_settings,)


def settings_from_secrets(secret_names: Iterable[str]) -> Settings:
    """The settings a remote step sees: these secrets' values (ZenML sets them as its environment) and defaults.

    Nothing comes from this machine's .env or environment, which a remote step does not have.
    A missing secret raises KeyError.
    """
    from zenml.client import Client

    values: dict[str, str] = {}
    for name in secret_names:
        secret = Client().get_secret(name, allow_partial_name_match=False, allow_partial_id_match=False)
        values.update(secret.secret_values)
    # Text for fields of any type: pydantic converts each value (Any, not str, as the fields are not all text).
    fields: dict[str, Any] = {key: value for key, value in values.items() if key in Settings.model_fields}
    return _ValuesOnly(**fields)
