import pytest

from llm_engineering.infrastructure.vllm_engine import ENGINE_LEDGER


@pytest.fixture(autouse=True)
def _no_engine_ledger(monkeypatch):
    """Unit tests build no real engine: the stand-in builds of the engine pool's tests stay out of the session's
    count of engines (tests/support/costs.py)."""
    monkeypatch.delenv(ENGINE_LEDGER, raising=False)
