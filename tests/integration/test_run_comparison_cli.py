"""Comparing stored runs and the CI gates, through the CLI (`run_cli`): the session's engine generates six
answers once, the OpenAI-compatible stub judges them, then judges four of them worse under another judge
name (so ZenML re-runs the scoring). Each step reads the runs the test made, by name."""

import pytest

from llm_engineering.evaluation.config import DatasetConfig
from llm_engineering.evaluation.generation.dataset import read_test_split
from llm_engineering.evaluation.report.gates import GATE_FAILED_EXIT_CODE
from tests.support.cli_output import json_report, report_path
from tests.support.configs import stub_judged
from tests.support.openai_stub import VERDICT, OpenAIStub

ROWS = 6
WORSE = 4  # rows whose accuracy drops from 3 to 1 in the second run


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_compare_to_an_earlier_run_finds_the_rows_that_got_worse_and_the_gates_exit_with_their_code(run_cli, tmp_path):
    split = read_test_split(DatasetConfig(limit=ROWS))
    worse = {row["id"]: row["instruction"] for row in list(split)[:WORSE]}
    with OpenAIStub() as judge:
        # 1. The first run: every answer accuracy 3, style 2. A threshold it clears passes (exit 0).
        first_config = stub_judged(tmp_path / "first.yaml", judge.base_url, rows=ROWS, max_tokens=16)
        result = run_cli("evaluate", "--config", first_config, "--fail-under", "accuracy=2.5")
        assert result.exit_code == 0, result.output[-3000:]
        assert "Gates passed: accuracy=2.5" in result.stdout
        first = json_report(result.stdout)["run"]

        # 2. The same answers judged again (another judge name), four of them accuracy 1: against the first run
        # by name, accuracy regressed on those rows and only there; exit 3 with one line per regressed metric.
        low = {"accuracy": {"analysis": "Wrong.", "score": 1}, "style": VERDICT["style"]}
        judge.state.verdict_when = [(instruction, low) for instruction in worse.values()]
        second_config = stub_judged(tmp_path / "second.yaml", judge.base_url, rows=ROWS, max_tokens=16,
                                    judge_model="stub-judge-strict")
        result = run_cli("evaluate", "--config", second_config, "--compare-to", first, "--fail-on-regression")
        assert result.exit_code == GATE_FAILED_EXIT_CODE, result.output[-3000:]
        (gate_line,) = [line for line in result.stderr.splitlines() if line.startswith("GATE FAILED")]
        # (accuracy_expected is not compared: the stub's verdicts carry no logprobs)
        assert gate_line.startswith("GATE FAILED regression: smollm2-135m accuracy -1.333")
        assert f"against run {first}" in gate_line
        report = json_report(result.stdout)
        second = report["run"]
        metrics = {(m["model_id"], m["metric"]): m for m in report["comparison"]["metrics"]}
        accuracy, style = metrics[("smollm2-135m", "accuracy")], metrics[("smollm2-135m", "style")]
        assert accuracy["paired_rows"] == style["paired_rows"] == ROWS
        assert (accuracy["previous_mean"], style["difference"]) == (3.0, 0.0)
        assert accuracy["ci"][1] < 0 and style["ci"] == [0.0, 0.0]
        changed = report["comparison"]["changed_rows"]
        assert sorted(row["id"] for row in changed) == sorted(worse)
        assert all(row["current_scores"]["accuracy"] == 1 and not row["answer_changed"] for row in changed)
        page = report_path(result.stdout, "HTML").read_text()
        assert f"Against run {first}" in page and all(f"<td>{row_id}</td>" in page for row_id in worse)

        # 3. The rescore of those answers against the previous run (the second): nothing regressed, but the
        # threshold of step 1 now fails; exit 3 with that one reason.
        result = run_cli("rescore", "--config", second_config, "--compare-to", "previous", "--fail-on-regression",
                         "--fail-under", "accuracy=2.5")
        assert f"Re-scoring 1 stored artifact(s) of run {second}" in result.stdout, result.output[-3000:]
        assert result.exit_code == GATE_FAILED_EXIT_CODE, result.output[-3000:]
        (gate_line,) = [line for line in result.stderr.splitlines() if line.startswith("GATE FAILED")]
        assert gate_line.startswith("GATE FAILED accuracy=2.5: smollm2-135m has accuracy")
        assert json_report(result.stdout)["comparison"]["previous_run"] == second

        # 4. Two rows' verdicts do not parse (2 of 6 rows failed, 33%): over a 20% ceiling the run exits 3 naming
        # the model and the count. (Under a ceiling it clears, the gate passes: tests/unit/test_gates.py.)
        judge.state.verdict_when = [(instruction, {"verdict": "unreadable"}) for instruction in list(worse.values())[:2]]
        result = run_cli("rescore", "--config", second_config, "--no-cache", "--max-failed-rate", "0.2")
        assert f"Re-scoring 1 stored artifact(s) of run {second}" in result.stdout  # rescoring runs generate nothing
        assert result.exit_code == GATE_FAILED_EXIT_CODE, result.output[-3000:]
        (gate_line,) = [line for line in result.stderr.splitlines() if line.startswith("GATE FAILED")]
        assert gate_line.startswith("GATE FAILED max-failed-rate=0.2: smollm2-135m has 2 of 6 rows without a valid verdict")
