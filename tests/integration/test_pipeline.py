"""The real pipeline: real vLLM (CPU build) with the bundled SmolLM2, on ZenML's local stack.

One engine serves the whole session (generation and judge use the same model and engine config,
and CLI runs go through `run_cli`, in this process). Every test reads its own runs' artifacts.
"""

import json
from pathlib import Path

import pytest

from llm_engineering.evaluation import columns as col
from llm_engineering.infrastructure.vllm_engine import VLLMEngine
from llm_engineering.infrastructure.zenml_runs import generations_of, step_output
from llm_engineering.run_config import EvaluationConfig
from steps.engine_pool import ENGINE_POOL
from tests.support.cli_output import reported_run
from tests.support.configs import stub_judged
from tests.support.openai_stub import OpenAIStub
from tests.support.small_run import FIRST_RUN_PUBLISHED, ROWS, SMALL, UNREAD_CHECKS_OFF, small_config, step_status

pytestmark = pytest.mark.slow


def test_pipeline_generates_aligned_answers_and_judges_every_row(first_run):
    assert str(first_run.status.value).lower() == "completed"
    test_split = step_output(first_run, "load_test_split", col.TEST_SPLIT)
    generations = step_output(first_run, "generate_answers", col.GENERATIONS)
    evaluations = step_output(first_run, "evaluate_answers", col.EVALUATIONS)

    assert len(test_split) == len(generations) == len(evaluations) == ROWS
    assert generations[col.ID] == test_split[col.ID] == evaluations[col.ID]
    assert generations[col.INSTRUCTION] == test_split[col.INSTRUCTION]
    for row in generations:
        assert row[col.ANSWER].strip(), f"empty answer for row {row[col.ID]}"
        assert row[col.FINISH_REASON] in {"stop", "length"}
        assert row[col.PROMPT_TOKENS] > 0 and 0 < row[col.COMPLETION_TOKENS] <= 48
    valid = [row for row in evaluations if row[col.JUDGE_ERROR] is None]
    # The in-process judge must work: constrained decoding makes its JSON valid, so a broken schema, grammar
    # or parser fails (nearly) every row, not one.
    assert len(valid) >= ROWS - 1, [row[col.JUDGE_ERROR] for row in evaluations]
    for row in evaluations:
        if row[col.JUDGE_ERROR] is None:
            assert row[col.score("accuracy")] in {1, 2, 3} and row[col.score("style")] in {1, 2, 3}
            assert row[col.analysis("accuracy")] is not None
            # Compact JSON: whitespace between JSON tokens is off in the engine (a judge could write it until
            # max_tokens); a JSON string holds no raw newline, so any newline would be such whitespace.
            assert "\n" not in row[col.JUDGE_RAW] and not row[col.JUDGE_RAW].startswith("{ "), row[col.JUDGE_RAW]
        else:
            assert row[col.score("accuracy")] is None and row[col.JUDGE_RAW] is not None

    summary = step_output(first_run, "summarize", col.EVALUATION_SUMMARY)
    (scores,) = summary.models
    assert (scores.rows, scores.scored) == (ROWS, len(valid))
    assert scores.tokens_per_second > 0
    (stats,) = generations_of(first_run)[1]
    assert stats.dtype in {"float32", "bfloat16"} and stats.dtype_reason  # what `dtype: auto` chose here, and why


def test_run_lists_the_four_named_artifacts(first_run):
    from zenml.client import Client

    outputs = {name: artifacts[0] for step in first_run.steps.values() for name, artifacts in step.outputs.items()}
    for name in (col.TEST_SPLIT, col.GENERATIONS, col.EVALUATIONS, col.EVALUATION_SUMMARY):
        # Tracked under its name: this run's version is found by name and version in the store.
        assert Client().get_artifact_version(name, version=outputs[name].version).id == outputs[name].id


def test_published_results_repo_loads_with_datasets(first_run):
    receipt = step_output(first_run, "publish_results", col.PUBLISH_RECEIPT)
    assert receipt.local_path.endswith("/local/SmolLM2-135M-Instruct-results") and receipt.hub_error is None
    published, _ = FIRST_RUN_PUBLISHED["generations"]
    generations = step_output(first_run, "generate_answers", col.GENERATIONS)
    assert published[col.ID] == generations[col.ID]
    assert published[col.ANSWER] == generations[col.ANSWER]


