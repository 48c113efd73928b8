"""The CLI's commands and flags end to end, in this process (`run_cli`): the session's engine generates
(two generation settings of the bundled model), the OpenAI-compatible stub judges with scripted
failures, the Hub stub takes the pushes. Each step reads the runs the step itself made."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from llm_engineering.evaluation import columns as col
from llm_engineering.infrastructure.zenml_runs import step_output
from tests.support.cli_output import reported_run
from tests.support.hub_stub import TOKEN
from tests.support.openai_stub import OpenAIStub
from tests.support.workers import WORKER_STACK

ROWS = 2
WORKSPACE = "cli-commands"
MODELS = ["smollm2-135m", "smollm2-135m@temperature=0.9"]


def _status(run, prefix):
    return {str(step.status.value).lower() for name, step in run.steps.items() if name.startswith(prefix)}


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_evaluate_two_models_publish_after_a_failed_push_rescore_only_failed_from_hub_and_no_cache(
        run_cli, hub, tmp_path, monkeypatch):
    monkeypatch.setenv("HUGGINGFACE_ACCESS_TOKEN", TOKEN)
    with OpenAIStub() as judge:
        config = tmp_path / "run.yaml"
        config.write_text(yaml.safe_dump({"parameters": {
            "dataset": {"limit": ROWS}, "sampling": {"max_tokens": 16},
            "judge": {"backend": "openai", "model": "stub-judge", "base_url": judge.base_url, "cache": False,
                      "max_attempts": 1, "max_concurrency": 1},
            "judge_check": {"rows": 0}, "similarity": {"enabled": False}, "pairwise": {"enabled": False},
            # Repos of its own: other tests push the same model's results under the token owner's name.
            "publish": {"target": "hub", "workspace": WORKSPACE},
        }}))
        models = [arg for model in MODELS for arg in ("--model", model)]

        # 1. Two models (repeated --model), the Hub down, one verdict failing: the run is stored, the CLI
        # exits 1 naming the failed push.
        judge.state.script, judge.state.default = ["ok"] * (2 * ROWS - 1), "500"
        hub.state.fail_status = 500
        result = run_cli("evaluate", "--config", config, *models)
        evaluated, report = reported_run(result, exit_code=1)
        assert "HTTP 500" in result.stderr, result.output[-3000:]
        assert sorted(m["model_id"] for m in report["models"]) == sorted(MODELS)
        assert sorted(m["scored"] for m in report["models"]) == [ROWS - 1, ROWS]
        # pairwise.enabled and similarity.enabled false: no comparison step, no similarity anywhere.
        assert not [name for name in evaluated.steps if name.startswith("compare_pairwise")]
        assert report["similarity_check"] is None and all(m["similarity_mean"] is None for m in report["models"])
        evaluations = [step_output(evaluated, name, col.EVALUATIONS) for name in sorted(evaluated.steps)
                       if name.startswith("evaluate_answers")]
        assert evaluations and all(col.REFERENCE_SIMILARITY not in e.column_names for e in evaluations)

        # 2. `publish` once the Hub is back: that run's results pushed, nothing else run.
        hub.state.fail_status = None
        result = run_cli("publish", "--config", config)
        assert result.exit_code == 0, result.output[-3000:]
        assert f"Publishing {len(MODELS)} stored artifact(s) of run {evaluated.name}" in result.stdout
        repos = sorted(hub.state.repos)
        assert len(repos) == len(MODELS) and all(repo.startswith(f"{WORKSPACE}/SmolLM2-135M-Instruct") for repo in repos)
        assert not judge.state.requests[2 * ROWS:]  # publishing judged nothing

        # 3. `rescore --only-failed`: the one failed row asked again, merged into full evaluations.
        judge.state.requests, judge.state.default = [], "ok"
        result = run_cli("rescore", "--config", config, "--only-failed")
        rescored, report = reported_run(result)
        assert f"of run {evaluated.name}" in result.stdout and len(judge.state.requests) == 1
        assert [m["scored"] for m in report["models"]] == [ROWS, ROWS]
        assert not _status(rescored, "generate_answers")  # no generation in a rescore
        merged = [step_output(rescored, name, col.EVALUATIONS) for name in sorted(rescored.steps)
                  if name.startswith("evaluate_answers")]
        assert [m[col.ID] for m in merged] == [e[col.ID] for e in evaluations]  # every row, in its place
        assert all(m[col.JUDGE_ERROR] == [None] * ROWS for m in merged)

        # 4. `rescore --from-hub REPO`: the answers published in one repo, judged without any stored artifact.
        judge.state.requests = []
        result = run_cli("rescore", "--config", config, "--from-hub", repos[0])
        _, report = reported_run(result)
        assert f"Scoring answers published in {repos[0]}" in result.stdout and len(judge.state.requests) == ROWS
        assert [(m["rows"], m["scored"]) for m in report["models"]] == [(ROWS, ROWS)]

        # 5. The same evaluation again: generation cached, publishing to the Hub not (it pushes these
        # results, not a replay of the failed first push). With --no-cache: generated again, ignoring the
        # answers saved in the checkpoint. With labels of one model's answers: its accuracy gets a corrected
        # (PPI++) mean once enough rows are labelled, and here, with two, the summary says how many more.
        pushes = len(hub.state.commits)
        labelled = evaluations[0]
        labels = tmp_path / "labels.jsonl"
        labels.write_text("".join(json.dumps({"id": i, "answer": a, "criterion": "accuracy", "score": 1}) + "\n"
                                  for i, a in zip(labelled[col.ID], labelled[col.ANSWER])))
        result = run_cli("evaluate", "--config", config, *models, "--labels", labels)
        cached, report = reported_run(result)
        (ppi,) = [m["criteria"][0]["ppi"] for m in report["models"] if m["model_id"] == labelled[0][col.MODEL_ID]]
        assert (ppi["labelled"], ppi["unlabelled"], ppi["mean"], ppi["labels_only"]["mean"]) == (ROWS, 0, None, 1.0)
        assert ppi["problem"].startswith(f"{ROWS} labelled rows with a judge score: label ")
        assert f"no corrected figure ({ppi['problem']})" in result.stdout
        receipts = [step.outputs[col.PUBLISH_RECEIPT][0].load() for name, step in cached.steps.items()
                    if name.startswith("publish_results")]
        cards = [(Path(r.local_path) / "README.md").read_text() for r in receipts if r.stage == "evaluations"]
        # Each model's card says what its summary says: the labelled model's, and the other's where it gave an answer
        # the labels name (the same words as the first's); a card without labelled answers has no such line.
        said = [m["criteria"][0]["ppi"] for m in report["models"] if m["criteria"][0]["ppi"]]
        assert ppi in said and sorted(line for card in cards for line in card.splitlines()
                                      if "corrected by human labels" in line) == sorted(
            f"- **scores corrected by human labels (PPI++)**: accuracy none: {p['problem']} ({p['labelled']} labelled "
            f"rows, {p['unlabelled']} other judged rows)" for p in said)
        assert _status(cached, "generate_answers") == {"cached"} and _status(cached, "publish_results") == {"completed"}
        assert len(hub.state.commits) == pushes + 2 * len(MODELS)  # answers, then answers with verdicts
        fresh, _ = reported_run(run_cli("evaluate", "--config", config, *models, "--no-cache"))
        assert _status(fresh, "generate_answers") == {"completed"}
        stats = [step.outputs[col.GENERATION_STATS][0].load() for name, step in fresh.steps.items()
                 if name.startswith("generate_answers")]
        assert [(s.resumed, s.generated) for s in stats] == [(0, ROWS)] * len(MODELS)


@pytest.fixture(scope="module")
def empty_store(tmp_path_factory):
    """A new ZenML store (its own ZENML_CONFIG_PATH), made by the first command that uses it: both commands below
    find it empty (neither runs a pipeline)."""
    return tmp_path_factory.mktemp("empty-store")


@pytest.mark.slow  # two CLI processes and a new ZenML store
@pytest.mark.parametrize("command, flags", [("rescore", ["--only-failed"]), ("publish", [])])
def test_with_nothing_stored_yet_rescore_and_publish_say_to_evaluate_first(repo_root, empty_store, command, flags):
    """The CLI used from outside the repository (so the repository's `.zen`, which names the session store's stack,
    is not read): nothing to rescore or publish, said before the checks of this machine's state (here a KV cache
    beside the default judge that no machine has, which would stop the rescore too)."""
    from tools.execution import ensure_zenml_repository

    ensure_zenml_repository()  # exists already, so the CLI below does not write the new store's ids into it
    env = {name: value for name, value in os.environ.items() if name not in WORKER_STACK}  # the session store's ids
    env["ZENML_CONFIG_PATH"] = str(empty_store / "zenml")
    config = empty_store / f"{command}.yaml"
    config.write_text("parameters:\n  engine: {cpu_kvcache_space_gib: 100000}\n")
    result = subprocess.run([sys.executable, str(repo_root / "tools" / "run.py"), command, *flags, "--config", config],
                            cwd=empty_store, env=env, capture_output=True, text=True, timeout=240)
    assert result.returncode == 1, result.stderr[-2000:]
    assert "run `python tools/run.py --run-evaluation` first" in result.stderr
    assert "cpu_kvcache_space_gib" not in result.stderr
