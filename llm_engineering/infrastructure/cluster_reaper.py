"""Ends a local Ray cluster's processes once the program that started it is gone, however it ended.

Ray ties its daemons (GCS, raylet) to the driver with the kernel's parent-death signal, and the raylet ends the
workers, but its agents (dashboard, runtime env) then spend 60 s trying to report the raylet's death to the gone
GCS before they exit. The program starts this reaper beside the cluster with a pipe, and marks the cluster's
daemons (an environment variable set only while they start, which the workers inherit from the raylet); once the
cluster is up it writes a line, and the reaper notes the daemons' children (the agents, started with an
environment of their own). When the pipe closes (the program ended the cluster, or died), the reaper kills the
marked processes and the noted ones, then exits. Run as `python cluster_reaper.py MARK`, by its path.
"""

from __future__ import annotations

import os
import signal
import sys
import time

import psutil

CLUSTER_MARK = "LLM_EVAL_RAY_CLUSTER"


def marked_processes(mark: str) -> list[psutil.Process]:
    """The processes whose environment holds `CLUSTER_MARK=mark` (this one excepted)."""
    found = []
    for process in psutil.process_iter():
        try:
            if process.pid != os.getpid() and process.environ().get(CLUSTER_MARK) == mark:
                found.append(process)
        except psutil.Error:  # ended meanwhile, or not ours to read
            pass
    return found


def children_of(processes: list[psutil.Process]) -> list[psutil.Process]:
    found = []
    for process in processes:
        try:
            found += process.children(recursive=True)
        except psutil.Error:
            pass
    return found


def reap(mark: str, noted: list[psutil.Process], rounds: int = 3) -> None:
    """SIGKILL the marked processes and those `noted` still running (psutil checks a pid is the same process),
    a few rounds apart (a worker may be starting)."""
    for _ in range(rounds):
        for process in marked_processes(mark) + noted:
            try:
                if process.is_running():
                    process.send_signal(signal.SIGKILL)
            except psutil.Error:
                pass
        time.sleep(0.2)


def main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C meant for the program is not for the reaper
    mark = sys.argv[1]
    noted: list[psutil.Process] = []
    for _ in sys.stdin:  # "up": the cluster has started; then nothing until the pipe closes
        noted = children_of(marked_processes(mark))
    reap(mark, noted)


if __name__ == "__main__":
    main()
