"""A LoRA adapter end to end: a tiny random PEFT adapter of the bundled SmolLM2, evaluated beside its base
in one CLI run, through vLLM's LoRA support (unmerged), on one engine."""

from pathlib import Path

import pytest
import yaml

from llm_engineering.evaluation import columns as col
from llm_engineering.infrastructure.zenml_runs import generations_of
from steps.engine_pool import ENGINE_POOL
from tests.support.cli_output import reported_run

ROWS = 2


def _tiny_adapter(base_path: str, folder: Path) -> Path:
    """A rank-8 LoRA on q_proj and v_proj with random weights (PEFT's default init would change nothing)."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    torch.manual_seed(0)
    model = get_peft_model(AutoModelForCausalLM.from_pretrained(base_path), LoraConfig(
        r=8, lora_alpha=32, target_modules=["q_proj", "v_proj"], init_lora_weights=False, task_type="CAUSAL_LM"))
    model.save_pretrained(folder)
    return folder


@pytest.mark.slow
@pytest.mark.own_engine  # an engine with LoRA
@pytest.mark.timeout(600)
def test_base_and_its_adapter_answer_differently_from_one_engine(run_cli, tmp_path):
    from llm_engineering.evaluation.models import resolve_model
    from llm_engineering.settings import get_settings

    settings = get_settings()
    adapter = _tiny_adapter(resolve_model("smollm2-135m", settings.MODEL_CACHE_DIR).path, tmp_path / "tiny-lora")
    models = ["smollm2-135m", f"smollm2-135m+{adapter}"]
    config = tmp_path / "run.yaml"
    config.write_text(yaml.safe_dump({"parameters": {
        # Greedy: the answers differ by the adapter alone, not by sampling.
        "sampling": {"temperature": 0.0, "max_tokens": 48},
        "judge": {"model": "smollm2-135m", "max_tokens": 200, "max_analysis_chars": 100},
        "judge_check": {"rows": 0}, "similarity": {"enabled": False}, "pairwise": {"enabled": False},
    }}))
    builds = len(ENGINE_POOL.builds)
    try:
        result = run_cli("evaluate", "--config", config, "--limit", ROWS, *(a for m in models for a in ("--model", m)))
        run, report = reported_run(result)
        # One engine for the run: the base, its adapter and the judge (the same base) all on it, LoRA on.
        assert len(ENGINE_POOL.builds) == builds + 1, ENGINE_POOL.builds
        assert ENGINE_POOL.key is not None and ENGINE_POOL.key[1].lora.enabled
    finally:
        # Later tests get the plain engine they would get without this test (LoRA slows the base's decode).
        ENGINE_POOL.release()

    assert sorted(m["model_id"] for m in report["models"]) == sorted(models)
    assert all(m["scored"] >= ROWS - 1 for m in report["models"]), report["models"]  # the judge ran on that engine
    artifacts, stats = generations_of(run)
    answers = {rows[0][col.MODEL_ID]: list(rows[col.ANSWER]) for rows in (artifact.load() for artifact in artifacts)}
    assert set(answers) == set(models) and all(len(a) == ROWS and all(a) for a in answers.values())
    assert answers[models[0]] != answers[models[1]], answers
    assert [s.generated for s in stats] == [ROWS, ROWS]

    # Results repos and checkpoints are the adapter's own.
    repos = sorted(p.name for p in (settings.local_hub_dir / "local").iterdir())
    assert {"SmolLM2-135M-Instruct-results", "SmolLM2-135M-Instruct-tiny-lora-results"} <= set(repos), repos
    assert [p for p in Path(settings.CHECKPOINT_DIR).iterdir() if p.name.startswith("smollm2-135m+tiny-lora-")]
