"""Engine processes end with their parent: real processes, the kernel's parent-death signal, no vLLM."""

import os
import signal
import subprocess
import sys
import time

import psutil
import pytest

from llm_engineering.infrastructure.engine_lifetime import DIE_WITH_PARENT, ENGINE_CORE_CHILDREN
from tests.support.costs import STAND_IN

# A parent that starts a child the way vLLM starts its engine core (multiprocessing, spawn), and whose
# child runs the plugin as vLLM runs it at start-up, then works on forever.
PARENT = """
import multiprocessing, sys, time

def engine():
    from llm_engineering.infrastructure.engine_lifetime import die_with_parent
    die_with_parent()
    print("ready", flush=True)
    while True:
        time.sleep(0.1)

if __name__ == "__main__":
    if len(sys.argv) > 1:  # the name vLLM gives the process (an engine core): PR_SET_NAME
        import ctypes
        ctypes.CDLL(None).prctl(15, sys.argv[1].encode(), 0, 0, 0)
    child = multiprocessing.get_context("spawn").Process(target=engine)
    child.start()
    print(child.pid, flush=True)
    time.sleep(600)
"""


def _start_parent(repo_root, tmp_path, tied: bool, value: str = "1", name: str = ""):
    env = {**{k: v for k, v in os.environ.items() if k != DIE_WITH_PARENT}, STAND_IN: "1"}  # not counted as an engine
    if tied:
        env[DIE_WITH_PARENT] = value
    script = tmp_path / "parent.py"  # a file: spawn re-imports the parent's main module in the child
    script.write_text(PARENT)
    parent = subprocess.Popen([sys.executable, str(script), *([name] if name else [])], cwd=repo_root,
                              env={**env, "PYTHONPATH": str(repo_root)}, stdout=subprocess.PIPE, text=True)
    child = int(parent.stdout.readline())
    assert parent.stdout.readline().strip() == "ready"  # the plugin has run in the child
    return parent, child


def _gone(pid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.05)
    return False


@pytest.mark.timeout(60)
def test_an_engine_process_dies_when_its_parent_is_killed(repo_root, tmp_path):
    parent, child = _start_parent(repo_root, tmp_path, tied=True)
    parent.kill()  # SIGKILL: the parent runs no clean-up at all
    parent.wait()
    assert _gone(child, timeout=5)


@pytest.mark.timeout(60)
def test_without_the_variable_the_plugin_leaves_the_process_alone(repo_root, tmp_path):
    """What happens without it, and to processes of other programs in the same environment: the child
    outlives its killed parent (this test then ends it by its pid)."""
    parent, child = _start_parent(repo_root, tmp_path, tied=False)
    parent.kill()
    parent.wait()
    try:
        assert not _gone(child, timeout=2)
    finally:
        os.kill(child, signal.SIGKILL)


@pytest.mark.timeout(60)
@pytest.mark.parametrize(("parent_name", "tied"), [("VLLM::EngineCore", True), ("ray::Replica", False)])
def test_in_ray_replicas_only_an_engine_cores_workers_die_with_it(repo_root, tmp_path, parent_name, tied):
    """A Ray replica's engine core may have been started from a passing thread of its actor, so it is left alone;
    the workers it starts itself end with it (else one can hang in vLLM's shutdown and keep its memory)."""
    parent, child = _start_parent(repo_root, tmp_path, tied=True, value=ENGINE_CORE_CHILDREN, name=parent_name)
    parent.kill()
    parent.wait()
    try:
        assert _gone(child, timeout=5 if tied else 2) == tied
    finally:
        if not tied:
            os.kill(child, signal.SIGKILL)


# A program that starts the reaper of a (stand-in) local cluster, a daemon of that cluster with an agent of its
# own, and a process that is not the cluster's; it tells the reaper the cluster is up.
PROGRAM = """
import os, subprocess, sys
from llm_engineering.infrastructure import cluster_reaper

reaper = subprocess.Popen([sys.executable, cluster_reaper.__file__, "m1"], stdin=subprocess.PIPE, start_new_session=True)
# A daemon of the cluster (marked), which starts an agent with an environment of its own (as the raylet does).
daemon = subprocess.Popen([sys.executable, "-c", "import subprocess, time; subprocess.Popen(['sleep', '300'], env={}); "
                           "time.sleep(300)"], env={**os.environ, cluster_reaper.CLUSTER_MARK: "m1"}, start_new_session=True)
other = subprocess.Popen(["sleep", "300"], env={**os.environ, cluster_reaper.CLUSTER_MARK: "m2"}, start_new_session=True)
import psutil, time
while not psutil.Process(daemon.pid).children():
    time.sleep(0.05)
reaper.stdin.write(b"up\\n")
reaper.stdin.flush()
agent = psutil.Process(daemon.pid).children()[0]
print(reaper.pid, daemon.pid, agent.pid, other.pid, flush=True)
sys.stdin.read()
"""


def test_a_local_clusters_processes_end_soon_after_the_program_that_started_it_is_killed(repo_root):
    program = subprocess.Popen([sys.executable, "-c", PROGRAM], cwd=repo_root, stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(repo_root)})
    reaper, daemon, agent, other = (psutil.Process(int(pid)) for pid in program.stdout.readline().split())
    try:
        os.kill(program.pid, signal.SIGKILL)  # as the out-of-memory killer would: no clean-up of its own
        program.wait()
        reaper.wait(timeout=10)  # the pipe closed with the program: it reaped and ended
        daemon.wait(timeout=5)  # the cluster's processes are gone...
        agent.wait(timeout=5)
        assert other.is_running() and other.status() != psutil.STATUS_ZOMBIE  # ...and only it
    finally:
        for process in (daemon, agent, other):
            try:
                process.kill()
            except psutil.Error:
                pass


def test_the_tests_vllm_server_ends_with_the_test_process_that_started_it(repo_root):
    # The tests' `vllm serve` is started with `end_with_this_process`; here a stand-in server, the same way.
    program = ("import subprocess, sys\n"
               "from llm_engineering.infrastructure.vllm_server import end_with_this_process\n"
               "server = subprocess.Popen(['sleep', '300'], preexec_fn=end_with_this_process)\n"
               "print(server.pid, flush=True)\n"
               "sys.stdin.read()\n")
    tests = subprocess.Popen([sys.executable, "-c", program], cwd=repo_root, stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(repo_root)})
    server = psutil.Process(int(tests.stdout.readline()))
    try:
        os.kill(tests.pid, signal.SIGKILL)
        tests.wait()
        server.wait(timeout=5)
    finally:
        try:
            server.kill()
        except psutil.Error:
            pass
