"""A run stored by an earlier version of the project is rescored, and compared with, by this one.

The earlier version is commit c4c53ab (before the stored types had a package of their own: its artifacts name their
types by the logic modules of that time, `llm_engineering.evaluation.report.summary.EvaluationSummary` and so on). Its
tree, taken from the repository's history, runs the CLI in a subprocess against the session's store: real vLLM with
the bundled model generates, the OpenAI-compatible stub judges. Then this version's `rescore --compare-to` reads that
run's answers and summary (`llm_engineering/stored_types.py` resolves the old type paths).
"""

import io
import os
import subprocess
import sys
import tarfile

import pytest

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.config import DatasetConfig
from llm_engineering.evaluation.generation.dataset import read_test_split
from llm_engineering.evaluation.stored.generation import GenerationStats
from llm_engineering.evaluation.stored.summary import EvaluationSummary
from tests.support.cli_output import json_report, reported_run
from tests.support.configs import stub_judged
from tests.support.openai_stub import VERDICT, OpenAIStub

pytestmark = pytest.mark.slow

EARLIER = "c4c53ab"
ROWS = 2


@pytest.fixture(scope="module")
def earlier_tree(repo_root, tmp_path_factory):
    """The project's files at EARLIER, from git history (a shallow clone lacks it: `git fetch --unshallow`)."""
    if subprocess.run(["git", "cat-file", "-e", f"{EARLIER}^{{commit}}"], cwd=repo_root, capture_output=True).returncode:
        pytest.skip(f"commit {EARLIER} is not in this clone's history (a shallow clone): `git fetch --unshallow`")
    tree = tmp_path_factory.mktemp(f"project-at-{EARLIER}")
    archive = subprocess.run(["git", "archive", EARLIER], cwd=repo_root, capture_output=True, check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as files:
        files.extractall(tree, filter="data")
    return tree


@pytest.mark.timeout(600)
def test_a_run_stored_by_an_earlier_version_is_rescored_and_compared_with(earlier_tree, run_cli, tmp_path):
    from zenml.client import Client

    low_row = list(read_test_split(DatasetConfig(limit=ROWS)))[0]
    with OpenAIStub() as judge:
        # 1. The earlier version evaluates, in its own tree and process, into this session's store.
        env = {**os.environ, "PYTHONPATH": str(earlier_tree)}
        config = stub_judged(tmp_path / "earlier.yaml", judge.base_url, rows=ROWS, max_tokens=8)
        earlier = subprocess.run([sys.executable, "tools/run.py", "evaluate", "--config", str(config)],
                                 cwd=earlier_tree, env=env, capture_output=True, text=True, timeout=540)
        assert earlier.returncode == 0, earlier.stdout[-2000:] + earlier.stderr[-3000:]
        earlier_run = Client().get_pipeline_run(json_report(earlier.stdout)["run"])
        stored = {name: step.outputs for name, step in earlier_run.steps.items()}
        summary_artifact = stored["summarize"][col.EVALUATION_SUMMARY][0]
        stats_artifact = stored["generate_answers"][col.GENERATION_STATS][0]
        # Its artifacts name the types where that version kept them...
        assert summary_artifact.data_type.import_path == "llm_engineering.evaluation.report.summary.EvaluationSummary"
        assert stats_artifact.data_type.import_path == "llm_engineering.evaluation.generation.answers.GenerationStats"
        # ...and load as this version's stored types.
        assert isinstance(summary_artifact.load(), EvaluationSummary)
        assert isinstance(stats_artifact.load(), GenerationStats)

        # 2. This version rescores those answers (the latest stored) under another judge name, one row judged lower,
        # against the earlier run: its scores are read, the rows paired, the one changed row found.
        low = {"accuracy": {"analysis": "Wrong.", "score": 1}, "style": VERDICT["style"]}
        judge.state.verdict_when = [(low_row["instruction"], low)]
        config = stub_judged(tmp_path / "now.yaml", judge.base_url, rows=ROWS, max_tokens=8,
                             judge_model="stub-judge-strict")
        result = run_cli("rescore", "--config", config, "--compare-to", earlier_run.name)
    rescored, report = reported_run(result)
    assert f"of run {earlier_run.name}" in result.stdout
    assert [(m["rows"], m["scored"]) for m in report["models"]] == [(ROWS, ROWS)]
    comparison = report["comparison"]
    assert comparison["previous_run"] == earlier_run.name
    accuracy = next(m for m in comparison["metrics"] if m["metric"] == "accuracy")
    assert (accuracy["paired_rows"], accuracy["previous_mean"], accuracy["difference"]) == (ROWS, 3.0, -1.0)
    assert [row["id"] for row in comparison["changed_rows"]] == [low_row["id"]]
    assert not [name for name in rescored.steps if name.startswith("generate_answers")]  # no inference
