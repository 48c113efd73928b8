"""Several answers per prompt through the CLI (`run_cli`): the session's engine generates two answers to each of
three prompts, the OpenAI-compatible stub judges all six, the similarity check reads each prompt's first answer;
`rescore` keeps the samples; `--samples 3` later generates only the third answers. Each step reads its own run."""

import pytest
import yaml

from llm_engineering.evaluation import columns as col
from llm_engineering.infrastructure.zenml_runs import step_output
from tests.support.cli_output import reported_run
from tests.support.openai_stub import OpenAIStub

PROMPTS = 3



@pytest.mark.slow
@pytest.mark.timeout(600)
def test_samples_are_generated_judged_summarized_rescored_and_raised(run_cli, tmp_path, monkeypatch):
    monkeypatch.setenv("CHECKPOINT_DIR", str(tmp_path / "checkpoints"))
    with OpenAIStub() as judge:
        config = tmp_path / "run.yaml"
        config.write_text(yaml.safe_dump({"parameters": {
            "dataset": {"limit": PROMPTS}, "sampling": {"max_tokens": 24},
            "judge": {"backend": "openai", "model": "stub-judge", "base_url": judge.base_url, "cache": False},
            "judge_check": {"rows": 0}, "pairwise": {"enabled": False},
        }}))

        # 1. Two answers per prompt: six rows, a prompt's answers side by side, each judged.
        result = run_cli("evaluate", "--config", config, "--samples", "2", "--no-cache")
        run, report = reported_run(result)
        assert "Samples of smollm2-135m on accuracy (2 answers per prompt)" in result.stdout
        answers = step_output(run, "generate_answers", col.GENERATIONS)
        assert answers[col.SAMPLE] == [0, 1] * PROMPTS and answers[col.ID][0] == answers[col.ID][1]
        assert any(a != b for a, b in zip(answers[col.ANSWER][::2], answers[col.ANSWER][1::2]))  # seed + s differ
        assert len(step_output(run, "evaluate_answers", col.EVALUATIONS)) == 2 * PROMPTS == len(judge.state.requests)
        (model,) = report["models"]
        assert (model["rows"], model["samples"], model["scored"]) == (2 * PROMPTS, 2, 2 * PROMPTS)
        accuracy = model["criteria"][0]
        assert accuracy["reducers"]["pass@2"]["value"] == 1.0 and accuracy["rows_ci"] is not None
        assert report["similarity_check"]["rows"] == PROMPTS  # the check pairs prompts: their first answers

        # 2. Rescoring the stored answers keeps them per sample.
        result = run_cli("rescore", "--config", config)
        assert f"Re-scoring 1 stored artifact(s) of run {run.name}" in result.stdout, result.output[-3000:]
        rescored, report = reported_run(result)
        assert step_output(rescored, "evaluate_answers", col.EVALUATIONS)[col.SAMPLE] == [0, 1] * PROMPTS
        assert report["models"][0]["samples"] == 2

        # 3. A third answer per prompt: the first two are taken from the checkpoint, only the third generated.
        raised, report = reported_run(run_cli("evaluate", "--config", config, "--samples", "3"))
        stats = step_output(raised, "generate_answers", col.GENERATION_STATS)
        assert (stats.resumed, stats.generated, stats.samples) == (2 * PROMPTS, PROMPTS, 3)
        more = step_output(raised, "generate_answers", col.GENERATIONS)
        assert [a for a, s in zip(more[col.ANSWER], more[col.SAMPLE]) if s < 2] == answers[col.ANSWER]
