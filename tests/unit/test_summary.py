import json
from pathlib import Path

import pytest
from datasets import Dataset

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.judging.judge import Judge
from llm_engineering.evaluation.judging.rubric import load_rubric
from llm_engineering.evaluation.report.html import render_html
from llm_engineering.evaluation.report.score_tables import OPERATIONS_HEADER, operations_rows, table_rows
from llm_engineering.evaluation.report.summary import SummaryInputs, build_summary, model_scores
from llm_engineering.evaluation.stored.generation import GenerationStats
from llm_engineering.evaluation.stored.summary import EvaluationSummary

CASES = json.loads((Path(__file__).parent / "cases" / "aggregation.json").read_text())


def evaluations(model_id, rows, finish="stop"):
    return Dataset.from_dict(
        {
            col.ID: [str(i) for i in range(len(rows))],
            col.MODEL_ID: [model_id] * len(rows),
            col.score("accuracy"): [r[0] for r in rows],
            col.score("style"): [r[1] for r in rows],
            col.analysis("accuracy"): ["a"] * len(rows),
            col.analysis("style"): ["s"] * len(rows),
            col.ANSWER: ["x" * (i + 1) for i in range(len(rows))],
            col.JUDGE_ERROR: [r[2] for r in rows],
            col.JUDGE_MODEL: ["judge"] * len(rows),
            col.COMPLETION_TOKENS: [10] * len(rows),
            col.FINISH_REASON: [finish] * len(rows),
        }
    )


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_model_scores_cases(case):
    scores = model_scores(evaluations("m", case["rows"]), rubric=load_rubric("handbook"))
    assert scores.rows == len(case["rows"])
    assert (scores.scored, scores.failed) == (case["scored"], case["failed"])
    assert scores.criterion("accuracy").mean == case["accuracy_mean"]
    assert scores.criterion("style").mean == case["style_mean"]
    assert scores.criterion("accuracy").counts == case["accuracy_counts"]
    assert scores.failure_rate == pytest.approx(case["failed"] / len(case["rows"]))


def test_a_run_whose_answers_all_came_from_the_checkpoint_shows_no_throughput_rather_than_zero():
    resumed = evaluations("resumed", [[3, 1, None], [2, 1, None]])
    stats = [GenerationStats(model_id="resumed", rows=2, skipped=0, prompt_tokens=5, completion_tokens=20, seconds=0.01,
                             tokens_per_second=0.0, prompts_per_second=0.0, resumed=2, generated=0)]
    summary = build_summary(SummaryInputs([resumed], stats=stats))
    assert summary.models[0].tokens_per_second is None
    assert operations_rows(summary)[0][OPERATIONS_HEADER.index("output\ntok/s")] == "n/a"


def test_summary_ranks_models_and_attaches_throughput():
    weak = evaluations("weak", [[1, 3, None], [1, 3, None]])
    strong = evaluations("strong", [[3, 1, None], [2, 1, None]], finish="length")
    stats = [GenerationStats(model_id="strong", rows=2, skipped=0, prompt_tokens=5, completion_tokens=20,
                             seconds=2.0, tokens_per_second=10.0, prompts_per_second=1.0)]
    summary = build_summary(SummaryInputs([weak, strong], stats=stats))
    assert summary.ranking == ["strong", "weak"]
    by_id = {s.model_id: s for s in summary.models}
    assert by_id["strong"].tokens_per_second == 10.0 and by_id["weak"].tokens_per_second is None
    assert by_id["strong"].truncated == 2
    assert [row[0] for row in table_rows(summary)] == ["strong", "weak"]
    cut = {row[0]: row[OPERATIONS_HEADER.index("cut by\nmax_tokens")] for row in operations_rows(summary)}
    assert cut == {"strong": "2/2", "weak": "0/2"}  # the share of answers max_tokens cut, in the table
    page = render_html(summary)
    assert "strong" in page and "weak" in page and "<table>" in page


def test_model_scores_rejects_mixed_models():
    mixed = Dataset.from_dict({**evaluations("a", [[1, 1, None]]).to_dict(), col.MODEL_ID: ["b"]})
    both = Dataset.from_list(evaluations("a", [[1, 1, None]]).to_list() + mixed.to_list())
    with pytest.raises(ValueError, match="exactly one model"):
        model_scores(both)


