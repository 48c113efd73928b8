import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

from tests.support.costs import EngineCensus, pipeline_run_lines, pipeline_runs
from tests.support.hub_stub import HubStub
from tests.support.session_dir import in_memory, session_root
from tests.support.session_engine import auto_dtype
from tests.support.workers import WORKER_STACK, files_and_first_run, pin_this_worker, work_unit, worker

# Under pytest-xdist (`make test`: two workers) this worker keeps to its own cores from here on, torch not yet
# imported (tests/support/workers.py).
pin_this_worker()
# Set before anything imports ZenML or reads settings: no test reaches the internet, and every
# session gets its own ZenML store, output folder and caches (the real local stack, on SQLite), in memory where the
# machine has room (tests/support/session_dir.py). Each xdist worker is a session of its own, in a folder inside its
# controller's (whose summary reads them all, and which removes them all).
_PARENT_SESSION = "LLM_EVAL_TEST_SESSION_DIR"
if worker() and os.environ.get(_PARENT_SESSION):
    _SESSION_DIR = Path(os.environ[_PARENT_SESSION]) / str(worker())
    _SESSION_DIR.mkdir(exist_ok=True)
else:
    _SESSION_DIR = Path(tempfile.mkdtemp(prefix="llm-eval-tests-", dir=session_root()))
    os.environ[_PARENT_SESSION] = str(_SESSION_DIR)

# Settings come from this file alone: no developer's `.env` (LLM_EVAL_ENV_FILE empty), no stray
# environment (a CI's DATASET_HUGGINGFACE_WORKSPACE or OPIK_URL_OVERRIDE would change outcomes), no
# ZenML store or stack of the developer's. The converted models stay where `make install` put them.
from llm_engineering.infrastructure.vllm_engine import ENGINE_LEDGER  # noqa: E402
from llm_engineering.settings import Settings  # noqa: E402  (reads nothing at import)

for _name in [*Settings.model_fields, "HF_TOKEN", "HF_HUB_OFFLINE", "OPENAI_BASE_URL"]:
    if _name != "MODEL_CACHE_DIR":
        os.environ.pop(_name, None)
for _name in [name for name in os.environ if name.startswith("ZENML_")]:
    os.environ.pop(_name)
os.environ.update({
    "LLM_EVAL_ENV_FILE": "",
    "ZENML_ANALYTICS_OPT_IN": "false",
    "ZENML_CONFIG_PATH": str(_SESSION_DIR / "zenml"),
    "OUTPUT_DIR": str(_SESSION_DIR / "outputs"),
    "JUDGE_CACHE_DIR": str(_SESSION_DIR / "judge-cache"),
    "CHECKPOINT_DIR": str(_SESSION_DIR / "checkpoints"),
    # Home caches (Hugging Face, datasets, anything under XDG) are the session's own.
    "HF_HOME": str(_SESSION_DIR / "hf-home"),
    "XDG_CACHE_HOME": str(_SESSION_DIR / "cache"),
})
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

# The Hub is a stub (tests/support/hub_stub.py), serving on its own loopback port for the whole
# session (huggingface_hub reads HF_ENDPOINT once, at import): the port stays ours, and a stray Hub
# call gets the stub's answer at once instead of reaching out. The `hub` fixture empties it per test.
if "huggingface_hub" in sys.modules:  # under xdist it would keep the controller's stub, whose repos are not the worker's
    raise pytest.UsageError("huggingface_hub was imported before the session's HF_ENDPOINT is set: import it (or "
                            "what imports it: datasets, llm_engineering's modules) below this line of tests/conftest.py")
