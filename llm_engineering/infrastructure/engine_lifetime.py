"""Engine processes that end with the process that started them.

vLLM runs its engine core and its workers in processes of their own. A parent that ends without
shutting them down (SIGKILL, the kernel's out-of-memory killer) leaves them running, a worker spinning
at a full core until someone kills it. vLLM loads its general plugins (entry point group
`vllm.general_plugins`, see pyproject.toml) in every process it starts; `die_with_parent` is such a
plugin: in an engine process started for this project, it asks the kernel to kill the process as soon
as its parent ends (Linux `PR_SET_PDEATHSIG`). The engine core then dies with the program that built
it, and each worker with its engine core. Whatever ends the parent, no engine outlives it.
"""

from __future__ import annotations

import ctypes
import logging
import multiprocessing
import os
import signal
import sys

logger = logging.getLogger(__name__)

# Set by whoever starts an engine for this project (`EnginePool` to its own pid while it builds one from the main
# thread, the tests' `vllm serve` to 1): inherited by the engine's processes; without it the plugin does nothing.
# Not for a Ray replica's engine core: an actor may build its engine in a thread that ends before the actor, and
# the kernel's parent-death signal follows the thread that started the process (`ENGINE_CORE_CHILDREN`).
DIE_WITH_PARENT = "LLM_EVAL_ENGINE_DIES_WITH_PARENT"
# Its value in Ray replicas: only the processes an engine core starts (its workers) are tied to it. The engine
# core runs its executor in its main thread; left alone, a worker whose engine core was ended with its actor can
# hang in vLLM's shutdown (blocked sending to the gone engine core) and keep its memory.
ENGINE_CORE_CHILDREN = "engine-core-children"
_ENGINE_CORE = "VLLM::EngineCor"  # the process name vLLM gives its engine core, as the kernel keeps it (15 chars)
_PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """In a process that multiprocessing started for a vLLM engine of ours: be killed when the parent ends."""
    starter = os.environ.get(DIE_WITH_PARENT)
    if not starter or starter == str(os.getpid()) or not sys.platform.startswith("linux"):
        return  # not ours, or the process that builds the engine (vLLM loads plugins there too)
    parent = multiprocessing.parent_process()
    if parent is None:  # a program's own process (the CLI, a test, `vllm serve`), not one of its engine's
        return
    if starter == ENGINE_CORE_CHILDREN and (parent.pid is None or _name(parent.pid) != _ENGINE_CORE):
        return  # a Ray replica's engine core itself: its actor may have started it from a passing thread
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        logger.warning("Could not tie engine process %d to its parent (prctl errno %d): if the parent is killed, "
                       "end this process by its pid", os.getpid(), ctypes.get_errno())
        return
    if os.getppid() != parent.pid:  # the parent ended before the kernel was asked
        os.kill(os.getpid(), signal.SIGKILL)


def _name(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm") as comm:
            return comm.read().strip()
    except OSError:
        return ""
