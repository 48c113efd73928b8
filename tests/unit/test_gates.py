"""CI gates (`--fail-under`) against summaries built from scored rows."""

import pytest

from llm_engineering.evaluation.report.gates import failed_gates, parse_gate
from llm_engineering.evaluation.report.summary import SummaryInputs, build_summary
from tests.unit.test_summary import evaluations

# Model "weak" scores accuracy 1 and 2 (mean 1.5), "strong" 3 and 3; style 1/1 and 3/2.
WEAK = evaluations("weak", [[1, 1, None], [2, 1, None]])
STRONG = evaluations("strong", [[3, 3, None], [3, 2, None]])


def test_a_gate_fails_for_each_model_under_it_and_names_model_value_and_threshold():
    summary = build_summary(SummaryInputs([WEAK, STRONG]))
    (failure,) = failed_gates(summary, [parse_gate("accuracy=2.0")])
    assert failure.startswith("accuracy=2: weak has accuracy 1.5, under 2")
    assert failed_gates(summary, [parse_gate("accuracy=1.5")]) == []  # at the threshold passes
    both = failed_gates(summary, [parse_gate("style=3")])
    assert [line.split(" has ")[0] for line in both] == ["style=3: weak", "style=3: strong"]


def test_gates_on_metrics_the_run_did_not_measure_fail_and_say_why():
    summary = build_summary(SummaryInputs([STRONG]))  # no similarity, no judge check, no logprobs
    failures = failed_gates(summary, [parse_gate(g) for g in ("similarity=0.4", "judge_check=0.7", "accuracy_expected=2")])
    assert len(failures) == 3 and all("not measured" in line for line in failures)
    (unknown,) = failed_gates(summary, [parse_gate("helpfulness=2")])
    assert "no metric 'helpfulness'" in unknown and "accuracy" in unknown and "judge_check" in unknown


@pytest.mark.parametrize("text", ["accuracy", "accuracy>2", "=2", "accuracy=high", "Accuracy=2"])
def test_a_malformed_gate_is_refused_with_the_form_to_write(text):
    with pytest.raises(ValueError, match="METRIC=VALUE, e.g. accuracy=2.0"):
        parse_gate(text)


def test_the_failed_rate_gate_names_each_model_over_it_with_its_count_and_the_fix():
    from llm_engineering.evaluation.report.gates import failed_rate_failures

    half = evaluations("half", [[3, 3, None], [None, None, "no JSON in the reply"]])
    summary = build_summary(SummaryInputs([half, STRONG]))
    (line,) = failed_rate_failures(summary, 0.25)
    assert line.startswith("max-failed-rate=0.25: half has 1 of 2 rows without a valid verdict (50.0%")
    assert "rescore --only-failed" in line
    assert failed_rate_failures(summary, 0.5) == []  # at the threshold passes


def test_the_line_of_passed_gates_names_every_gate_checked_and_there_is_none_without_gates():
    from llm_engineering.run_report import gate_failures

    half = build_summary(SummaryInputs([evaluations("half", [[3, 3, None], [None, None, "no JSON in the reply"]])]))
    assert gate_failures(half, ("accuracy=2.5",), max_failed_rate=0.5) == (
        [], "Gates passed: accuracy=2.5, max-failed-rate=0.5")  # 1 of 2 rows failed: at the ceiling passes
    failures, passed = gate_failures(half, ("accuracy=2.5",), max_failed_rate=0.4)
    assert passed is None and [line.split(":")[0] for line in failures] == ["max-failed-rate=0.4"]
    assert gate_failures(half, ()) == ([], None)
