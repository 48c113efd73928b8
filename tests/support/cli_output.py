"""Reading what a CLI run printed: the reports whose paths it printed last, and the pipeline run its JSON report names.
One reading for every CLI test (`evaluate`, `rescore`, `publish`, `judge-bench`), in this process or another."""

import json
from pathlib import Path


def report_path(stdout: str, kind: str = "JSON") -> Path:
    """The path of the `kind` report ("JSON" or "HTML") that the CLI printed (`JSON report: PATH`)."""
    line = next(line for line in stdout.splitlines() if line.startswith(f"{kind} report:"))
    return Path(line.split(":", 1)[1].strip())


def json_report(stdout: str) -> dict:
    """The JSON report whose path the CLI printed, loaded."""
    return json.loads(report_path(stdout).read_text())


def reported_run(result, exit_code: int = 0):
    """`(pipeline run, JSON report)` of a CLI call made with `run_cli` (click's Result), once it exited with
    `exit_code` (its output's tail otherwise): the run is the one its report names, read from the ZenML store."""
    from zenml.client import Client

    assert result.exit_code == exit_code, result.output[-3000:]
    report = json_report(result.stdout)
    return Client().get_pipeline_run(report["run"]), report