def test_changing_only_the_judge_does_not_rerun_generation(first_run, monkeypatch):
    from zenml.client import Client

    from llm_engineering.code_version import CACHE_FUNC
    from pipelines.evaluating import evaluating
    from steps.evaluating.generate_answers import FREE_ENGINE

    # Another judge: the OpenAI-compatible stand-in instead of the first run's in-process one (it judges in no time).
    # As for a judge of other weights, the generation step is told to stop its engine as it ends (the step's `extra`):
    # that must not re-run it. (Which judges do so: the unit tests of `frees_engine_after`.)
    with OpenAIStub() as judge:
        config = small_config(backend="openai", model="stub-judge", base_url=judge.base_url)
        monkeypatch.setattr("pipelines.evaluating.frees_engine_after", lambda config, index, cache_dir: True)
        run = Client().get_pipeline_run(evaluating(config=config).id)
        assert run.steps["generate_answers"].config.extra[FREE_ENGINE] is True
        assert first_run.steps["generate_answers"].config.extra[FREE_ENGINE] is False
        assert step_status(run, "generate_answers") == "cached"
        assert step_status(run, "evaluate_answers") == "completed"
        # Served from the cache only to the same version of the product: its code's digest is in every step's key.
        policy = run.steps["generate_answers"].config.cache_policy
        assert f"{policy.cache_func.module}.{policy.cache_func.attribute}" == CACHE_FUNC
        # Cached answers are published again, by this run (a replayed receipt may name another checkout's folder).
        assert step_status(run, "publish_results") == step_status(run, "publish_results_2") == "completed"
        cached = step_output(run, "generate_answers", col.GENERATIONS)
        assert cached[col.ANSWER] == step_output(first_run, "generate_answers", col.GENERATIONS)[col.ANSWER]

        # Another version of the product (another digest of its code) is served nothing from the cache: the steps run
        # again, the answers resumed from the checkpoint, not generated.
        monkeypatch.undo()
        monkeypatch.setattr("llm_engineering.code_version.code_digest", lambda: "another version of the code")
        rerun = Client().get_pipeline_run(evaluating(config=config).id)
    assert step_status(rerun, "generate_answers") == "completed"  # cached in the same version's run above
    stats = step_output(rerun, "generate_answers", col.GENERATION_STATS)
    assert (stats.generated, stats.resumed) == (0, len(cached))


def test_a_prompt_longer_than_max_model_len_is_skipped_and_the_rest_answered(first_run, tmp_path):
    from datasets import Dataset

    from llm_engineering.evaluation.generation import dataset as data
    from llm_engineering.evaluation.generation.answers import answer_test_split
    from llm_engineering.evaluation.generation.checkpoint import AnswerCheckpoint
    from llm_engineering.evaluation.models import resolve_model
    from llm_engineering.settings import get_settings

    config = small_config()
    model = resolve_model("smollm2-135m", get_settings().MODEL_CACHE_DIR)
    split = data.with_prompts(data.validate_split(Dataset.from_dict({
        col.ID: ["short", "huge", "short-too"],
        col.INSTRUCTION: ["What is RAG?", "Summarise: " + "token " * 3000, "What is LoRA?"],
        "answer": ["Retrieval-augmented generation.", "A summary.", "Low-rank adaptation."],
    })), config.prompt)
    checkpoint = AnswerCheckpoint(tmp_path, "smollm2-135m", model.path, sampling=config.sampling, engine=config.engine)
    generations, stats = answer_test_split(
        VLLMEngine(ENGINE_POOL.get(model.path, config.engine)), split, "smollm2-135m", sampling=config.sampling,
        prompt=config.prompt, max_model_len=config.engine.max_model_len, checkpoint=checkpoint)
    assert generations[col.ID] == ["short", "huge", "short-too"]
    assert generations[col.FINISH_REASON][1] == col.PROMPT_TOO_LONG and generations[col.ANSWER][1] == ""
    assert generations[col.PROMPT_TOKENS][1] >= config.engine.max_model_len
    assert all(generations[col.ANSWER][i].strip() for i in (0, 2))
    assert (stats.skipped, stats.generated) == (1, 2)
    assert len(checkpoint.load()) == 2  # the skipped row is decided again on every run, never stored


