"""The judge-free scores in a summary, on hand-made evaluations: each metric's mean over the rows it covers, the
checks' pass rates, every score per category, models compared on them, gates (per category too), run comparisons,
the console's table at 120 columns and the row browser's failed checks."""

import json

import pytest
from datasets import Dataset
from rich.console import Console

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.judging.rubric import load_rubric
from llm_engineering.evaluation.metrics.check_rows import read_checks
from llm_engineering.evaluation.metrics.measure import CHECK_FEATURES, check_verdicts
from llm_engineering.evaluation.report import measures_text
from llm_engineering.evaluation.report.comparison import compare_runs
from llm_engineering.evaluation.report.gates import failed_gates, parse_gate
from llm_engineering.evaluation.report.html import render_html
from llm_engineering.evaluation.report.score_tables import table_header, table_rows
from llm_engineering.evaluation.report.summary import SummaryInputs, build_summary
from llm_engineering.evaluation.stored.summary import EvaluationSummary
from llm_engineering.run_report import table

CHECKS = read_checks([{"type": "contains", "value": "GPU"}, {"type": "max_words", "value": 3}])


def evaluations(model, rows):
    """`rows`: (category, accuracy, token_f1 or None: no reference, answer); style 2; the two `CHECKS` on each."""
    verdicts = [check_verdicts(CHECKS, answer) for *_, answer in rows]
    data = {
        col.ID: [str(i) for i in range(len(rows))], col.MODEL_ID: [model] * len(rows),
        col.CATEGORY: [c for c, *_ in rows], col.score("accuracy"): [a for _, a, *_ in rows],
        col.score("style"): [2] * len(rows), col.JUDGE_ERROR: [None] * len(rows), col.JUDGE_MODEL: ["judge"] * len(rows),
        col.ANSWER: [answer for *_, answer in rows], col.metric("token_f1"): [f for _, _, f, _ in rows],
        col.CHECK_SHARE: [sum(v["passed"] for v in r) / len(r) for r in verdicts],
        col.CHECKS_PASSED: [all(v["passed"] for v in r) for r in verdicts], col.CHECK_RESULTS: verdicts,
    }
    return Dataset.from_dict(data).cast_column(col.CHECK_RESULTS, CHECK_FEATURES[col.CHECK_RESULTS])


# "a": coding rows score 3 and pass both checks; the prose row scores 1, has no reference and writes too much.
A = evaluations("a", [("coding", 3, 0.5, "a GPU"), ("coding", 3, 0.7, "the GPU"), ("prose", 1, None, "far too many words")])
B = evaluations("b", [("coding", 2, 0.3, "a GPU"), ("coding", 1, 0.1, "a CPU"), ("prose", 2, None, "on a GPU")])


def summary():
    return build_summary(SummaryInputs([A, B], rubric=load_rubric("handbook")))


def test_a_metric_is_averaged_over_the_rows_it_covers_and_says_how_many():
    a = next(m for m in summary().models if m.model_id == "a")
    f1 = a.metric("token_f1")
    assert (f1.mean, f1.rows, f1.answers) == (0.6, 2, 3)  # the prose row has no reference: not a 0
    assert summary().metrics == ["token_f1"]


def test_the_checks_pass_rates_count_answers_that_pass_every_check_each_check_and_each_type():
    a, b = summary().models
    assert (a.checks.passed.count, a.checks.passed.total) == (2, 3)
    assert (a.checks.items.count, a.checks.items.total) == (4, 6)  # the prose row fails both of its checks
    assert {kind: (r.count, r.total) for kind, r in b.checks.by_type.items()} == {"contains": (2, 3), "max_words": (3, 3)}
    assert a.checks.passed.ci is not None and a.checks.passed.ci[0] < 2 / 3 < a.checks.passed.ci[1]


def test_every_score_is_split_per_category_with_counts():
    a = summary().models[0]
    coding, prose = a.categories
    assert (coding.category, coding.rows, coding.scored, prose.category) == ("coding", 2, 2, "prose")
    assert coding.criteria[0].name == "accuracy" and coding.criteria[0].mean == 3.0 and prose.criteria[0].mean == 1.0
    assert coding.metrics[0].mean == 0.6 and prose.metrics[0].rows == 0 and prose.metrics[0].mean is None
    assert coding.checks.passed.rate == 1.0 and prose.checks.passed.rate == 0.0
    assert summary().categories == ["coding", "prose"]


def test_models_are_compared_on_each_metric_and_on_the_checks_paired_on_rows():
    by_name = {c.criterion: c for c in summary().metric_comparisons}
    assert (by_name["token_f1"].model_a, by_name["token_f1"].model_b) == ("b", "a")
    assert by_name["token_f1"].paired_rows == 2 and by_name["token_f1"].difference == pytest.approx(-0.4)
    assert by_name["checks"].paired_rows == 3 and by_name["checks"].difference == pytest.approx(0.0)  # 1,0,1 vs 1,1,0


