import json
from pathlib import Path

import pytest
from datasets import Dataset

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.generation import GenerationStats
from llm_engineering.evaluation.summary import model_scores, render_html, summarize, table_rows

CASES = json.loads((Path(__file__).parent / "cases" / "aggregation.json").read_text())


def evaluations(model_id, rows, finish="stop"):
    return Dataset.from_dict(
        {
            col.ID: [str(i) for i in range(len(rows))],
            col.MODEL_ID: [model_id] * len(rows),
            col.ACCURACY_SCORE: [r[0] for r in rows],
            col.STYLE_SCORE: [r[1] for r in rows],
            col.JUDGE_ERROR: [r[2] for r in rows],
            col.JUDGE_MODEL: ["judge"] * len(rows),
            col.COMPLETION_TOKENS: [10] * len(rows),
            col.FINISH_REASON: [finish] * len(rows),
        }
    )


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_model_scores_cases(case):
    scores = model_scores(evaluations("m", case["rows"]))
    assert scores.rows == len(case["rows"])
    assert (scores.scored, scores.failed) == (case["scored"], case["failed"])
    assert scores.accuracy_mean == case["accuracy_mean"]
    assert scores.style_mean == case["style_mean"]
    assert scores.accuracy_counts == case["accuracy_counts"]
    assert scores.failure_rate == pytest.approx(case["failed"] / len(case["rows"]))


def test_summary_ranks_models_and_attaches_throughput():
    weak = evaluations("weak", [[1, 3, None], [1, 3, None]])
    strong = evaluations("strong", [[3, 1, None], [2, 1, None]], finish="length")
    stats = [GenerationStats(model_id="strong", rows=2, skipped=0, prompt_tokens=5, completion_tokens=20,
                             seconds=2.0, tokens_per_second=10.0, prompts_per_second=1.0)]
    summary = summarize([weak, strong], stats)
    assert summary.ranking == ["strong", "weak"]
    by_id = {s.model_id: s for s in summary.models}
    assert by_id["strong"].tokens_per_second == 10.0 and by_id["weak"].tokens_per_second is None
    assert by_id["strong"].truncated == 2
    assert [row[0] for row in table_rows(summary)] == ["strong", "weak"]
    page = render_html(summary)
    assert "strong" in page and "weak" in page and "<table>" in page


def test_model_scores_rejects_mixed_models():
    mixed = Dataset.from_dict({**evaluations("a", [[1, 1, None]]).to_dict(), col.MODEL_ID: ["b"]})
    both = Dataset.from_list(evaluations("a", [[1, 1, None]]).to_list() + mixed.to_list())
    with pytest.raises(ValueError, match="exactly one model"):
        model_scores(both)
