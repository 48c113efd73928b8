"""Reading what a CLI run printed: the JSON report it wrote names the run."""

import json


def json_report(stdout: str) -> dict:
    """The JSON report whose path the CLI printed (`JSON report: PATH`), loaded."""
    line = next(line for line in stdout.splitlines() if line.startswith("JSON report:"))
    with open(line.split(":", 1)[1].strip()) as report:
        return json.load(report)