def test_bootstrap_interval_brackets_the_mean_and_needs_two_values():
    from llm_engineering.evaluation.rates import bootstrap_ci

    low, high = bootstrap_ci([1, 2, 3, 3, 2, 1, 2, 3])
    assert low <= 2.125 <= high and 1 <= low < high <= 3
    assert bootstrap_ci([2, 2, 2]) == [2.0, 2.0]
    assert bootstrap_ci([3]) is None
    assert bootstrap_ci([1, 3, 2, 2]) == bootstrap_ci([1, 3, 2, 2])  # seeded: reproducible


def test_model_comparison_is_paired_on_rows_both_scored():
    from llm_engineering.evaluation.report.summary import compare_models

    base = evaluations("base", [[1, 1, None], [2, 2, None], [1, 1, None], [2, 2, None]])
    tuned = evaluations("tuned", [[3, 1, None], [3, 2, None], [None, None, "invalid JSON"], [3, 3, None]])
    comparison = compare_models(tuned, base, "accuracy")
    assert (comparison.model_a, comparison.model_b, comparison.paired_rows) == ("tuned", "base", 3)
    assert comparison.difference == pytest.approx((2 + 1 + 1) / 3, abs=1e-4)
    assert comparison.ci[0] > 0  # every paired row improved


def test_summary_compares_each_model_with_the_first_and_renders_a_plot():
    import base64

    summary = build_summary(SummaryInputs([evaluations("a", [[1, 1, None], [2, 1, None]]),
                                           evaluations("b", [[3, 3, None], [3, 2, None]])]))
    assert [(c.model_a, c.model_b, c.criterion) for c in summary.comparisons] == [("b", "a", "accuracy"), ("b", "a", "style")]
    page = render_html(summary)
    png = page.split("data:image/png;base64,")[1].split("'")[0]
    assert base64.b64decode(png).startswith(b"\x89PNG")


def test_judge_usage_counts_fresh_calls_and_prices_known_models():
    from llm_engineering.evaluation.config import JudgeConfig
    from llm_engineering.evaluation.judging.prices import judge_prices
    from llm_engineering.evaluation.report.summary import judge_usage

    rows = [
        {col.JUDGE_RAW: "{}", col.JUDGE_CACHED: False, col.JUDGE_PROMPT_TOKENS: 1000, col.JUDGE_COMPLETION_TOKENS: 100},
        {col.JUDGE_RAW: "{}", col.JUDGE_CACHED: True, col.JUDGE_PROMPT_TOKENS: 1000, col.JUDGE_COMPLETION_TOKENS: 100},
        {col.JUDGE_RAW: None, col.JUDGE_CACHED: False, col.JUDGE_PROMPT_TOKENS: 0, col.JUDGE_COMPLETION_TOKENS: 0},
    ]
    prices = judge_prices(JudgeConfig(backend="openai", model="gpt-4o-mini"))
    usage = judge_usage(rows, prices)
    assert (usage.calls, usage.cached, usage.prompt_tokens, usage.completion_tokens) == (1, 1, 1000, 100)
    assert usage.estimated_cost_usd == pytest.approx((1000 * 0.15 + 100 * 0.60) / 1e6)
    assert judge_prices(JudgeConfig()) is None  # a local judge costs nothing per token
    assert judge_prices(JudgeConfig(backend="openai", model="x", base_url="http://h/v1",
                                    price_per_million_input=1.0)) == (1.0, 0.0)