_HUB = HubStub(_SESSION_DIR / "hub-stub").__enter__()
os.environ["HF_ENDPOINT"] = _HUB.endpoint
# The repository's `.zen` marks the source root ZenML resolves the steps against: made here, before any test (an xdist
# worker's main module has no file for ZenML to fall back on, and two workers would race to make it). The CLI runs in
# tests write the session store's project and stack ids into `.zen/config.yaml`: what was there is put back when the
# session ends (`pytest_unconfigure`; under xdist by the controller, once every worker is done), so a developer's
# active stack survives `make test`.
_ZEN = Path(__file__).resolve().parents[1] / ".zen"
if not worker():
    _ZEN_BEFORE = (_ZEN / "config.yaml").read_bytes() if (_ZEN / "config.yaml").exists() else None
    _ZEN_MADE = not _ZEN.is_dir()
    _ZEN.mkdir(exist_ok=True)

# Every engine the session starts, in any process: the summary's last lines (tests/support/costs.py). The controller
# of xdist workers watches for them all; the workers write into its ledger, and say which processes are theirs.
if worker() and os.environ.get(ENGINE_LEDGER):
    _ENGINES = None
    (_SESSION_DIR / "pid").write_text(str(os.getpid()))
else:
    _ENGINES = EngineCensus(_SESSION_DIR / "engines.jsonl").__enter__()
    os.environ[ENGINE_LEDGER] = str(_ENGINES.ledger)


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def session_dir() -> Path:
    return _SESSION_DIR


@pytest.fixture(autouse=True)
def _fresh_settings():
    """Settings are read again in each test (a test's monkeypatched environment reaches them) and after it."""
    from llm_engineering.settings import get_settings

    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


@pytest.fixture(scope="session", autouse=True)
def _own_stack_per_worker():
    """Each xdist worker has its own store, while the repository's `.zen/config.yaml` names one store's stack and
    project for every process run from the repository: each worker names its own in the environment, which ZenML
    reads first (and which the CLI subprocesses it starts inherit)."""
    if worker():
        from zenml.config.global_config import GlobalConfiguration

        config = GlobalConfiguration()
        os.environ.update(dict(zip(WORKER_STACK, (str(config.get_active_project().id),
                                                  str(config.get_active_stack_id())))))
    yield


@pytest.fixture(scope="session", autouse=True)
def _free_engines_at_session_end():
    """Shut down the shared vLLM engine (the steps' pool) while pytest's output streams are still open."""
    yield
    from steps.engine_pool import ENGINE_POOL

    ENGINE_POOL.release()
    _HUB.__exit__(None, None, None)


def _builds_its_own_engine(item) -> bool:
    """Marked `own_engine`; with `where_auto_is_bf16=True`, only on a CPU where `dtype: auto` runs bfloat16 (elsewhere
    the engine it asks for is the session's own: float32 SmolLM2, the judge `auto` picks there)."""
    marker = item.get_closest_marker("own_engine")
    if marker is None:
        return False
    return not marker.kwargs.get("where_auto_is_bf16") or auto_dtype() == "bfloat16"


def _declared_timeout(item) -> float:
    marker = item.get_closest_marker("timeout")
    return float(marker.args[0]) if marker and marker.args else 0.0


def _order(item) -> tuple:
    if worker():
        return (not _builds_its_own_engine(item), -_declared_timeout(item))
    return (_builds_its_own_engine(item),)


@pytest.hookimpl(optionalhook=True)  # pytest-xdist's hook: absent with `-p no:xdist`
def pytest_xdist_make_scheduler(config, log):
    """`make test`'s `--dist loadfile`, with the files that read `first_run` one unit of work together."""
    return files_and_first_run(config, log) if config.getvalue("dist") == "loadfile" else None


def pytest_itemcollected(item):
    if "first_run" in item.fixturenames and work_unit(item.nodeid) != "first_run":
        raise pytest.UsageError(f"{item.nodeid} reads first_run: add its file to FIRST_RUN_FILES "
                                "(tests/support/workers.py), so that one worker alone makes that run")


