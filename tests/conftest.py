import os
import shutil
import socket
import sys
import tempfile
from pathlib import Path

import pytest

# Set before anything imports ZenML or reads settings: no test reaches the internet, and every
# session gets its own ZenML store and output folder (the real local stack, on SQLite).
_SESSION_DIR = Path(tempfile.mkdtemp(prefix="llm-eval-tests-"))
os.environ["ZENML_ANALYTICS_OPT_IN"] = "false"
os.environ["ZENML_CONFIG_PATH"] = str(_SESSION_DIR / "zenml")
os.environ["OUTPUT_DIR"] = str(_SESSION_DIR / "outputs")
os.environ["JUDGE_CACHE_DIR"] = str(_SESSION_DIR / "judge-cache")
os.environ["CHECKPOINT_DIR"] = str(_SESSION_DIR / "checkpoints")
# The Hub is a stub on this loopback port (tests/integration/hub_stub.py); nothing else answers
# there, so a stray Hub call fails at once instead of reaching out.
with socket.socket() as _sock:
    _sock.bind(("127.0.0.1", 0))
    HUB_PORT = _sock.getsockname()[1]
os.environ["HF_ENDPOINT"] = f"http://127.0.0.1:{HUB_PORT}"
os.environ.pop("HF_HUB_OFFLINE", None)
os.environ.pop("HUGGINGFACE_ACCESS_TOKEN", None)
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def session_dir() -> Path:
    return _SESSION_DIR


@pytest.fixture(scope="session", autouse=True)
def _keep_the_repository_zenml_config(repo_root):
    """The CLI runs in tests write the session store's project and stack ids into the repository's
    `.zen/config.yaml`; put back what was there, so a developer's active stack survives `make test`."""
    config = repo_root / ".zen" / "config.yaml"
    before = config.read_bytes() if config.exists() else None
    yield
    if before is not None:
        config.write_bytes(before)
    else:
        shutil.rmtree(repo_root / ".zen", ignore_errors=True)


@pytest.fixture(scope="session", autouse=True)
def _free_engines_at_session_end():
    """Shut down the shared vLLM engine (the steps' pool) while pytest's output streams are still open."""
    yield
    module = sys.modules.get("steps.evaluating.engine_pool")
    if module is not None:
        module.ENGINE_POOL.release()


@pytest.fixture
def hub(tmp_path):
    """A Hub stub on the session's HF_ENDPOINT port."""
    from tests.integration.hub_stub import HubStub

    with HubStub(tmp_path / "hub-stub", HUB_PORT) as stub:
        yield stub