def test_batch_judges_are_priced_at_half_the_list_price_unless_the_config_says_otherwise():
    from llm_engineering.evaluation.config import JudgeConfig
    from llm_engineering.evaluation.judging.prices import judge_prices
    from llm_engineering.evaluation.report.summary import judge_usage

    rows = [{col.JUDGE_RAW: "{}", col.JUDGE_CACHED: False, col.JUDGE_PROMPT_TOKENS: 1_000_000,
             col.JUDGE_COMPLETION_TOKENS: 1_000_000}]
    online = judge_usage(rows, judge_prices(JudgeConfig(backend="openai", model="gpt-4o-mini")))
    batch = judge_usage(rows, judge_prices(JudgeConfig(backend="openai-batch", model="gpt-4o-mini")))
    assert (online.estimated_cost_usd, batch.estimated_cost_usd) == (0.75, 0.375)
    assert judge_prices(JudgeConfig(backend="openai-batch", model="gpt-4o-mini", price_per_million_input=0.1,
                                    price_per_million_output=0.2)) == (0.1, 0.2)  # the prices actually paid
    assert judge_prices(JudgeConfig(backend="openai-batch", model="x", base_url="http://h/v1")) is None
    assert judge_prices(JudgeConfig(backend="openai-batch", model="not-a-known-model")) is None

def test_a_summary_stored_before_rubrics_loads_with_its_scores_as_criteria():
    from llm_engineering.evaluation.stored.summary import ModelScores

    stored = {"model_id": "m", "rows": 2, "scored": 2, "failed": 0, "failure_rate": 0.0, "accuracy_mean": 2.5,
              "style_mean": 1.5, "accuracy_ci": [2.0, 3.0], "style_ci": None, "accuracy_counts": {"1": 0, "2": 1, "3": 1},
              "style_counts": {"1": 1, "2": 1, "3": 0}, "mean_completion_tokens": 10.0, "truncated": 0,
              "judge_usage": {"calls": 2, "cached": 0, "prompt_tokens": 5, "completion_tokens": 5}}
    scores = ModelScores.model_validate(stored)
    assert [c.name for c in scores.criteria] == ["accuracy", "style"]
    assert (scores.criterion("accuracy").mean, scores.criterion("accuracy").ci) == (2.5, [2.0, 3.0])
    assert scores.criterion("style").counts == {"1": 1, "2": 1, "3": 0}


def test_the_judges_seconds_per_verdict_are_its_wall_time_over_new_calls_and_unknown_for_old_rows(tmp_path, monkeypatch):
    from llm_engineering.evaluation.judging import transport as judge_transport
    from llm_engineering.evaluation.judging.cache import JudgeCache
    from llm_engineering.evaluation.judging.scoring import score_answers
    from tests.unit.test_trust_checks import KeyedJudge, verdict

    rows = Dataset.from_dict({col.ID: ["a", "b", "c"], col.MODEL_ID: ["m"] * 3, col.INSTRUCTION: ["q1", "q2", "q3"],
                              col.ANSWER: ["x", "y", "z"]})
    handbook = load_rubric("handbook")
    cache = JudgeCache(tmp_path / "cache")
    score_answers(rows.select([0]), Judge((KeyedJudge(lambda prompt: verdict(2)),), handbook, cache))  # row a: cached next
    clock = iter([100.0, 106.0])  # the judge's call starts at 100 s and ends at 106 s
    monkeypatch.setattr(judge_transport.time, "perf_counter", lambda: next(clock))
    scored = score_answers(rows, Judge((KeyedJudge(lambda prompt: verdict(3)),), handbook, cache))
    assert scored[col.JUDGE_CACHED] == [True, False, False]
    assert scored[col.JUDGE_SECONDS] == [0.0, 3.0, 3.0]  # the 6 s are the two new verdicts'; a cached one costs none
    usage = model_scores(scored, rubric=handbook).judge_usage
    assert (usage.calls, usage.seconds, usage.seconds_per_verdict) == (2, 6.0, 3.0)
    assert "3.00" in operations_rows(build_summary(SummaryInputs([scored], rubric=handbook)))[0]
    # Rows scored before the judge's time was recorded: unknown, not zero.
    old = model_scores(scored.remove_columns(col.JUDGE_SECONDS), rubric=handbook).judge_usage
    assert (old.calls, old.seconds, old.seconds_per_verdict) == (2, None, None)


def test_bootstrap_of_integer_scores_by_value_counts_matches_resampling_rows():
    from llm_engineering.evaluation.rates import bootstrap_ci

    scores = [1] * 40 + [2] * 70 + [3] * 90  # three distinct values: resampled as counts
    jittered = [s + 1e-9 * i for i, s in enumerate(scores)]  # 200 distinct values: resampled row by row
    by_counts, by_rows = bootstrap_ci(scores), bootstrap_ci(jittered)
    assert by_counts != by_rows  # the two ways really ran
    # The same distribution of resampled means: intervals agree to Monte Carlo error (about 0.01 here).
    assert by_counts[0] == pytest.approx(by_rows[0], abs=0.03) and by_counts[1] == pytest.approx(by_rows[1], abs=0.03)
    assert by_counts[0] < 2.25 < by_counts[1]  # the mean, 2.25, inside


