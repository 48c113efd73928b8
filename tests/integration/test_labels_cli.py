"""Agreement with labels, and escalation, end to end through the CLI, with the real bundled model as generator and
first judge (in process, with logprobs) and the OpenAI-compatible stand-in on 127.0.0.1 as the second judge: one run
proves both (the labels measure the first judge; escalation changes the run's verdicts, not the labels' check)."""

import json

import pytest
import yaml

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.config import DatasetConfig
from llm_engineering.evaluation.generation.dataset import read_test_split
from llm_engineering.evaluation.trust import tiers
from llm_engineering.infrastructure.zenml_runs import step_output
from tests.support.cli_output import reported_run
from tests.support.openai_stub import VERDICT, OpenAIStub

pytestmark = pytest.mark.slow
ROWS = 3
THRESHOLD = 0.999  # the small judge is rarely that sure: most rows go on


def constructed_labels() -> list[dict]:
    """Constructed labels, not human ones (`check_tiers.constructed_labels`) on the embedded split's first rows."""
    rows = read_test_split(DatasetConfig(limit=ROWS))
    return tiers.constructed_labels(rows[col.ID], rows[col.REFERENCE], "accuracy")


def test_labels_given_to_evaluate_are_judged_and_their_agreement_reported_and_unsure_rows_escalated(run_cli, tmp_path):
    labels = tmp_path / "labels.jsonl"
    labels.write_text("".join(json.dumps(label) + "\n" for label in constructed_labels()))
    config = tmp_path / "run.yaml"
    with OpenAIStub() as second:
        second.state.script = ["500"]  # the first escalated row fails (one try: max_attempts 1)
        config.write_text(yaml.safe_dump({"parameters": {
            "sampling": {"max_tokens": 24},
            "judge": {"model": "smollm2-135m", "max_tokens": 200, "escalate_below": THRESHOLD, "escalate_to": {
                "backend": "openai", "model": "stub-judge", "cache": False,
                "endpoint": {"base_url": second.base_url, "max_attempts": 1, "max_concurrency": 1}}},
            "judge_check": {"rows": 0}, "similarity": {"enabled": False},  # read nowhere here
        }}))
        result = run_cli("evaluate", "--config", config, "--limit", ROWS, "--labels", labels)
        asked = len(second.state.requests)
    run, report = reported_run(result)
    _assert_escalated(run, report, asked, result.stdout)

    agreement = report["labels"]
    labelled = 3 * ROWS  # a right, a half-right and a wrong answer per row
    assert (agreement["kind"], agreement["rows"], agreement["rubric"]) == ("pointwise", labelled, "task-accuracy")
    # Nine distinct answers (no answer is labelled twice under one id): nine verdicts, none from an earlier run, each
    # with its scores asked again before any analysis (the default rubric's expected scores).
    assert agreement["judge_calls"] == 2 * labelled and agreement["judge_tokens"] > 0
    (accuracy,) = agreement["criteria"]
    assert (accuracy["criterion"], accuracy["rows"], accuracy["scale"]) == ("accuracy", labelled, [1, 2, 3])
    details = agreement["details"]
    assert [d["human"] for d in details] == [3, 2, 1] * ROWS
    assert any(d["error"] is None for d in details), details
    # Each score is given three times: the majority rule gives every answer the lowest, 1, and is right on 3 of 9.
    assert (accuracy["majority"]["exact"], accuracy["majority"]["kappa"]) == (0.3333, 0.0)
    assert [accuracy[rater]["rows"] for rater in ("judge", "majority", "length")] == [labelled] * 3
    assert accuracy["length"]["failed"] == 0 and accuracy["length"]["exact_ci"] is not None
    # The in-process judge returns logprobs: its expected scores, rounded, are compared too.
    assert accuracy["expected_problem"] is None and accuracy["judge_expected"] is not None
    assert accuracy["verdict"].startswith("valid on these labels" if accuracy["valid"] else "not shown valid")

    # The CLI says it in words; the run's own artifact and metadata hold the same report.
    assert f"  accuracy ({labelled} labels): {accuracy['verdict']}" in result.stdout
    assert step_output(run, "check_labels", col.LABEL_AGREEMENT).model_dump() == agreement
    assert run.steps["check_labels"].run_metadata["label_agreement"]["criteria"]["accuracy"]["verdict"] == accuracy["verdict"]


def _assert_escalated(run, report, asked, stdout):
    """Only the rows under the threshold reached the second judge; its verdicts replaced the first's; the one it
    failed kept the first judge's verdict and says why; the summary counts them."""
    rows = step_output(run, "evaluate_answers", col.EVALUATIONS).to_list()
    unsure = [r for r in rows if r[col.CONFIDENCE] is None or r[col.CONFIDENCE] < THRESHOLD]
    assert unsure and asked == len(unsure)  # only those reached the second judge, each once
    assert all(r[col.JUDGE_MODEL] == "vllm:smollm2-135m" and not r[col.ESCALATED] for r in rows if r not in unsure)
    failed = [r for r in unsure if r[col.ESCALATION_ERROR]]
    assert len(failed) == 1 and "500" in failed[0][col.ESCALATION_ERROR], failed
    assert failed[0][col.JUDGE_MODEL] == "vllm:smollm2-135m" and not failed[0][col.ESCALATED]
    answered = [r for r in unsure if not r[col.ESCALATION_ERROR]]
    assert all(r[col.ESCALATED] and r[col.JUDGE_MODEL].startswith("openai:stub-judge@") for r in answered)
    assert all(r[col.score("accuracy")] == VERDICT["accuracy"]["score"] for r in answered)  # the second's verdict
    (model,) = report["models"]
    assert (model["escalated"], model["escalation_failed"]) == (len(answered), 1)
    assert f"Escalation of smollm2-135m: {len(answered)} of {ROWS} rows" in stdout
