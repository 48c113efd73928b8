"""The CLI as its own process, as a terminal or an orchestrator starts it, for tests that signal or kill it; and
what its checkpoint holds once it is stopped."""

import json
import os
import signal
import subprocess
import sys
import time


def _default_signals():
    """The CLI as started from a terminal, however this test runs: a shell's background job (a CI runner's, say)
    starts with SIGINT ignored, and under nohup SIGHUP is ignored; a process keeps what it inherits."""
    for sig in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM):
        signal.signal(sig, signal.SIG_DFL)


def start_cli(repo_root, args, log, **env):
    """`python tools/run.py ARGS` in its own session (its pid is its process group's id), output to `log`."""
    return subprocess.Popen(
        [sys.executable, "tools/run.py", *map(str, args)],
        cwd=repo_root, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, preexec_fn=_default_signals,
        env={**os.environ, "VLLM_LOGGING_LEVEL": "INFO", **env},  # as the CLI's default, whatever this process has
    )


def group_gone(pgid, timeout=60):
    """Whether every process of group `pgid` has ended within `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.5)
    return False


def saved_answers(paths):
    """The answers saved in checkpoint files, one dict a complete line (a line torn by a kill is skipped; a file not
    written yet holds none)."""
    rows = []
    for path in paths:
        if not path.exists():
            continue
        for line in path.read_text().splitlines():
            try:
                rows.append(json.loads(line))
            except ValueError:
                pass  # torn by the kill
    return rows