def test_a_report_of_a_summary_stored_without_run_and_scales_can_still_be_labelled(tmp_path):
    from llm_engineering.run_report import write_reports

    stored = build_summary(SummaryInputs([evaluations("a", [[1, 1, None]])], rubric=load_rubric("handbook"))).model_copy(
        update={"run": "", "scales": {}})  # as summaries were stored before they named their run and scales
    assert "Labelling needs a summary" in render_html(stored)
    _, page = write_reports(stored, "evaluating-old", tmp_path)
    data = json.loads(page.read_text().split("id='label-data'>")[1].split("</script>")[0])
    assert (data["run"], data["rubric"]) == ("evaluating-old", "handbook")
    assert data["scales"]["accuracy"]["1"].startswith("Poor")
    assert data["answers"] == {"0": {"a": "x"}}


def test_a_summary_names_its_judges_and_one_stored_before_the_list_reads_them_from_its_judge_or_jury():
    summary = build_summary(SummaryInputs([evaluations("a", [[1, 1, None]])]))
    assert summary.judges == [summary.judge_model] and summary.jury == []
    older = summary.model_dump(exclude={"judges"})
    assert EvaluationSummary.model_validate(older).judges == [summary.judge_model]
    jury = ["vllm:a", "openai:b@http://127.0.0.1:9/v1"]
    assert EvaluationSummary.model_validate({**older, "judge_model": "jury: x", "jury": jury}).judges == jury


def test_the_power_line_says_what_change_the_rows_can_detect_and_four_times_the_rows_halve_it():
    from llm_engineering.evaluation.report.text import power_lines

    few = build_summary(SummaryInputs([evaluations("m", [[1, 3, None], [3, 1, None]] * 5)])).models[0].criterion("accuracy")
    many = build_summary(SummaryInputs([evaluations("m", [[1, 3, None], [3, 1, None]] * 20)])).models[0].criterion("accuracy")
    assert many.detectable == pytest.approx(few.detectable / 2, rel=0.05)
    assert many.rows_for_tenth == pytest.approx(few.rows_for_tenth, rel=0.1)  # the spread, not the rows, sets it
    assert few.detectable > 1  # ten rows of 1s and 3s: only a change over a point shows
    (line,) = power_lines(build_summary(SummaryInputs([evaluations("m", [[1, 3, None], [3, 1, None]] * 20)])))
    assert line.startswith(f"Power of m (40 scored rows): a paired comparison with another run detects a change of at "
                           f"least accuracy {many.detectable:.2f}")
    assert f"a change of 0.1 needs about accuracy {many.rows_for_tenth}" in line


def test_scores_that_do_not_vary_have_no_detectable_change_and_the_power_line_says_why():
    from llm_engineering.evaluation.report.text import power_lines

    summary = build_summary(SummaryInputs([evaluations("m", [[1, 1, None], [1, 2, None]] * 5)]))  # accuracy 1 on every row
    accuracy, style = summary.models[0].criteria
    assert (accuracy.detectable, accuracy.rows_for_tenth) == (None, None) and style.detectable > 0
    (line,) = power_lines(summary)
    assert line.endswith("; accuracy: every scored row has the same score, no spread to size a test by")


def test_a_report_names_the_run_reported_even_when_its_summary_was_made_by_an_earlier_run(tmp_path):
    from llm_engineering.run_report import write_reports

    cached = build_summary(SummaryInputs([evaluations("a", [[1, 1, None]])], run="evaluating-first"))  # a cached summarize step's
    json_path, html_path = write_reports(cached, "evaluating-second", tmp_path)
    assert json.loads(json_path.read_text())["run"] == "evaluating-second"
    assert json.loads(html_path.read_text().split("id='label-data'>")[1].split("</script>")[0])["run"] == "evaluating-second"