def test_several_models_get_one_generations_artifact_each_a_comparison_and_a_pairwise_judgement(first_run, tmp_path):
    from zenml.client import Client

    from llm_engineering.evaluation.models import resolve_model
    from llm_engineering.evaluation.report.text import trust_lines
    from llm_engineering.evaluation.trust.labels import load_labels
    from llm_engineering.evaluation.trust.ppi import MIN_LABELLED
    from llm_engineering.settings import get_settings
    from pipelines.evaluating import evaluating, rescoring

    # The same weights under two names (alias and folder), each with its own generation setting:
    # two models to the pipeline, one engine.
    folder = resolve_model("smollm2-135m", get_settings().MODEL_CACHE_DIR).path
    models = ["smollm2-135m@temperature=0.2", f"{folder}@temperature=1.2"]
    config = EvaluationConfig.model_validate({**SMALL, **UNREAD_CHECKS_OFF, "models": models, "dataset": {"limit": 2}})
    run = Client().get_pipeline_run(evaluating.with_options(enable_cache=False)(config=config).id)
    steps = [name for name in sorted(run.steps) if name.startswith("generate_answers")]
    generations = [run.steps[name].outputs[col.GENERATIONS][0].load() for name in steps]
    assert [g[0][col.MODEL_ID] for g in generations] == models
    assert [run.steps[name].config.parameters["sampling"]["temperature"] for name in steps] == [0.2, 1.2]
    assert all(g[col.ID] == generations[0][col.ID] for g in generations)
    summary = step_output(run, "summarize", col.EVALUATION_SUMMARY)
    assert {m.model_id for m in summary.models} == set(models)
    assert [(c.model_a, c.model_b) for c in summary.comparisons] == [(models[1], models[0])] * 2

    # Pairwise: the second model against the first, each of the 2 pairs judged in both orders.
    (pairwise,) = step_output(run, "compare_pairwise", col.PAIRWISE_COMPARISONS).comparisons
    assert (pairwise.model_a, pairwise.model_b, pairwise.pairs) == (models[1], models[0], 2)
    assert [row.id for row in pairwise.details] == generations[0][col.ID]
    judged = [row for row in pairwise.details if row.points is not None]
    assert judged, [row.problem for row in pairwise.details]  # the in-process judge compares real answers
    assert all(row.in_order and row.swapped for row in judged)  # each pair asked in both orders
    assert summary.pairwise == [pairwise]
    assert any(line.startswith(f"Pairwise {models[1]} vs {models[0]}") for line in trust_lines(summary))
    receipts = [run.steps[name].outputs[col.PUBLISH_RECEIPT][0].load() for name in sorted(run.steps)
                if name.startswith("publish_results")]
    cards = {r.local_path: (Path(r.local_path) / "README.md").read_text() for r in receipts if r.stage == "evaluations"}
    assert len(cards) == 2  # one results repo per generation setting
    assert all(f"pairwise {models[1]} vs {models[0]}" in card for card in cards.values())

    # Pairwise labels of both pairs, the first model's answer shown first (as the report writes them), preferring it:
    # a rescore corrects the second model's win rate by them; with two labelled pairs, too few, it says how many more.
    labels = tmp_path / "pairwise-labels.jsonl"
    labels.write_text("".join(json.dumps({"id": i, "answer_a": a, "answer_b": b, "preferred": "A"}) + "\n" for i, a, b
                              in zip(generations[0][col.ID], generations[0][col.ANSWER], generations[1][col.ANSWER])))
    rescored = Client().get_pipeline_run(rescoring(
        config=config.model_copy(update={"labels": load_labels(labels)}),
        answers_ids=[str(run.steps[name].outputs[col.GENERATIONS][0].id) for name in steps],
        generation_stats=[run.steps[name].outputs[col.GENERATION_STATS][0].load() for name in steps]).id)
    corrected = step_output(rescored, "compare_pairwise", col.PAIRWISE_COMPARISONS).comparisons[0].ppi
    assert (corrected.labelled, corrected.unlabelled) == (len(judged), 0)
    assert corrected.labels_only.mean == 0.0 and corrected.mean is None
    assert f"label {MIN_LABELLED - len(judged)} more" in corrected.problem
    summary = step_output(rescored, "summarize", col.EVALUATION_SUMMARY)
    assert summary.pairwise[0].ppi == corrected
    assert f"{models[1]} vs {models[0]} win rate: no corrected figure ({corrected.problem})" in "\n".join(
        trust_lines(summary))
    receipts = [rescored.steps[name].outputs[col.PUBLISH_RECEIPT][0].load() for name in sorted(rescored.steps)
                if name.startswith("publish_results")]
    assert all("win rate corrected by human labels (PPI++)**: none: " in (Path(r.local_path) / "README.md").read_text()
               for r in receipts)


