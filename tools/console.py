"""A quiet console: library warnings and engine logs go to a log file, the console keeps step progress,
progress bars and the summary.

vLLM's engine processes, C++ warnings and library prints write straight to file descriptors 1 and 2,
so those become the log file (every process started meanwhile inherits them); this process's Python
streams get the terminal back. Log records of libraries (anything but ZenML and this project) below
ERROR, and Python warnings, go only to the log.
"""

from __future__ import annotations

import io
import logging
import os
import sys
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any, Iterator, TextIO

_CONSOLE_LOGGERS = {"zenml", "llm_engineering", "steps", "pipelines", "tools", "__main__"}


class _ConsoleFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        # vLLM tags every record of the process with its process name, which ZenML's console shows as an extra.
        record.__dict__.pop("vllm_process_name", None)
        return record.levelno >= logging.ERROR or record.name.split(".")[0] in _CONSOLE_LOGGERS


class RunLog:
    """The log file of one command; named by its run once the run is known."""

    def __init__(self, path: Path):
        self.path = path

    def name_after(self, run_name: str) -> None:
        target = self.path.with_name(f"{run_name}.log")
        if target.exists():  # another command reported the same run: keep both logs
            target = self.path.with_name(f"{run_name}-{self.path.stem}.log")
        self.path = self.path.rename(target)


def _terminal(stream: TextIO, fd: int) -> TextIO:
    """`stream` rebound to a copy of `fd` (which is about to become the log); a stream on another file
    (click's test runner, a redirection of sys.stdout) is kept as it is."""
    try:
        if stream.fileno() != fd:
            return stream
    except (AttributeError, ValueError, io.UnsupportedOperation):
        return stream
    stream.flush()
    return open(os.dup(fd), "w", buffering=1, encoding=stream.encoding, errors=stream.errors)


def _quiet_library_progress_bars() -> list[Any]:
    """Turn off the progress bars of quick library chores (saving a dataset, loading a small model's
    weights); the undo callables."""
    import datasets
    import transformers

    undo = []
    if datasets.is_progress_bar_enabled():
        datasets.disable_progress_bars()
        undo.append(datasets.enable_progress_bars)
    if transformers.utils.logging.is_progress_bar_enabled():
        transformers.utils.logging.disable_progress_bar()
        undo.append(transformers.utils.logging.enable_progress_bar)
    return undo


@contextmanager
def quiet_console(directory: Path) -> Iterator[RunLog]:
    """Send library output to `<directory>/<time>.log` while the block runs; everything is restored after."""
    directory.mkdir(parents=True, exist_ok=True)
    run_log = RunLog(directory / f"{datetime.now():%Y_%m_%d-%H_%M_%S_%f}.log")
    log = open(run_log.path, "ab", buffering=0)  # append mode: every process's lines land whole, none overwritten
    streams = sys.stdout, sys.stderr
    saved = {fd: os.dup(fd) for fd in (1, 2)}
    sys.stdout, sys.stderr = _terminal(sys.stdout, 1), _terminal(sys.stderr, 2)
    for fd in (1, 2):
        os.dup2(log.fileno(), fd)
    # vLLM logs to the stream named here in every process: sys.__stdout__ is descriptor 1, the log. Ray's
    # driver would print its workers' output to the console: it stays in Ray's own session logs.
    quiet_environment = {"VLLM_LOGGING_STREAM": "ext://sys.__stdout__", "RAY_LOG_TO_DRIVER": "0"}
    saved_environment = {name: os.environ.get(name) for name in quiet_environment}
    os.environ.update(quiet_environment)
    import zenml.logger  # noqa: F401  (ZenML's console handler exists from here on: filter it)

    console_filter = _ConsoleFilter()
    handlers = [h for h in logging.root.handlers if isinstance(h, logging.StreamHandler)]
    for handler in handlers:
        handler.addFilter(console_filter)
    to_log = logging.StreamHandler(sys.__stderr__)
    to_log.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.root.addHandler(to_log)
    logging.captureWarnings(True)  # as ZenML does: Python warnings become log records, filtered as above
    undo = _quiet_library_progress_bars()
    try:
        yield run_log
    finally:
        for step in undo:
            step()
        logging.root.removeHandler(to_log)
        for handler in handlers:
            handler.removeFilter(console_filter)
        for name, value in saved_environment.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        for fd, copy in saved.items():
            os.dup2(copy, fd)
            os.close(copy)
        # The terminal copies stay open: ZenML's console handler may hold one of them for the process's life.
        sys.stdout, sys.stderr = streams
        log.close()
