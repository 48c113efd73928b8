"""`make test` runs the suite in two pytest-xdist workers, each pinned to its own share of the CPU cores.

Most of a session's time is one thread's (imports, ZenML, subprocesses starting); a vLLM engine on CPU computes on
every core it is bound to, and two engines bound to the same cores spin against each other. So each worker, and
every process it starts (affinity is inherited), keeps to its own cores, where its engines bind their threads
(`cpu_tuning.cpu_environment` binds to the cores a process may run on). Without xdist nothing here applies.
"""

import os
from typing import Optional

# The variables through which each worker names its own store's stack and project: ZenML reads them before the
# repository's `.zen/config.yaml`, which names one store's for every process that runs from the repository.
WORKER_STACK = ("ZENML_ACTIVE_PROJECT_ID", "ZENML_ACTIVE_STACK_ID")

# The test files that read `first_run` (tests/integration/conftest.py), one unit of work together (`work_unit`); the
# collection checks that no other file reads it (tests/conftest.py).
FIRST_RUN_FILES = frozenset(f"tests/integration/{name}.py" for name in
                            ("test_dashboard", "test_pipeline", "test_rescore_and_republish"))


def worker() -> Optional[str]:
    """This process's xdist worker name ("gw0", "gw1"...), or None outside xdist."""
    return os.environ.get("PYTEST_XDIST_WORKER")


def worker_cores(name: str, workers: int, cores: list[int]) -> list[int]:
    """The cores worker `name` keeps to: `cores` split into `workers` contiguous shares (the last takes what is left);
    with more workers than cores, each worker one core, round robin."""
    index = int(name.removeprefix("gw"))
    if workers >= len(cores):
        return [cores[index % len(cores)]]
    share = len(cores) // workers
    return cores[index * share:] if index == workers - 1 else cores[index * share:(index + 1) * share]


def pin_this_worker() -> None:
    """Under xdist: this process kept to its cores (nothing outside xdist). Called before anything imports torch,
    whose thread count follows the affinity."""
    name = worker()
    if name is not None:
        workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
        os.sched_setaffinity(0, worker_cores(name, workers, sorted(os.sched_getaffinity(0))))


def work_unit(nodeid: str) -> str:
    """The unit of work of a test under `make test` (one worker runs a unit's tests, so a file's module fixtures are
    built once): its file, or "first_run" for the files that read it, so that one worker alone makes the session's
    first small evaluation (half a minute to a minute)."""
    path = nodeid.split("::", 1)[0]
    return "first_run" if path in FIRST_RUN_FILES else path


def files_and_first_run(config, log):
    """xdist's scheduler for `--dist loadfile`, its units of work `work_unit`'s."""
    from xdist.scheduler import LoadFileScheduling

    class FilesAndFirstRun(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return work_unit(nodeid)

    return FilesAndFirstRun(config, log)
