"""A custom rubric file, end to end through the CLI, with the real bundled model as generator and judge."""


import pytest
import yaml

from llm_engineering.evaluation import columns as col
from llm_engineering.infrastructure.zenml_runs import step_output
from tests.support.cli_output import report_path, reported_run
from tests.support.judges import assert_read_at_the_score

pytestmark = pytest.mark.slow

RUBRIC = {
    "name": "tutor",
    "system_prompt": "You are a strict teacher grading short answers. Reply with JSON only.",
    "score_first": True,
    "criteria": [
        {"name": "clarity", "description": "is the answer easy to follow?",
         "scale": {1: "confusing", 2: "mostly clear", 3: "clear", 4: "crystal clear"}},
        {"name": "focus", "description": "does the answer stay on the question?",
         "scale": {0: "off topic", 1: "partly on topic", 2: "on topic"}},
    ],
}


def test_a_custom_rubric_file_scores_through_the_cli_with_expected_scores_from_real_logprobs(run_cli, tmp_path):
    rubric = tmp_path / "tutor.yaml"
    rubric.write_text(yaml.safe_dump(RUBRIC, sort_keys=False))
    config = tmp_path / "run.yaml"
    config.write_text(yaml.safe_dump({"parameters": {
        "sampling": {"max_tokens": 32},
        "judge": {"model": "smollm2-135m", "rubric": str(rubric), "max_tokens": 200, "max_analysis_chars": 80},
        # The card's criterion and its ties broken by expected scores are read here: its mismatch tier is enough.
        "judge_check": {"rows": 3, "tiers": ["mismatch"]},
    }}))
    command = ["evaluate", "--config", config, "--limit", "3"]
    # CI gates: clarity tops out at 4, so 4.5 cannot be met; focus starts at 0, so 0 always is.
    result = run_cli(*command, "--fail-under", "clarity=4.5", "--fail-under", "focus=0")
    run, report = reported_run(result, exit_code=3)  # the run passed and is stored; a gate failed
    gate_lines = [line for line in result.stderr.splitlines() if line.startswith("GATE FAILED")]
    assert len(gate_lines) == 1 and gate_lines[0].startswith("GATE FAILED clarity=4.5: smollm2-135m has clarity ")
    assert "rubric tutor" in result.stdout and "clarity (95% CI)" in result.stdout
    assert report["rubric"] == "tutor" and report["criteria"] == ["clarity", "focus"]
    page = report_path(result.stdout, "HTML").read_text(encoding="utf-8")
    # The standalone page: this run's rubric and criteria, its plots embedded, nothing fetched from a network.
    assert "tutor" in page and "clarity" in page and "data:image/png;base64," in page
    assert not any(f"{attr}={quote}http" in page for attr in ("src", "href") for quote in "'\"")

    # The same run again (every step cached) with a gate it meets: exit 0.
    again = run_cli(*command, "--fail-under", "focus=0")
    assert again.exit_code == 0 and "Gates passed: focus=0" in again.stdout, again.output[-3000:]

    evaluations = step_output(run, "evaluate_answers", col.EVALUATIONS)
    assert {col.score("clarity"), col.analysis("focus"), col.expected("focus"), col.probabilities("clarity")} <= set(
        evaluations.column_names)
    assert col.score("accuracy") not in evaluations.column_names
    valid = [row for row in evaluations if row[col.JUDGE_ERROR] is None]
    assert valid, evaluations[col.JUDGE_RAW]
    for row in valid:
        assert row[col.score("clarity")] in {1, 2, 3, 4} and row[col.score("focus")] in {0, 1, 2}
        assert row[col.EXPECTED_PROBLEM] is None, row[col.EXPECTED_PROBLEM]
        for name, values in (("clarity", [1, 2, 3, 4]), ("focus", [0, 1, 2])):
            assert_read_at_the_score(row, name, values)  # from the judge's logprobs at the score token
    (model,) = report["models"]
    clarity = next(c for c in model["criteria"] if c["name"] == "clarity")
    assert clarity["expected_rows"] == len(valid) and clarity["expected_mean"] is not None
    assert report["judge_check"]["criterion"] == "clarity"
    assert report["judge_check"]["reference_higher_tie_broken"] is not None