@pytest.mark.parametrize("gate, failing", [
    ("token_f1=0.5", ["b has token_f1 0.2, under 0.5"]),
    ("checks=0.99", ["a has checks 0.667, under 0.99", "b has checks 0.667, under 0.99"]),
    ("accuracy=2.0@coding", ["b on coding has accuracy 1.5, under 2"]),
    ("checks=1@coding", ["b on coding has checks 0.5, under 1"]),
    ("check_items=0.5", []),
])
def test_gates_hold_metrics_checks_and_a_category_to_a_threshold(gate, failing):
    failures = failed_gates(summary(), [parse_gate(gate)])
    assert [line.split(": ", 1)[1] for line in failures] == failing


def test_a_gate_on_what_the_run_did_not_measure_or_an_unknown_category_fails_saying_why():
    (rouge,) = [line for line in failed_gates(summary(), [parse_gate("rouge_l=0.1")]) if "a has" in line]
    assert "add rouge_l to the config's metrics (or --metric rouge_l)" in rouge
    (missing,) = failed_gates(summary(), [parse_gate("accuracy=2@math")])
    assert "no category 'math' (it has: coding, prose)" in missing
    plain = build_summary(SummaryInputs([A.remove_columns([col.CHECK_SHARE, col.CHECKS_PASSED, col.CHECK_RESULTS])]))
    assert "no answer has a check" in failed_gates(plain, [parse_gate("checks=0.5")])[0]


def test_a_run_comparison_tests_the_metrics_and_the_checks_too():
    worse = evaluations("a", [("coding", 3, 0.1, "a CPU"), ("coding", 3, 0.2, "the CPU"), ("prose", 1, None, "a GPU")])
    changes = {m.metric: m for m in compare_runs([worse], [A], ["accuracy"], "run-1").metrics}
    assert changes["token_f1"].difference == pytest.approx(-0.45) and changes["token_f1"].paired_rows == 2
    assert (changes["checks"].current_mean, changes["checks"].previous_mean) == (0.3333, 0.6667)  # 4 decimals


def test_the_console_table_leads_with_the_models_and_fits_120_columns_without_breaking_a_figure():
    wide = evaluations("SmolLM2-135M-Instruct", [("coding", 3, 0.5, "a GPU"), ("prose", 2, 0.25, "GPU GPU GPU GPU")])
    wide = wide.add_column(col.metric("reference_words"), [0.75, 0.5]).add_column(col.expected("accuracy"), [2.9, 2.1])
    header, rows = table_header(build_summary(SummaryInputs([wide]))), table_rows(build_summary(SummaryInputs([wide])))
    assert header == ["model", "accuracy (95% CI)", "style (95% CI)", "token_f1\n(95% CI)", "reference_words\n(95% CI)",
                      "checks passed\n(95% CI)"]
    console = Console(width=120, record=True)
    console.print(table("Evaluation summary", header, rows))
    lines = console.export_text().splitlines()
    assert max(map(len, lines)) <= 120
    for figure in (part for row in [header, *rows] for cell in row for part in cell.splitlines()):
        assert any(figure in line for line in lines), figure  # every figure on one line: nothing wrapped


def test_the_tables_and_the_row_browser_show_metrics_checks_and_a_failed_checks_reason():
    result = summary()
    labels = [row[0] for row in measures_text.metrics_rows(result)]
    assert labels == ["token_f1", "checks: every check of an answer", "checks: each check", "check: contains",
                      "check: max_words"]
    assert [row[0] for row in measures_text.categories_rows(result)] == ["coding\na", "coding\nb", "prose\na", "prose\nb"]
    page = render_html(result)
    assert "failed check max_words 3: 4 words, more than 3" in page and "token_f1 0.50" in page
    assert "Per category" in page and "alt='scores by category'" in page


def test_a_summary_stored_before_metrics_loads_with_none_of_them():
    stored = json.loads(build_summary(SummaryInputs([A])).model_dump_json())
    for model in stored["models"]:
        for key in ("metrics", "checks", "categories"):
            model.pop(key)
    for key in ("metrics", "metric_comparisons", "categories"):
        stored.pop(key)
    old = EvaluationSummary.model_validate(stored)
    assert old.metrics == [] and old.models[0].checks is None and measures_text.metrics_rows(old) == []


def test_the_dataset_card_gives_each_metrics_mean_and_the_checks_pass_rates_of_the_summary():
    from llm_engineering.evaluation.report.results_card import score_facts, scores_of

    info = score_facts(scores_of(summary(), "a"), "vllm:judge")
    assert info["metrics without a judge"] == "token_f1 0.6 (95% CI [0.5, 0.7]; 2 of 3 rows)"
    assert info["checks"].startswith("answers passing every check 2/3 (67%") and "checks passed 4/6 (67%" in info["checks"]