@pytest.hookimpl(trylast=True)  # on the items selected (`-m`), after pytest-randomly's shuffle
def pytest_collection_modifyitems(items):
    """A stable sort on top of pytest-randomly's shuffle (as it provides for). In one process, tests that build an
    engine of their own run after the others: the process holds one engine, and each of these builds another (the
    judge, float32, LoRA), which the next test on the session's default engine would have to rebuild. Under xdist
    (`make test`, each test file on one worker) those files go first instead, then the files with the longest
    declared timeouts: a worker left alone with one of them at the end would keep the other waiting (a minute or two
    here), against a few seconds to build the session's engine again once on each worker."""
    items.sort(key=_order)


_KEEP_SESSION_DIR: list[bool] = []


def pytest_sessionfinish(session):
    """An xdist worker leaves its pipeline runs for its controller's summary."""
    if worker():
        (_SESSION_DIR / "pipeline-runs.json").write_text(json.dumps(pipeline_runs(_SESSION_DIR / "zenml")))


def pytest_terminal_summary(terminalreporter, exitstatus):
    """What the session paid for: every engine started (any process), the test processes' builds in order with their
    start seconds, and the pipeline runs (tests/support/costs.py), its xdist workers' included; where the session's
    folder is kept, and why."""
    if _ENGINES is None:
        return
    _ENGINES.__exit__(None, None, None)
    workers = {int(path.read_text()) for path in _SESSION_DIR.glob("gw*/pid")}
    for line in _ENGINES.lines(test_processes=workers or {os.getpid()}):
        terminalreporter.write_line(line)
    left = sorted(_SESSION_DIR.glob("gw*/pipeline-runs.json"))
    runs = [run for path in left for run in json.loads(path.read_text())] if left else \
        pipeline_runs(_SESSION_DIR / "zenml")
    for line in pipeline_run_lines(runs):
        terminalreporter.write_line(line)
    if exitstatus != pytest.ExitCode.OK and not in_memory(_SESSION_DIR):
        _KEEP_SESSION_DIR.append(True)
        terminalreporter.write_line(f"The session's ZenML store, caches and outputs, kept for a look after the failure: "
                                    f"{_SESSION_DIR} (remove it when done)")


def pytest_unconfigure():
    """The repository's `.zen` is put back as it was; the session's folder is removed once the summary has read it (a
    few hundred MB each session), except on a disk after a failure: it stays there for a look, and the summary says
    where."""
    if worker():
        return  # the controller removes its workers' folders with its own, and puts `.zen` back once they are done
    if _ZEN_BEFORE is not None:
        (_ZEN / "config.yaml").write_bytes(_ZEN_BEFORE)
    elif _ZEN_MADE:
        shutil.rmtree(_ZEN, ignore_errors=True)
    else:
        (_ZEN / "config.yaml").unlink(missing_ok=True)
    if not _KEEP_SESSION_DIR:
        shutil.rmtree(_SESSION_DIR, ignore_errors=True)


@pytest.fixture
def hub(tmp_path):
    """The session's Hub stub (on HF_ENDPOINT), emptied for this test: no repos, no failure set, no calls."""
    _HUB.state.__init__(tmp_path / "hub-stub")  # the handler holds this state object: reset it in place
    yield _HUB
    _HUB.state.__init__(_SESSION_DIR / "hub-stub")


@pytest.fixture
def run_cli(repo_root, monkeypatch):
    """`python tools/run.py ARGS` in this process (click's runner): its pipeline runs use the session's
    engine pool, so a CLI run with the default engine config starts no second engine. Returns click's
    Result (exit_code, stdout, stderr); the CLI's changes to the environment are undone afterwards."""
    from click.testing import CliRunner

    from llm_engineering.settings import get_settings
    from tools.run import main

    monkeypatch.chdir(repo_root)

    def run(*args: object):
        saved = dict(os.environ)
        get_settings.cache_clear()  # settings read afresh, as a new process would
        try:
            return CliRunner().invoke(main, [str(arg) for arg in args], catch_exceptions=False)
        finally:
            os.environ.clear()
            os.environ.update(saved)
            get_settings.cache_clear()

    return run
