"""Scores without a judge, end to end through the CLI as a user runs them: a JSONL of references, categories and
checks, answered by the session's engine (the OpenAI-compatible stand-in judges: no judge is measured here); a checks
gate that fails (exit 3); then `rescore` adding a metric the first run did not measure, computed from the stored
answers with no generation and no judge call."""

import json

import pytest

from llm_engineering.evaluation import columns as col
from llm_engineering.infrastructure.zenml_runs import step_output
from tests.support.cli_output import reported_run
from tests.support.configs import stub_judged
from tests.support.openai_stub import OpenAIStub

pytestmark = pytest.mark.slow

ROWS = [
    {"id": "r1", "question": "What does LoRA train?", "answer": "LoRA trains small low-rank adapter matrices.",
     "topic": "fine-tuning", "checks": [{"type": "max_chars", "value": 1}, {"type": "not_contains", "value": "zqxj"}]},
    {"id": "r2", "question": "Name the vector index HNSW builds.", "answer": "A hierarchical navigable small-world graph.",
     "topic": "rag", "checks": [{"type": "min_words", "value": 1}]},
    {"id": "r3", "question": "Say anything about RAG.", "topic": "rag"},  # no reference: no metric, never a 0
]


def test_metrics_checks_and_categories_through_evaluate_a_checks_gate_and_a_rescore_that_adds_a_metric(run_cli,
                                                                                                       tmp_path):
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in ROWS))
    config = tmp_path / "run.yaml"
    with OpenAIStub() as judge:
        # Its verdicts cached: the rescore below asks it nothing. chrf is added by the rescore.
        stub_judged(config, judge.base_url, rows=len(ROWS), max_tokens=24, cache=True, metrics=["token_f1", "exact_match"])
        result = run_cli("evaluate", "--config", config, "--dataset", data, "--column", "reference=answer",
                         "--group-by", "topic", "--fail-under", "checks=0.99")
        run, report = reported_run(result, exit_code=3)  # stored; the checks gate failed (max_chars 1 cannot pass)
        rescored = run_cli("rescore", "--config", config, "--metric", "token_f1", "--metric", "chrf")
        asked = len(judge.state.requests)
    assert asked == len(ROWS)  # each answer judged once, by the first run
    (gate,) = [line for line in result.stderr.splitlines() if line.startswith("GATE FAILED")]
    assert gate.startswith("GATE FAILED checks=0.99: smollm2-135m has checks ")
    assert "Scores without a judge" in result.stdout and "Per category" in result.stdout
    (model,) = report["models"]
    assert [m["name"] for m in model["metrics"]] == ["token_f1", "exact_match"]
    assert all(m["rows"] == 2 and m["answers"] == 3 for m in model["metrics"])  # r3 has no reference
    assert model["checks"]["rows"] == 2 and model["checks"]["passed"]["count"] <= 1  # r1's max_chars 1 cannot pass
    assert [c["category"] for c in model["categories"]] == ["fine-tuning", "rag"] == report["categories"]
    rag = model["categories"][1]
    assert rag["rows"] == 2 and rag["metrics"][0]["rows"] == 1 and rag["checks"]["rows"] == 1

    evaluations = step_output(run, "evaluate_answers", col.EVALUATIONS)
    assert col.metric("chrf") not in evaluations.column_names
    by_id = {row[col.ID]: row for row in evaluations}
    assert by_id["r3"][col.metric("token_f1")] is None and by_id["r3"][col.CHECKS_PASSED] is None
    too_long, absent = by_id["r1"][col.CHECK_RESULTS]
    assert not too_long["passed"] and too_long["reason"].endswith("characters, more than 1"), too_long
    assert absent["passed"] and by_id["r1"][col.CHECKS_PASSED] is False and by_id["r1"][col.CATEGORY] == "fine-tuning"

    again_run, again = reported_run(rescored)
    assert f"Re-scoring 1 stored artifact(s) of run {run.name}" in rescored.stdout
    (model,) = again["models"]
    assert model["judge_usage"]["calls"] == 0 and model["judge_usage"]["cached"] == 3  # every verdict from the cache
    chrf = next(m for m in model["metrics"] if m["name"] == "chrf")
    assert chrf["rows"] == 2 and 0 < chrf["mean"] <= 1
    rescored_rows = step_output(again_run, "evaluate_answers", col.EVALUATIONS)
    assert col.metric("exact_match") not in rescored_rows.column_names  # measured as asked, not kept from before
    assert "generate_answers" not in again_run.steps  # no generation
