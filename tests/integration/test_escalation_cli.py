"""Escalation end to end through the CLI: the real bundled model judges first (in process, with logprobs), the
OpenAI-compatible stand-in on 127.0.0.1 is the second judge; only the rows under the threshold reach it, and the
one it fails keeps the first judge's verdict."""

import pytest
import yaml

from llm_engineering.evaluation import columns as col
from llm_engineering.infrastructure.zenml_runs import step_output
from tests.support.cli_output import json_report
from tests.support.openai_stub import VERDICT, OpenAIStub

pytestmark = pytest.mark.slow
ROWS = 4
THRESHOLD = 0.999  # the small judge is rarely that sure: most rows go on


def test_rows_the_first_judge_is_unsure_of_are_judged_by_the_second_and_a_failure_keeps_the_first(run_cli, tmp_path):
    from zenml.client import Client

    with OpenAIStub() as second:
        second.state.script = ["500"]  # the first escalated row fails (one try: max_attempts 1)
        config = tmp_path / "run.yaml"
        config.write_text(yaml.safe_dump({"parameters": {
            "dataset": {"limit": ROWS}, "sampling": {"max_tokens": 16},
            "judge": {"model": "smollm2-135m", "max_tokens": 200, "escalate_below": THRESHOLD, "escalate_to": {
                "backend": "openai", "model": "stub-judge", "cache": False,
                "endpoint": {"base_url": second.base_url, "max_attempts": 1, "max_concurrency": 1}}},
            "judge_check": {"rows": 0}, "similarity": {"enabled": False},
        }}))
        result = run_cli("evaluate", "--config", config)
        assert result.exit_code == 0, result.output[-3000:]
        report = json_report(result.stdout)
        rows = step_output(Client().get_pipeline_run(report["run"]), "evaluate_answers", col.EVALUATIONS).to_list()
        asked = len(second.state.requests)

    unsure = [r for r in rows if r[col.CONFIDENCE] is None or r[col.CONFIDENCE] < THRESHOLD]
    assert unsure and asked == len(unsure)  # only those reached the second judge, each once
    sure = [r for r in rows if r not in unsure]
    assert all(r[col.JUDGE_MODEL] == "vllm:smollm2-135m" and not r[col.ESCALATED] for r in sure)
    failed = [r for r in unsure if r[col.ESCALATION_ERROR]]
    assert len(failed) == 1 and "500" in failed[0][col.ESCALATION_ERROR], failed
    assert failed[0][col.JUDGE_MODEL] == "vllm:smollm2-135m" and not failed[0][col.ESCALATED]
    answered = [r for r in unsure if not r[col.ESCALATION_ERROR]]
    assert all(r[col.ESCALATED] and r[col.JUDGE_MODEL].startswith("openai:stub-judge@") for r in answered)
    assert all(r[col.score("accuracy")] == VERDICT["accuracy"]["score"] for r in answered)  # the second's verdict
    (model,) = report["models"]
    assert (model["escalated"], model["escalation_failed"]) == (len(answered), 1)
    assert f"Escalation of smollm2-135m: {len(answered)} of {ROWS} rows" in result.stdout
