"""Settings from the environment or a `.env` file (tokens, workspace, paths).

Nothing is read at import time: call `get_settings()` where a value is needed.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Optional

from pydantic import SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_file=".env", env_file_encoding="utf-8", extra="ignore")

    # Hugging Face: the token is only needed to push results to (or read private data from) the Hub.
    HUGGINGFACE_ACCESS_TOKEN: Optional[SecretStr] = None
    DATASET_HUGGINGFACE_WORKSPACE: str = "local"

    # OpenAI-compatible judge endpoints (a local `vllm serve` accepts any key).
    OPENAI_API_KEY: Optional[SecretStr] = None

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
    OUTPUT_DIR: Path = Path("outputs")

    @property
    def local_hub_dir(self) -> Path:
        """The offline stand-in for the Hub: `<OUTPUT_DIR>/hub/<workspace>/<model>-results`."""
        return self.OUTPUT_DIR / "hub"

    @property
    def reports_dir(self) -> Path:
        return self.OUTPUT_DIR / "reports"


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings()