def test_first_run_checks_its_judge_and_reports_how_far_to_trust_it(first_run):
    checks = step_output(first_run, "check_trust", col.TRUST_CHECKS)
    summary = step_output(first_run, "summarize", col.EVALUATION_SUMMARY)
    check = summary.judge_check
    assert check == checks.judge and check.pairs == ROWS  # min(20 rows asked, the run's 3)
    test_split = step_output(first_run, "load_test_split", col.TEST_SPLIT)
    assert sorted(p.id for p in check.details) == sorted(test_split[col.ID])
    assert all(p.mismatched_id in test_split[col.ID] and p.mismatched_id != p.id for p in check.details)
    # The real engine's logprobs reach the check: integer ties are broken by expected scores.
    assert check.failed.count == 0 and check.expected_problem is None
    assert all(1.0 <= p.reference_expected <= 3.0 and 1.0 <= p.mismatched_expected <= 3.0 for p in check.details)
    assert check.reference_higher_tie_broken is not None
    assert summary.similarity_check.rows == ROWS
    evaluations = step_output(first_run, "evaluate_answers", col.EVALUATIONS)
    similarities = [v for v in evaluations[col.REFERENCE_SIMILARITY] if v is not None]
    assert similarities and all(-1.0 <= v <= 1.0 for v in similarities)
    assert summary.models[0].similarity_mean == pytest.approx(sum(similarities) / len(similarities), abs=1e-3)
    metadata = first_run.steps["summarize"].run_metadata
    assert metadata["judge_check"]["no_signal"] == check.no_signal
    _, card = FIRST_RUN_PUBLISHED["evaluations"]
    assert check.verdict in card and "reference similarity" in card
    # The default judge is the model under evaluation: the summary and the card say so.
    assert any("Self-preference" in w for w in summary.warnings) and "Self-preference" in card


def test_cli_runs_a_local_jsonl_with_output_column_and_limit(run_cli, tmp_path):
    rows = [{"instruction": f"In one sentence, what is {t}?", "output": f"{t} is a technique."}
            for t in ["RAG", "LoRA", "QLoRA", "DPO", "vLLM", "PagedAttention"]]
    data = tmp_path / "rows.jsonl"
    data.write_text("\n".join(json.dumps(r) for r in rows))
    # The stand-in judges (the in-process judge through the CLI: test_labels_cli.py, test_lora_adapter.py).
    with OpenAIStub() as judge:
        config = stub_judged(tmp_path / "run.yaml", judge.base_url, rows=len(rows), max_tokens=24,
                             prompt={"template": "chat"})
        result = run_cli("--run-evaluation", "--config", config, "--dataset", data, "--limit", 4)
        run, report = reported_run(result)
    assert "smollm2-135m" in result.stdout and "Evaluation summary" in result.stdout
    assert (report["models"][0]["rows"], report["models"][0]["scored"]) == (4, 4), report["models"][0]
    # The chat template was rendered by the model's own tokenizer, not the Alpaca template.
    generations = step_output(run, "generate_answers", col.GENERATIONS)
    assert generations[col.ID] == ["0", "1", "2", "3"]  # ids given to rows without one, in file order
    assert generations[0][col.PROMPT].startswith("<|im_start|>")
    assert "In one sentence, what is RAG?" in generations[0][col.PROMPT]
