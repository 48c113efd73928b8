"""Scoring again without inference, and publishing later what a failed push did not publish: through the real
pipeline, on the session's first small run. (Only the failed rows, and scoring from a Hub repo: the CLI's
`test_cli_commands.py`, steps 3 and 4.)"""

from pathlib import Path

import pytest
from datasets import load_dataset

from llm_engineering.evaluation import columns as col
from llm_engineering.infrastructure.zenml_runs import generations_of, step_output
from llm_engineering.run_config import EvaluationConfig
from tests.support.openai_stub import OpenAIStub
from tests.support.small_run import SMALL, small_config

pytestmark = pytest.mark.slow


def test_rescore_reuses_generations_without_inference(first_run):
    from zenml.client import Client

    from pipelines.evaluating import rescoring

    generations, stats = generations_of(first_run)
    # The stand-in judges, cache off: the rows are judged again, not read back. (The in-process judge's two calls per
    # answer under the default rubric, its verdict and the probe before the analysis: test_labels_cli.py.)
    with OpenAIStub() as judge:
        run = rescoring.with_options(enable_cache=False)(
            config=small_config(cache=False, backend="openai", model="stub-judge", base_url=judge.base_url),
            answers_ids=[str(a.id) for a in generations], generation_stats=stats)
        asked = len(judge.state.requests)
    run = Client().get_pipeline_run(run.id)
    assert not [name for name in run.steps if name.startswith(("generate_answers", "load_test_split"))]
    stored = generations[0].load()
    rescored = step_output(run, "evaluate_answers", col.EVALUATIONS)
    assert rescored[col.ID] == stored[col.ID]
    assert rescored[col.ANSWER] == stored[col.ANSWER]
    assert rescored[col.JUDGE_CACHED] == [False] * len(stored) and asked == len(stored)
    (scores,) = step_output(run, "summarize", col.EVALUATION_SUMMARY).models
    assert scores.rows == scores.scored == len(stored)
    usage = scores.judge_usage
    assert (usage.answers, usage.calls) == (len(stored), len(stored)) and usage.seconds_per_verdict > 0


def test_failed_hub_push_loses_nothing_and_publish_only_pushes_later(first_run, hub, monkeypatch):
    from zenml.client import Client

    from llm_engineering.evaluation.report.results_card import score_facts, scores_of, trust_facts
    from llm_engineering.infrastructure.zenml_runs import results_to_publish
    from llm_engineering.settings import get_settings
    from pipelines.evaluating import publishing
    from tests.support.hub_stub import TOKEN, USER

    monkeypatch.setenv("HUGGINGFACE_ACCESS_TOKEN", TOKEN)
    get_settings.cache_clear()
    try:
        config = EvaluationConfig.model_validate({**SMALL, "publish": {"target": "hub"}})
        stored_ids = results_to_publish(first_run)  # what `publish` sends to the pipeline for this run
        (results_id,) = stored_ids["results_ids"]
        stored = Client().get_artifact_version(results_id).load()
        hub.state.fail_status = 500
        run = Client().get_pipeline_run(publishing.with_options(enable_cache=False)(config=config, **stored_ids).id)
        receipt = step_output(run, "publish_results", col.PUBLISH_RECEIPT)
        assert "HTTP 500" in receipt.hub_error and receipt.hub_url is None
        assert load_dataset(receipt.local_path, split="test")[col.ID] == stored[col.ID]  # kept locally

        hub.state.fail_status = None  # the Hub is back: publish again, re-running nothing else
        run = Client().get_pipeline_run(publishing.with_options(enable_cache=False)(config=config, **stored_ids).id)
        receipt = step_output(run, "publish_results", col.PUBLISH_RECEIPT)
        repo = f"{USER}/SmolLM2-135M-Instruct-results"
        assert receipt.hub_error is None and receipt.repo == repo
        pushed = load_dataset(repo, split="test", token=TOKEN)
        assert pushed[col.ID] == stored[col.ID] and pushed[col.score("accuracy")] == stored[col.score("accuracy")]
        # The republished card keeps the source run's trust facts (every run here checks the similarity metric) and
        # its summary's scores.
        checks = Client().get_artifact_version(stored_ids["checks_id"]).load()
        summary = Client().get_artifact_version(stored_ids["summary_id"]).load()
        facts = trust_facts(stored[0][col.MODEL_ID], checks)
        facts |= score_facts(scores_of(summary, stored[0][col.MODEL_ID]), stored[0][col.JUDGE_MODEL])
        card = (Path(receipt.local_path) / "README.md").read_text()
        assert facts["scores"] and all(f"- **{key}**: {value}" in card for key, value in facts.items() if value is not None)
    finally:
        get_settings.cache_clear()
