"""A judge that refuses every request, through the CLI: the run is stored whole (its answers kept), the console and
the report count the failures by cause with the server's message, and the command exits 4 saying how to judge the
stored answers again; once the judge is fixed, `rescore --only-failed` scores them without generating anything.
The session's engine generates two short answers; the OpenAI-compatible stub refuses, then answers."""

import pytest

from tests.support.cli_output import json_report
from tests.support.configs import stub_judged
from tests.support.openai_stub import OpenAIStub

ROWS = 2
REFUSAL = "The model `stub-judge` does not exist or you do not have access to it."


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_model_without_any_valid_verdict_exits_4_with_the_cause_and_rescore_only_failed_recovers(run_cli, tmp_path):
    with OpenAIStub() as judge:
        config = stub_judged(tmp_path / "run.yaml", judge.base_url, rows=ROWS, max_tokens=8)
        judge.state.default = ("400", REFUSAL)
        result = run_cli("evaluate", "--config", config)
        assert result.exit_code == 4, result.output[-3000:]
        example = f"request failed after 1 attempt(s): HTTP 400: {REFUSAL}"
        (model,) = json_report(result.stdout)["models"]  # the report is written before the exit
        assert (model["scored"], model["failures"]) == (0, [{"cause": "HTTP 400", "count": ROWS, "example": example}])
        assert f"Judge failures, smollm2-135m: {ROWS} of {ROWS} answers without a valid verdict: {ROWS} HTTP 400 " \
               f"(e.g. {example!r})" in result.stdout
        assert f"No valid verdict for smollm2-135m: all {ROWS} of its answers failed to be judged" in result.stderr
        assert "`python tools/run.py rescore --only-failed` judges them again" in result.stderr

        judge.state.default, judge.state.requests = "ok", []
        result = run_cli("rescore", "--config", config, "--only-failed")
    assert result.exit_code == 0, result.output[-3000:]
    (model,) = json_report(result.stdout)["models"]
    assert (model["scored"], model["failures"], len(judge.state.requests)) == (ROWS, [], ROWS)
    assert "Judge failures" not in result.stdout
